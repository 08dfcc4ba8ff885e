"""The app's Serve client without a cluster: a bad URL, a deployment that is down (at start and
later), and fake replicas (a few lines of http.server) that go silent, send heartbeats and no
steps, never finish, flood a line, say too much, answer without their fields, or send a result
that is not what the plan asked for (a window's waveform, or a whole recording's window's latents);
and the app's own codec, which joins and decodes those windows."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from auk_app.audex.token_sampler import Deadline
from auk_app.auk.request import EditRequest
from auk_app.job import EditJob, run_request
from auk_app.serve.client import ServeError, ServeRunner, check_url
from auk_app.serve.engine import ServeEngine
from auk_app.service import Studio, StudioConfig
from tests.conftest import REPO
from tests.ports import free_port

VOLUME_EDIT = EditRequest(instruction="Increase the volume by 6 dB.", audio=str(REPO / "assets/examples/speech.flac"))


@pytest.mark.parametrize("url", ["ftp://host:1/auk", "http://host:99999/auk", "http://:8000"])
def test_a_bad_url_is_one_sentence(url):
    with pytest.raises(ServeError, match="cannot be used: it"):
        Studio(StudioConfig(device="cpu", auk_server=url))
    assert check_url("127.0.0.1:8000/auk/") == "http://127.0.0.1:8000/auk"


def test_a_refused_url_is_named_by_its_host_never_its_credentials():
    with pytest.raises(ServeError) as refused:
        check_url("http://user:secret@gpu-host:99999/auk?key=x")
    assert "(gpu-host)" in str(refused.value) and "secret" not in str(refused.value)


def test_a_deployment_that_is_down_is_one_sentence_not_a_hang():
    studio = Studio(StudioConfig(device="cpu", auk_server=f"http://127.0.0.1:{free_port()}/auk"))
    with pytest.raises(ServeError, match="cannot be reached") as raised:
        studio.engine.runner.check()
    began = time.monotonic()
    with pytest.raises(ServeError, match="cannot be reached"):  # gone after start-up: the edit says so
        run_request(studio, VOLUME_EDIT, "demo")
    assert time.monotonic() - began < 10
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("down", [True, False], ids=["deployment-down", "bad-url"])
def test_the_app_does_not_start_without_its_deployment(capsys, monkeypatch, down):
    """app.py's main in this process (as tests/app/test_cli.py runs it): status 2 and one line, never a launch."""
    import gradio as gr

    def launch(*args, **kwargs):
        raise AssertionError("the app launched instead of refusing to start")

    monkeypatch.setattr(gr.Blocks, "launch", launch)
    monkeypatch.syspath_prepend(str(REPO))
    from app import main

    url = f"http://127.0.0.1:{free_port()}/auk" if down else "http://127.0.0.1:99999/auk"
    monkeypatch.setenv("AUK_SERVER_URL", url)  # the environment variable, as the flag's default
    with pytest.raises(SystemExit) as exited:
        main(["--port", str(free_port())])
    err = capsys.readouterr().err.strip()
    assert exited.value.code == 2 and "\n" not in err, err
    assert err.startswith("AuK Studio cannot start: The AuK Serve")
    assert ("cannot be reached" if down else "cannot be used: its host or port") in err


class _SilentReplica(BaseHTTPRequestHandler):
    """Answers an edit with its start line, then says nothing until the test ends."""

    posts = 0
    release = threading.Event()

    def do_POST(self):  # noqa: N802 (http.server's name)
        type(self).posts += 1
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "application/x-ndjson")
        self.end_headers()
        self.wfile.write(b'{"event": "start", "replica": "silent"}\n')
        self.wfile.flush()
        self.release.wait(30)

    def log_message(self, *args):
        pass


