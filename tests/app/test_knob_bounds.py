"""Every number a request takes is bounded to what the model can use, so a value that passes the
checks cannot fail the run later (a tensor that cannot hold it, a manifest JSON cannot write)."""

from __future__ import annotations

import json

import pytest

from auk_app.audex.params import MAX_TOP_K
from auk_app.audex.tta import AUDEX_AUDIOCODEC_VOCAB_SIZE
from auk_app.auk.request import EditRequest
from auk_app.config import Limits
from auk_app.errors import InputError
from auk_app.knobs import audex_request

EXTREMES = [1e308, -1e308, 2**64, 10**400, -(10**400), float("inf"), float("nan"), True, "3"]
AUK_RANGES = {  # field: the range its sentence names
    "seconds": "30", "nfe": "from 1 to 64", "cfg": "between 0 and 10", "sway": "between -1 and 1",
    "seed": "from 0 to 2^63-1",
}
AUDEX_RANGES = {
    "cfg": "between 1.0 and 10.0", "max_seconds": "at most 20", "temperature": "between 0.0001 and 10",
    "top_k": "from 1 to 8192", "seed": "from 0 to 2^63-1",
}


def _refusal(build, *args, **values) -> str:
    with pytest.raises(InputError) as refused:
        build(*args, **values)
    return str(refused.value)


@pytest.mark.parametrize("name", AUK_RANGES)
@pytest.mark.parametrize("value", EXTREMES, ids=repr)
def test_auk_refuses_every_extreme_with_the_fields_range(name, value):
    message = _refusal(EditRequest, instruction="Say hi.", **{"seconds": 1.0, name: value})
    assert AUK_RANGES[name] in message and len(message) < 400


@pytest.mark.parametrize("name", AUDEX_RANGES)
@pytest.mark.parametrize("value", EXTREMES, ids=repr)
def test_audex_refuses_every_extreme_with_the_fields_range(name, value):
    message = _refusal(audex_request, {"caption": "rain", "randomize_seed": False, name: value}, Limits())
    assert AUDEX_RANGES[name] in message and len(message) < 400
    assert message.startswith(f"{name} must be ")  # the parameter the caller sent, as the API names it


@pytest.mark.parametrize("value", EXTREMES, ids=repr)
def test_a_region_of_extreme_seconds_is_refused_with_a_sentence(value):
    message = _refusal(EditRequest, instruction="Say hi.", audio="clip.wav", region_start=0, region_end=value)
    assert "region" in message


def test_the_largest_accepted_values_make_a_json_manifest():
    edit = EditRequest(instruction="Say hi.", seconds=30, nfe=64, cfg=10, sway=1, seed=2**63 - 1)
    audex = audex_request({"caption": "rain", "cfg": 10, "max_seconds": 20, "temperature": 10, "top_k": MAX_TOP_K,
                           "seed": 2**63 - 1, "randomize_seed": False}, Limits())
    json.dumps({"edit": [edit.seconds, edit.nfe, edit.cfg, edit.sway, edit.seed], "audex": audex.sampling.knobs()},
               allow_nan=False)
    assert MAX_TOP_K == AUDEX_AUDIOCODEC_VOCAB_SIZE
