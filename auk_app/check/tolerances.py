"""The edit check's tolerances, and why:

* volume ±1 dB: about the smallest level change a listener notices; LUFS of a pure gain is exact.
* pitch ±50 cents: half a semitone, so the nearest semitone is the asked one; pYIN's grid is 10 cents.
* speed ±5 % of the factor: the sounding length's ends are found on 5 ms hops, and a syllable's
  onset or decay near the 40 dB silence line moves them by some tens of ms on a short clip.
* tone ±50 cents of the asked frequency (as Hz, the narrower, downward side): the pitch bar.
* noise removal: the SNR estimate rises by at least 6 dB (the noise's power quartered), ±1 dB.
* silence trimmed: at most 0.1 s of silence left at either end (a natural onset), ±0.05 s.

A request with a direction and no number ("a bit quieter") asks for a change beyond the same
tolerance that way, and what a result changed that was not asked is named beyond it
(:mod:`auk_app.check.unasked`).
"""

VOLUME_TOLERANCE_DB = 1.0
PITCH_TOLERANCE_CENTS = 50.0
SPEED_TOLERANCE = 0.05  # relative
DENOISE_MIN_DB, DENOISE_TOLERANCE_DB = 6.0, 1.0
TRIM_MAX_SECONDS, TRIM_TOLERANCE_SECONDS = 0.1, 0.05
