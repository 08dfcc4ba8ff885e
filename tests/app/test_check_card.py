"""The edit check's card: what the page draws beside the figure from a manifest's ``check``."""

from __future__ import annotations

import re

from auk_app.check.result import EditCheck
from auk_app.ui.check_card import check_card, manifest_card


def _entry(check: EditCheck) -> dict:
    return {**check.to_manifest(), "display": check.display()}


def _percent(card: str, element: str, attribute: str) -> float:
    """Where the gauge draws ``element`` (its tag and class), in percent of its width."""
    return float(re.search(rf'<{element}[^>]*? {attribute}="([-\d.]+)%"', card).group(1))


def test_a_volume_check_shows_asked_got_and_a_gauge_with_the_dot_inside_the_band():
    card = check_card(_entry(EditCheck("volume", -6.0, -5.6, "dB", 1.0, True)))
    assert 'class="check pass"' in card and "<span>asked</span><span>−6 dB</span>" in card
    assert "<span>got</span><span>−5.6 dB</span>" in card
    band_from = _percent(card, 'rect class="band"', "x")
    band_to = band_from + float(re.search(r'width="([\d.]+)%"', card).group(1))
    asked, got = _percent(card, 'line class="asked"', "x1"), _percent(card, 'circle class="got"', "cx")
    assert band_from < asked < got < band_to  # low to high: −6 asked, −5.6 got, both inside ±1 dB
    assert abs(asked - 50) < 0.1  # what was asked is the gauge's middle


def test_a_failed_bound_check_shades_from_the_bar_up_and_the_dot_falls_outside():
    card = check_card(_entry(EditCheck("denoise", 6.0, 2.0, "dB SNR", 1.0, False, bound="≥")))
    assert 'class="check fail"' in card and "✗" in card
    band_from = _percent(card, 'rect class="band"', "x")
    assert _percent(card, 'circle class="got"', "cx") < band_from
    assert "<span>asked</span><span>≥ +6 dB SNR</span>" in card


def test_an_unmeasured_check_is_its_sentence_escaped_and_no_result_is_no_card():
    card = check_card(_entry(EditCheck("speed", None, None, "", None, None, note="<b>too short</b>")))
    assert 'class="check unmeasured"' in card and "&lt;b&gt;too short&lt;/b&gt;" in card and "<svg" not in card
    assert manifest_card(None) == "" and manifest_card({"seed": 1}) == ""
