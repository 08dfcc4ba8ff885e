"""The upload check: findings for good clips, one specific refusal per kind of bad clip."""

from __future__ import annotations

import json

import pytest

from auk_app.upload_check import check_upload

KEYS = {"sample_rate", "channels", "duration_s", "peak", "rms", "silent", "clipping", "verdict", "message"}

def test_a_good_clip_is_ready(clips):
    findings = check_upload(clips.voice)
    assert KEYS <= findings.keys()
    assert findings["verdict"] == "ok"
    assert (findings["sample_rate"], findings["channels"], findings["duration_s"]) == (24_000, 1, 0.6)
    assert findings["peak"] == pytest.approx(0.5, abs=1e-3)
    assert 0 < findings["rms"] < findings["peak"]
    assert findings["silent"] is False and findings["clipping"] is False
    json.dumps(findings)  # JSON-ready as /inspect_audio returns it


def test_stereo_44k_is_accepted_and_the_conversion_is_named(clips):
    findings = check_upload(clips.stereo)
    assert findings["verdict"] == "ok"
    assert "mixed from 2 channels to mono" in findings["message"]
    assert "resampled from 44.1 kHz to 24 kHz" in findings["message"]


def test_clipping_is_a_warning_not_a_refusal(clips):
    findings = check_upload(clips.clipping)
    assert findings["verdict"] == "warning" and findings["clipping"] is True
    assert "clips" in findings["message"]


def test_each_bad_clip_is_refused_with_its_own_message(bad_upload):
    path, words = bad_upload
    findings = check_upload(path)
    assert findings["verdict"] == "rejected"
    assert words in findings["message"]
    json.dumps(findings)


def test_no_clip_is_refused_politely():
    findings = check_upload(None)
    assert findings["verdict"] == "rejected" and "Upload or record" in findings["message"]
