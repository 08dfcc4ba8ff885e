"""Audex through the app with sampling on a real vLLM server (CPU) running the plugin.

Greedy runs must give the in-process sampler's exact streams (with and without CFG, one user or
eight at once): that holds only if the blend, the mask and the step-locked pair all work. Sampled
runs must stay phase-valid, and each pair token-identical (both members draw with one seed, from
logits that only the blend makes equal; the client refuses a drifted pair).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

from auk_app.audex.remote import EngineError
from auk_app.audex.request import AudexRequest
from auk_app.config import Limits
from auk_app.errors import Cancelled
from auk_app.knobs import audex_request
from auk_app.service import AUDEX_COMPARISON_RUN, Studio, StudioConfig
from tests.ports import free_port

LIMITS = Limits()  # the StudioConfig default the studios below run under
# Captions Audex-Tiny (the demo the server serves) tells apart: its tokenizer reads any other word as <unk>.
CAPTIONS = ("A 440 Hz beep lasting one second.", "Three knocks on a door.", "White noise fading out over 1.5 seconds.",
            "A sweep from 300 Hz to 1200 Hz over 2 seconds.", "Two clicks, 0.2 s apart.", "Pink noise for half a second.",
            "A 1000 Hz tone for 0.4 s.", "Brown noise fading in.")


@pytest.fixture(scope="module")
def local() -> Studio:
    return Studio(StudioConfig(device="cpu"))


@pytest.fixture(scope="module")
def remote(vllm_server) -> Studio:
    return Studio(StudioConfig(device="cpu", audex_server=vllm_server[0]))


def _greedy(caption: str, cfg: float) -> AudexRequest:
    return audex_request(dict(caption=caption, cfg=cfg, max_seconds=1.0, top_k=1, seed=0,
                                        randomize_seed=False), LIMITS)


def _long_run(compare_unmasked: bool = True) -> AudexRequest:
    """A greedy half-second beep and its comparison run without the mask. Unmasked, Audex-Tiny writes
    a code where the end belongs, so that run never ends by itself: 4,000 tokens a member, to the
    codec cap, a stream long enough to stop or break mid-way however slowly this process is served."""
    return audex_request(dict(caption="A 440 Hz tone for 0.5 seconds.", max_seconds=20.0, top_k=1, seed=0,
                                        compare_unmasked=compare_unmasked, randomize_seed=False), LIMITS)


@pytest.mark.parametrize("cfg", [1.0, 3.0])
def test_greedy_streams_equal_the_in_process_sampler(local, remote, cfg):
    for caption in CAPTIONS[:3]:
        want = local.text_to_audio(_greedy(caption, cfg)).result
        got = remote.text_to_audio(_greedy(caption, cfg)).result
        assert got.token_ids == want.token_ids, caption
        assert got.report == want.report and got.end_reason == want.end_reason
        np.testing.assert_array_equal(got.waveform, want.waveform)  # decoded here by the same codec


def test_eight_concurrent_users_each_get_their_own_stream(local, remote):
    requests = [_greedy(caption, 3.0 if i % 2 else 2.0) for i, caption in enumerate(CAPTIONS)]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda r: remote.text_to_audio(r).result.token_ids, requests))
    for request, tokens in zip(requests, got):
        assert tokens == local.text_to_audio(request).result.token_ids, request.caption
    assert len(set(got)) == len(got)  # different captions and scales: no stream was handed to another user


def test_sampled_streams_are_phase_valid_and_pairs_identical_over_many_seeds(remote):
    requests = [audex_request(dict(caption=CAPTIONS[seed % 8], cfg=3.0, max_seconds=1.0, seed=seed,
                                             randomize_seed=False), LIMITS) for seed in range(16)]
    with ThreadPoolExecutor(8) as pool:  # EngineError here would mean a pair drifted apart
        results = list(pool.map(lambda r: remote.text_to_audio(r).result, requests))
    for result in results:
        assert result.report["phase_valid"] and result.report["decodable"], result.seed
        assert result.waveform.size == result.report["frames"] * 320
    # Each round of 8 has 8 captions: no stream was handed to another user. (A trained model may draw
    # the same stream for one caption under two seeds, so rounds are not compared with each other.)
    assert len({r.token_ids for r in results[:8]}) == 8 and len({r.token_ids for r in results[8:]}) == 8


def test_the_mask_is_what_makes_server_streams_valid(remote):
    """A greedy half-second tone in the demo's 3 s (greedy: the server's stream is the in-process one):
    Audex-Tiny keeps the phases by itself while the sound lasts, and where it ends, unmasked, it
    writes a code where the end belongs; only the mask keeps the stream valid. (Sampled, some
    captions end by themselves unmasked: 12 % of the bench's unmasked runs are valid.)"""
    made = remote.text_to_audio(audex_request(dict(caption="A 440 Hz tone for 0.5 seconds.", max_seconds=3.0,
                                                             top_k=1, seed=0, compare_unmasked=True,
                                                             randomize_seed=False), LIMITS))
    assert made.result.report["phase_valid"] and made.result.report["end_reason"] == "end_token"
    assert not made.unmasked.report["phase_valid"]


def test_the_manifest_names_the_engine_and_its_host_only(vllm_server):
    url = vllm_server[0].replace("http://", "http://user:secret@")
    studio = Studio(StudioConfig(device="cpu", audex_server=url + "/"))
    made = studio.text_to_audio(_greedy(CAPTIONS[0], 3.0))
    assert made.model["engine"] == "vllm"
    assert made.model["engine_server"] == studio.info()["audex_server"] == url.split("@")[1]
    assert "secret" not in repr(made.model) + repr(studio.info())


@pytest.mark.parametrize("xargs, seed, field, words", [
    ({"audex_codec_cap": 7}, 0, "audex_codec_cap", "audex_codec_cap must be a positive multiple of 4; got 7."),
    ({"cfg_scale": 3.0}, 0, "cfg_pair_id", "cfg_pair_id is missing: a request that gives cfg_scale is a member"),
    ({"cfg_role": "both"}, 0, "cfg_role", "cfg_role must be 'cond' or 'uncond'; got 'both'."),
    ({"cfg_pair_id": "p", "cfg_role": "cond", "cfg_scale": 3.0}, None, "seed", "A CFG pair member needs a seed"),
], ids=["cap", "scale-alone", "role", "unseeded"])
def test_the_plugin_refuses_bad_arguments_in_one_sentence_naming_them(vllm_server, xargs, seed, field, words):
    """A guidance scale without its pair ran unguided, and a bad role was reported as a bad pair id."""
    model = httpx.get(f"{vllm_server[0]}/v1/models").json()["data"][0]["id"]
    body = {"model": model, "prompt": [1, 2, 3], "max_tokens": 4, "vllm_xargs": xargs,
            **({} if seed is None else {"seed": seed})}
    response = httpx.post(f"{vllm_server[0]}/v1/completions", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert words in error["message"] and error["param"] == field, error


def _server_metric(url: str, name: str) -> float:
    """The sum of one vLLM metric over its labels (``/metrics`` can take seconds on busy cores)."""
    metrics = httpx.get(f"{url}/metrics", timeout=120).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith(name + "{"))


@pytest.mark.alone
def test_stopping_in_the_app_cancels_the_server_requests(local, remote, vllm_server):
    """Stop is pressed at the first tokens of the comparison run, which unstopped makes 4,000 tokens
    a member; once nothing runs, the server must have made less than one such stream for the pair.

    The proof of the abort is the server's own token count, read once nothing runs, so no request to
    the server is made while the pair streams. Without the client's socket shutdown (remote.py's
    ``hang_up``) the server sees the client go only after the whole stream.
    """
    request = _long_run()
    masked = len(local.text_to_audio(_long_run(compare_unmasked=False)).result.token_ids)  # the server's too
    url, seen = vllm_server[0], []
    made_before = _server_metric(url, "vllm:generation_tokens_total")
    stop = threading.Event()

    def progress(phase, done, total):
        if phase == AUDEX_COMPARISON_RUN:
            seen.append(done)
            if done > 0:
                stop.set()

    with pytest.raises(Cancelled, match="Generation was stopped after"):
        remote.text_to_audio(request, progress=progress, should_stop=stop.is_set)
    assert 0 < max(seen) < request.sampling.codec_cap  # stopped where Stop was pressed, not at the cap
    # Waits on the server's own state, not on a time budget: under a full two-core suite its prefill
    # and aborts can take long, and the generous bound only keeps a broken abort from hanging CI.
    deadline = time.monotonic() + 600
    while _server_metric(url, "vllm:num_requests_running") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _server_metric(url, "vllm:num_requests_running") == 0
    made = _server_metric(url, "vllm:generation_tokens_total") - made_before - 2 * masked  # the comparison pair's
    assert 2 * max(seen) <= made < request.sampling.codec_cap  # both members ran, and both were aborted


def test_a_server_that_is_not_there_is_one_sentence():
    port = free_port()
    studio = Studio(StudioConfig(device="cpu", audex_server=f"http://127.0.0.1:{port}"))
    started = time.monotonic()
    with pytest.raises(EngineError, match=rf"^The Audex server at 127.0.0.1:{port} cannot be reached; .*\.$"):
        studio.text_to_audio(_greedy(CAPTIONS[0], 3.0))
    assert time.monotonic() - started < 10


def test_a_server_that_says_nothing_times_out_in_one_sentence():
    """A listening socket that never answers: the read timeout, not a hang."""
    from auk_app.audex.remote import RemoteSampler

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        studio = Studio(StudioConfig(device="cpu", audex_server=f"http://127.0.0.1:{port}"))
        studio.audex().sampler = RemoteSampler(f"http://127.0.0.1:{port}", read_timeout=1.0)
        started = time.monotonic()
        with pytest.raises(EngineError, match=r"sent nothing for 1 s after 0 tokens"):
            studio.text_to_audio(_greedy(CAPTIONS[0], 3.0))
        assert time.monotonic() - started < 10


@pytest.mark.alone
def test_zz_a_server_that_dies_mid_request_is_one_sentence(remote, vllm_server):
    """Runs last (the name): it stops the session's server, during the comparison run, which would
    go on for 4,000 tokens a member."""
    url, process = vllm_server
    errors, streaming = [], threading.Event()

    def progress(phase, done, total):
        if phase == AUDEX_COMPARISON_RUN and done > 0:
            streaming.set()

    def run():
        try:
            remote.text_to_audio(_long_run(), progress=progress)
        except Exception as exc:  # noqa: BLE001 - the test inspects what came out
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    assert streaming.wait(60)
    os.killpg(process.pid, signal.SIGKILL)
    worker.join(30)
    assert not worker.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], EngineError), errors
    assert str(errors[0]).startswith(f"The Audex server at {url.removeprefix('http://')} closed the connection after")