def test_a_silent_replica_is_given_up_with_its_sentence_and_not_sent_again():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SilentReplica)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/auk"
        studio = Studio(StudioConfig(device="cpu", auk_server=url))
        studio.engine = ServeEngine(ServeRunner(url, idle_timeout=1.0, retry_pause=0.1), studio.config.limits, studio.device)
        began = time.monotonic()
        with pytest.raises(ServeError, match="sent nothing for 1 s, so the edit was given up"):
            run_request(studio, VOLUME_EDIT, "demo")
        assert time.monotonic() - began < 10 and _SilentReplica.posts == 1
    finally:
        _SilentReplica.release.set()
        server.shutdown()


FLOOD_BYTES = 64 << 20  # all a flooding fake sends: a client without limits fails the test, not the machine
HEARTBEAT = b'{"event": "heartbeat"}\n'


def _flood(write, head: bytes) -> int:
    """Write ``head``, then 64 KiB pieces without a line end until the client hangs up; the bytes sent."""
    sent, piece = 0, b"x" * (64 << 10)
    try:
        write(head)
        while sent < FLOOD_BYTES:
            write(piece)
            sent += len(piece)
    except OSError:  # the client hung up: what a limit should make it do
        pass
    return sent


def _steps(write, line, seconds: float = 8.0) -> None:
    """``line(i)`` every 0.1 s for ``seconds`` (then the stream ends): a replica that never finishes."""
    end, i = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        write(line(i))
        time.sleep(0.1)
        i += 1


def _start_line(write) -> None:
    write(b'{"event": "start", "replica": "fake", "pid": 1}\n')


def _latents_result(body: dict, change) -> bytes:
    """A latents result line for the window in ``body``: the plan's frames × the demo's 87 channels
    after ``change``, with the shape the changed latents have."""
    import json

    from auk_app.serve.wire import pack

    latents = change(np.full((body["gen_frames"], 87), 0.1, np.float32)).astype(np.float32)
    line = {"event": "result", "latents": pack(latents), "shape": list(latents.shape), "timings": {"total": 0.1},
            "device": "cpu", "dtype": "float32", "steps": {"dit_steps": 2}}
    return (json.dumps(line) + "\n").encode()


def _result(body: dict, change) -> bytes:
    """A result line for the plan in ``body``, its waveform as the plan asks (the clip's length, an
    automatic length) after ``change(samples) -> (samples, rate)``."""
    import json

    import numpy as np

    from auk_app.serve.wire import pack, unpack

    wanted = unpack(body["clip"]["wav_24k"]).size
    wav, rate = change(np.full(wanted, 0.1, np.float32))
    line = {"event": "result", "wav": pack(wav), "sample_rate": rate, "ref_latent_frames": 1,
            "condition_cache_hit": False, "timings": {"total": 0.1}, "device": "cpu", "dtype": "float32"}
    return (json.dumps(line) + "\n").encode()


