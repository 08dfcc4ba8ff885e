"""The request arguments the app sends and the vLLM plugin reads (no server needed)."""

import pytest

from auk_app.audex import xargs
from auk_app.audex.remote import EngineError, RemoteSampler, completion_bodies
from auk_app.urls import server_host
from tests.audex.runs import sampling


def test_pair_members_and_other_requests():
    assert xargs.pair_role(None) is None and xargs.pair_role({"audex_codec_cap": 8}) is None
    assert xargs.pair_role({"cfg_pair_id": "p1", "cfg_role": "uncond", "cfg_scale": 3}) == ("p1", "uncond", 3.0)
    assert xargs.pair_role({"cfg_pair_id": "p1", "cfg_role": "cond"}) == ("p1", "cond", 1.0)


@pytest.mark.parametrize("extra, field, words", [
    ({"cfg_role": "cond"}, "cfg_pair_id", "cfg_pair_id is missing: a request that gives cfg_role is a member"),
    ({"cfg_pair_id": "", "cfg_role": "cond"}, "cfg_pair_id", "cfg_pair_id must be a non-empty string"),
    ({"cfg_pair_id": "p", "cfg_role": "both"}, "cfg_role", "cfg_role must be 'cond' or 'uncond'; got 'both'."),
    ({"cfg_role": "both"}, "cfg_role", "cfg_role must be 'cond' or 'uncond'; got 'both'."),  # not "cfg_pair_id"
    ({"cfg_pair_id": 7, "cfg_role": "x"}, "cfg_role", "cfg_role must be 'cond' or 'uncond'; got 'x'."),
    ({"cfg_pair_id": "p"}, "cfg_role", "cfg_role is missing: a request that gives cfg_pair_id is a"),
    ({"cfg_pair_id": "p", "cfg_role": "cond", "cfg_scale": 0.5}, "cfg_scale", "cfg_scale must be a number from 1"),
    ({"cfg_pair_id": "p", "cfg_role": "cond", "cfg_scale": True}, "cfg_scale", "cfg_scale must be a number from 1"),
])
def test_malformed_pair_arguments_are_one_sentence_naming_the_argument(extra, field, words):
    with pytest.raises(xargs.ArgumentError, match=words) as refused:
        xargs.pair_role(extra)
    assert refused.value.field == field


@pytest.mark.parametrize("extra", [{"cfg_scale": 3.0}, {"cfg_scale": 3.0, "cfg_role": "cond"},
                                   {"cfg_scale": 3.0, "cfg_pair_id": "p"}], ids=["scale", "no-pair-id", "no-role"])
def test_a_guidance_scale_outside_a_pair_is_refused_not_run_unguided(extra):
    missing = "cfg_pair_id" if "cfg_pair_id" not in extra else "cfg_role"
    words = f"^{missing} is missing: a request that gives .*cfg_scale is a member"
    with pytest.raises(xargs.ArgumentError, match=words) as refused:
        xargs.pair_role(extra)
    assert refused.value.field == missing


def test_a_pair_member_must_be_seeded():
    xargs.check_pair_seed(0)
    with pytest.raises(xargs.ArgumentError, match="A CFG pair member needs a seed, the same in both") as refused:
        xargs.check_pair_seed(None)
    assert refused.value.field == "seed"


@pytest.mark.parametrize("cap", [0, 6, -4, 8.0, "8", True])
def test_the_codec_cap_is_a_positive_multiple_of_four(cap):
    with pytest.raises(xargs.ArgumentError, match="audex_codec_cap must be a positive multiple of 4") as refused:
        xargs.codec_cap({"audex_codec_cap": cap})
    assert refused.value.field == "audex_codec_cap"
    assert xargs.codec_cap({"audex_codec_cap": 4000}) == 4000 and xargs.codec_cap({}) is None


def test_server_urls_show_host_and_port_only():
    assert server_host("https://user:secret@gpu-host:8000/v1?key=x") == "gpu-host:8000"
    assert server_host("gpu-host") == "gpu-host"
    with pytest.raises(EngineError, match="is not an http\\(s\\) URL"):
        RemoteSampler("ftp://gpu-host:8000")
    assert RemoteSampler("127.0.0.1:8000/").url == "http://127.0.0.1:8000"  # httpx needs the scheme
    with pytest.raises(EngineError) as refused:
        RemoteSampler("ftp://user:secret@gpu-host:8000/v1?key=x")
    assert "(gpu-host:8000)" in str(refused.value) and "secret" not in str(refused.value)


def test_the_http_bodies_are_the_runs_sampling():
    """A guided, masked run: the CFG pair, both phase-masked, tied by one id and seeded alike."""
    run = sampling(cfg_scale=2.5, codec_cap=40, temperature=0.9, top_k=7, top_p=0.8, seed=5)
    cond, uncond = completion_bodies(run, model_id="audex", cond_ids=[1, 2], null_ids=[3, 4], end_tid=9, pair_id="p")
    assert cond == {
        "model": "audex", "prompt": [1, 2], "max_tokens": 41, "stream": True, "stream_interval": 16,
        "temperature": 0.9, "top_k": 7, "top_p": 0.8, "seed": 5, "stop_token_ids": [9], "ignore_eos": True,
        "return_token_ids": True, "skip_special_tokens": False,
        "vllm_xargs": {"audex_codec_cap": 40, "cfg_pair_id": "p", "cfg_role": "cond", "cfg_scale": 2.5},
    }
    assert uncond == {**cond, "prompt": [3, 4],
                      "vllm_xargs": {"audex_codec_cap": 40, "cfg_pair_id": "p", "cfg_role": "uncond", "cfg_scale": 2.5}}
    alone, = completion_bodies(sampling(cfg_scale=1.0, codec_cap=40, use_mask=False), model_id="audex",
                               cond_ids=[1, 2], null_ids=None, end_tid=9, pair_id="p")
    assert alone["vllm_xargs"] == {} and alone["max_tokens"] == 40 and alone["seed"] == 0
