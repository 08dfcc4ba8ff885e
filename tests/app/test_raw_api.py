"""The raw API (``POST /gradio_api/call/<name>``, as curl or any language sends it): every parameter of
every endpoint given a value of the wrong type is refused before the queue, in one sentence naming
the parameter, with no server path and no exception's text; a call counts once; a call nobody reads
does not run."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest

from auk_app.knobs import AUDEX, EDIT, SUGGEST

# What each kind of parameter must refuse: JSON values of every other type (5 and 2**70 are numbers,
# 1e400 is no JSON, so float("nan") stands for the float a client's NaN becomes).
NOT_TEXT = [5, 2**70, float("nan"), [1, 2], {"a": "b"}, True]
NOT_NUMBER = ["abc", [1, 2], {"a": "b"}, True, 2**70]
NOT_FLAG = [5, "abc", "false", [1, 2], {"a": "b"}, None]
NOT_FILE = [5, "abc", [1, 2], {"a": "b"}, True]
NOT_MODEL = [5, [1, 2], {"a": "b"}, True, None]
NOT_TIMES = [5, {"a": "b"}, True, [1, "x"]]
WRONG = {"audio": NOT_FILE, "model": NOT_MODEL, "t_grid": NOT_TIMES, "cfg_interval": NOT_TIMES,
         "instruction": NOT_TEXT, "caption": NOT_TEXT}
# Words no refusal may carry: a path of the server's, an exception's own wording.
LEAKS = re.compile(r"/(?:tmp|usr|root|home|work|opt)/|site-packages|Traceback|validation error for|"
                   r"object has no attribute|object is not|[A-Z]\w+Error\b")
ENDPOINTS = {"edit_audio": EDIT, "text_to_audio": AUDEX, "suggest_instruction": SUGGEST}


def _wrong_values(knob):
    if knob.name in WRONG:
        return WRONG[knob.name]
    if knob.widget == "checkbox":
        return NOT_FLAG
    return NOT_NUMBER


CASES = [pytest.param(name, knob.name, value, id=f"{name}-{knob.name}-{value!r}")
         for name, knobs in ENDPOINTS.items() for knob in knobs for value in _wrong_values(knob)]
CASES += [pytest.param("inspect_audio", "audio", value, id=f"inspect_audio-audio-{value!r}") for value in NOT_FILE]


def _defaults(name: str) -> dict:
    knobs = ENDPOINTS.get(name)
    if knobs is None:
        return {"audio": None}
    values = knobs.defaults()
    values.update(instruction="Make it 6 dB quieter.", caption="A 440 Hz beep lasting 0.2 seconds", seconds=1)
    return {k: v for k, v in values.items() if k in knobs.names}


def _post(url: str, name: str, values: dict) -> httpx.Response:
    """A raw call: the values in the endpoint's order (a NaN as JavaScript and Python's json write it)."""
    return httpx.post(f"{url.rstrip('/')}/gradio_api/call/{name}", content=json.dumps({"data": list(values.values())}),
                      headers={"content-type": "application/json"}, timeout=60)


@pytest.mark.parametrize(("endpoint", "parameter", "value"), CASES)
def test_a_wrong_type_is_refused_in_one_sentence_naming_its_parameter(app, endpoint, parameter, value):
    values = _defaults(endpoint)
    values[parameter] = value
    reply = _post(app.url, endpoint, values)
    assert reply.status_code == 422, (reply.status_code, reply.text[:300])
    refused = [entry for entry in reply.json()["detail"] if entry.get("is_valid") is False]
    assert [entry["parameter_name"] for entry in refused] == [parameter]
    message = refused[0]["message"]
    said = parameter.replace("_", " ") if parameter in ("instruction", "caption") else parameter
    assert said in message, message
    assert not LEAKS.search(message), message
    assert message.count(". ") <= 2 and len(message) < 400, message  # a sentence and its fix, not a dump


def test_gradio_client_hears_the_same_sentence(client):
    from gradio_client.exceptions import ValidationError

    with pytest.raises(ValidationError, match=r"instruction: The instruction must be text; got \[1, 2\]"):
        client.predict(instruction=[1, 2], seconds=1, api_name="/edit_audio")


def test_a_region_edge_past_any_recording_is_refused_before_the_queue(app):
    """2**70 seconds passed before and broke the manifest after the run, leaving its files behind."""
    values = {**_defaults("edit_audio"), "region_start": 2**70}
    reply = _post(app.url, "edit_audio", values)
    assert reply.status_code == 422 and "region_start is seconds from 0 to 600" in reply.text


def _result_dirs(app) -> set:
    from gradio.utils import get_upload_folder

    return set((Path(get_upload_folder()) / "auk_studio").glob("req_*"))


@pytest.mark.alone
def test_calls_nobody_reads_count_once_and_do_not_run(app):
    """Eighteen raw calls whose result streams are never opened: sixteen are queued (each counts once,
    where they counted twice and only eight got in), the rest refused at once with the cap's sentence,
    and none of the queued runs for nobody: each is dropped when its turn comes, and writes nothing."""
    from auk_app.ui.app import QUEUE_MAX_SIZE
    from auk_app.ui.gradio_queue import events

    before = _result_dirs(app)
    replies = [_post(app.url, "edit_audio", _defaults("edit_audio")) for _ in range(QUEUE_MAX_SIZE + 2)]
    codes = [r.status_code for r in replies]
    assert codes == [200] * QUEUE_MAX_SIZE + [422] * 2, codes
    assert "The server is busy: 16 runs are waiting" in replies[-1].text
    deadline = time.monotonic() + 120
    while any(e.api_name == "edit_audio" for group in events(app.demo) for e in group):
        assert time.monotonic() < deadline, "the unread calls still hold the queue"
        time.sleep(0.5)
    assert _result_dirs(app) == before


def test_a_call_whose_result_is_read_runs(app):
    values = {**_defaults("edit_audio"), "nfe": 2, "seed": 1, "randomize_seed": False}
    event = _post(app.url, "edit_audio", values).json()["event_id"]
    stream = httpx.get(f"{app.url.rstrip('/')}/gradio_api/call/edit_audio/{event}", timeout=300).text
    assert "event: complete" in stream, stream[-500:]


def test_candidates_of_a_whole_recording_are_refused_by_the_validator(client, tmp_path):
    """A 40 s recording runs whole, once: eight candidates are refused before the call is queued (they
    waited in the queue, holding eight places, and were refused when their turn came)."""
    import soundfile as sf
    from gradio_client import handle_file
    from gradio_client.exceptions import ValidationError

    from training.long_recordings import slow_tones

    path = tmp_path / "long.wav"
    sf.write(path, slow_tones(40, seed=1), 24_000)
    with pytest.raises(ValidationError, match=r"candidates: A whole recording longer than the model's 6 s window is "
                                              r"edited once; ask for one candidate"):
        client.predict(audio=handle_file(str(path)), instruction="Make it 6 dB quieter.", candidates=8,
                       api_name="/edit_audio")