WRONG_RESULTS = {  # the URL's path → how the fake replica's result differs from the plan
    "half_long": lambda wav: (wav[: wav.size // 2], 24_000),
    "longer": lambda wav: (np.concatenate([wav, wav[:2400]]), 24_000),  # much longer: the line limit refuses
    "rate_48k": lambda wav: (wav, 48_000),
    "not_finite": lambda wav: (np.where(np.arange(wav.size) == 5, np.nan, wav).astype(np.float32), 24_000),
    "empty": lambda wav: (wav[:0], 24_000),
}
MISBEHAVIOURS = {  # the URL's path → what the fake replica streams after its headers
    "heartbeats": lambda w: (_start_line(w), _steps(w, lambda i: HEARTBEAT)),
    "same_step": lambda w: (_start_line(w), _steps(w, lambda i: b'{"event": "progress", "phase": "sample", '
                                                              b'"done": 1, "total": 32}\n')),
    "endless_steps": lambda w: (_start_line(w), _steps(w, lambda i: b'{"event": "progress", "phase": "sample", '
                                                                   b'"done": %d, "total": 1000000}\n' % i)),
    "endless_line": lambda w: _Replica.sent.append(_flood(w, b'{"event": "start", "replica": "')),
    "long_words": lambda w: (_start_line(w), w(b'{"event": "progress", "phase": "%s", "done": 1, "total": 2}\n'
                                               % (b"p" * 300_000)),
                             w(b'{"event": "error", "kind": "engine", "message": "%s"}\n' % (b"m " * 100_000))),
}
WRONG_LATENTS = {  # the URL's path → how the fake replica's latents for a window differ from its plan's
    "latents_short": lambda latents: latents[1:],
    "latents_wide": lambda latents: np.pad(latents, ((0, 0), (0, 1))),
    "latents_not_finite": lambda latents: np.where(np.arange(latents.shape[0])[:, None] == 5, np.inf, latents),
}
GOOD_INFO = (b'{"engine": "ray-serve", "checkpoint_name": "AuK-Tiny", "device": "cpu", "dtype": "float32", '
             b'"max_batch": 2, "replicas": 2}')
INFOS = {  # GET on the URL's path → the body the fake answers with (None: an endless one)
    "no_device": b'{"engine": "ray-serve", "checkpoint_name": "AuK-Tiny", "dtype": "float32"}',
    "endless_info": None,
    "no_counts": b'{"engine": "ray-serve", "checkpoint_name": "AuK-Tiny", "device": "cpu", "dtype": "float32"}',
    **{name: GOOD_INFO for name in WRONG_LATENTS},
}


class _Replica(BaseHTTPRequestHandler):
    """A fake replica that misbehaves as its URL's path names (MISBEHAVIOURS, INFOS)."""

    sent: list[int] = []  # what the flooding answers got out before the client hung up

    def do_GET(self):  # noqa: N802 (http.server's name)
        body = INFOS[self.path.strip("/")]
        self.send_response(200)
        self.end_headers()
        if body is None:
            _Replica.sent.append(_flood(self.wfile.write, b'{"checkpoint_name": "'))
        else:
            self.wfile.write(body)

    def do_POST(self):  # noqa: N802
        import json

        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.send_response(200)
        self.send_header("content-type", "application/x-ndjson")
        self.end_headers()
        name = self.path.strip("/")
        write = lambda data: (self.wfile.write(data), self.wfile.flush())  # noqa: E731
        try:
            if name in WRONG_RESULTS:
                _start_line(write)
                write(_result(body, WRONG_RESULTS[name]))
            elif name in WRONG_LATENTS:
                _start_line(write)
                write(_latents_result(body, WRONG_LATENTS[name]))
            else:
                MISBEHAVIOURS[name](write)
        except OSError:
            pass

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def replica():
    """``replica(name)``: the URL of a fake replica behaving as ``name``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Replica)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield lambda name: f"http://127.0.0.1:{server.server_address[1]}/{name}"
    server.shutdown()


def _edit(url: str, runner: ServeRunner | None = None, progress=None, request: EditRequest = VOLUME_EDIT,
          refusal=ServeError):
    """``request`` through a Studio on ``url``; (the sentence it failed with, seconds it took)."""
    studio = Studio(StudioConfig(device="cpu", auk_server=url))
    studio.engine = ServeEngine(runner or ServeRunner(url, retry_pause=0.1), studio.config.limits, studio.device)
    began = time.monotonic()
    with pytest.raises(refusal) as failed:
        run_request(studio, request, "demo", progress=progress)
    return str(failed.value), time.monotonic() - began


@pytest.mark.parametrize("name, words", [
    ("half_long", "samples where the plan asked for"), ("longer", "samples where the plan asked for"),
    ("rate_48k", "a result at 48000 Hz where the plan is at 24000 Hz"), ("not_finite", "NaN or infinite samples"),
    ("empty", "0 samples where the plan asked for"),
])
@pytest.mark.parametrize("region", [None, (0.5, 1.5)], ids=["whole", "region"])
def test_a_result_that_is_not_what_the_plan_asked_for_is_refused(replica, name, words, region):
    """A replica's result was written as the edit whatever its length, rate or samples; a region
    edit's empty result deleted the region. The app holds it to the plan, and writes nothing."""
    from auk_app.errors import EngineError

    request = VOLUME_EDIT if region is None else replace(VOLUME_EDIT, region_start=region[0], region_end=region[1])
    message, _ = _edit(replica(name), request=request, refusal=EngineError)
    assert words in message and "so nothing was written" in message and "\n" not in message


@pytest.mark.parametrize("name, words", [
    ("latents_short", "latents of shape [299, 87] where the plan asked for [300, 87]"),
    ("latents_wide", "latents of shape [300, 88] where the plan asked for [300, 87]"),
    ("latents_not_finite", "NaN or infinite latents"),
])
def test_a_window_s_latents_that_are_not_what_its_plan_asked_for_are_refused(replica, tmp_path, name, words):
    """A whole recording's windows on the deployment: a window's latents are joined only when they are
    the plan's frames by the model's channels, all finite; otherwise one sentence and nothing written."""
    import soundfile as sf

    from auk_app.errors import EngineError
    from auk_app.results import EditOrder
    from training.long_recordings import slow_tones

    path = tmp_path / "tones.wav"
    sf.write(path, slow_tones(20, seed=1), 24_000, subtype="FLOAT")
    studio = Studio(StudioConfig(device="cpu", auk_server=replica(name)))
    order = EditOrder.from_knobs({"audio": str(path), "instruction": "Decrease the volume by 6 dB.", "model": "demo"},
                                 studio.config.limits)
    with pytest.raises(EngineError) as refused:
        EditJob(studio, order).run()
    message = str(refused.value)
    assert words in message and "so nothing was written" in message and "\n" not in message
    assert message.count(". ") == 0


@pytest.mark.parametrize("name", ["heartbeats", "same_step"])
def test_a_replica_that_only_keeps_the_connection_alive_is_given_up(replica, name):
    """Heartbeats (or one step sent again and again) kept an edit for 150 s+; they prove the
    connection, not the work."""
    runner = ServeRunner(replica(name), progress_timeout=1.0, retry_pause=0.1)
    message, took = _edit(replica(name), runner)
    assert "reported no progress for 1 s (heartbeats only), so the edit was given up" in message
    assert "\n" not in message and took < 6


def test_an_edit_that_never_finishes_meets_the_deadline_its_plan_sets(replica, monkeypatch):
    runner = ServeRunner(replica("endless_steps"), retry_pause=0.1)
    monkeypatch.setattr(runner, "deadline", lambda plan: Deadline.after(1.0, "set by the test"))
    message, took = _edit(replica("endless_steps"), runner)
    assert "did not finish the edit within its 1 s deadline (set by the test), so it was given up" in message
    assert took < 6


def test_the_deadline_grows_with_the_plan_s_steps(replica):
    from auk_app.auk.plan import plan_edit

    studio = Studio(StudioConfig(device="cpu", auk_server=replica("heartbeats")))
    checkpoint = studio.entry("demo").checkpoint
    for nfe, seconds in [(8, 160), (32, 280), (64, 440)]:
        plan = plan_edit(replace(VOLUME_EDIT, nfe=nfe), checkpoint, studio.config.limits)
        deadline = studio.engine.runner.deadline(plan)
        assert deadline.seconds == seconds and f"5 s for each of its {nfe} steps, at most 900 s" in deadline.basis


def test_an_endless_line_is_cut_off_at_the_result_s_size(replica):
    """An endless line grew the app by 1.3 GB before the idle limit; the reader stops at the most
    the edit's result can take (its window's samples in base64) and hangs up."""
    _Replica.sent.clear()
    message, took = _edit(replica("endless_line"))
    assert "sent a line of more than" in message and "bytes, more than the edit's result can take" in message
    assert took < 6
    time.sleep(0.5)  # the fake notices the hang-up
    assert _Replica.sent and _Replica.sent[0] < FLOOD_BYTES // 2


def test_a_replica_s_words_reach_the_user_cut_to_a_sentence(replica):
    """A 300 kB phase name was relayed as a progress message, and an error message whole."""
    phases = []
    message, _ = _edit(replica("long_words"), progress=lambda phase, done, total: phases.append(phase))
    assert phases == ["p" * 39 + "…"]
    assert message.startswith("m m m") and len(message) <= 200


@pytest.mark.parametrize("name, words", [
    ("no_device", "without its device); point --auk-server at its route"),
    ("endless_info", "(it answered more than 65,536 bytes of it)"),
])
def test_a_deployment_answering_without_its_fields_stops_the_app_in_one_sentence(replica, capsys, monkeypatch,
                                                                                  name, words):
    """An answer without `device` ended app.py in KeyError: 'device'."""
    import gradio as gr

    monkeypatch.setattr(gr.Blocks, "launch", lambda *a, **k: pytest.fail("the app launched"))
    monkeypatch.syspath_prepend(str(REPO))
    from app import main

    _Replica.sent.clear()
    with pytest.raises(SystemExit) as exited:
        main(["--port", str(free_port()), "--auk-server", replica(name)])
    err = capsys.readouterr().err.strip()
    assert exited.value.code == 2 and "\n" not in err and err.startswith("AuK Studio cannot start: The server at ")
    assert words in err, err


def test_windows_go_out_replicas_times_max_batch_at_a_time(replica):
    """The deployment's GET / names its running replicas and each one's batch; without them, one and one."""
    from auk_app.config import Limits
    from auk_app.serve.windows import AppCodec, ServeWindows

    studio = Studio(StudioConfig(device="cpu"))
    checkpoint = studio.entry("demo").checkpoint
    codec = AppCodec(checkpoint, studio.device)
    assert ServeWindows(ServeRunner(replica("latents_short")), checkpoint, Limits(), codec).max_batch == 2 * 2
    assert ServeWindows(ServeRunner(replica("no_counts")), checkpoint, Limits(), codec).max_batch == 1


def test_the_app_s_codec_alone_encodes_and_decodes_as_the_pipeline_does():
    """A whole recording on Serve is joined and decoded in the app with the checkpoint's codec alone:
    the same latents for a silent window and the same samples as the in-process pipeline's."""
    import torch

    from auk_app.auk.pipeline import AuKPipeline
    from auk_app.config import Limits
    from auk_app.serve.windows import AppCodec
    from training.long_recordings import slow_tones

    pipeline = AuKPipeline(Studio(StudioConfig(device="cpu")).entry("demo").checkpoint, limits=Limits(), device="cpu")
    codec = AppCodec(pipeline.checkpoint, torch.device("cpu"))
    tones = slow_tones(3, seed=1)
    latents = codec.encode(tones)
    assert torch.equal(latents, pipeline.encode(tones)) and latents.shape[1] == 87
    ours, theirs = codec.stream_decoder(), pipeline.stream_decoder()
    got = np.concatenate([ours.push(latents[:70]), ours.push(latents[70:]), ours.end()])
    want = np.concatenate([theirs.push(latents[:70]), theirs.push(latents[70:]), theirs.end()])
    assert got.size == latents.shape[0] * 480 and np.array_equal(got, want)


def test_a_replica_s_step_counts_are_kept_only_as_non_negative_whole_numbers():
    from auk_app.serve.client import RESULT_FIELDS

    line = {"event": "result", "latents": "", "shape": [1, 1], "timings": {}, "device": "cpu", "dtype": "float32",
            "steps": {"dit_steps": 2, "guided_steps": "many", "reused_steps": -1, "shared_steps": True}}
    read = ServeRunner("http://127.0.0.1:1")._result(line, RESULT_FIELDS["latents"])
    assert read["steps"] == {"dit_steps": 2}
