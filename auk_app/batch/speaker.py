"""Speaker similarity between a source and its result: the cosine of two voice embeddings.

The weights are Resemblyzer's GE2E speaker encoder (``pretrained.pt``, 17 MB, Apache-2.0), which
ships inside its pip package, so nothing is downloaded and it runs offline. The package itself
is not imported: its ``__init__`` imports webrtcvad, whose module needs ``pkg_resources``, which
current setuptools no longer has. So the file is found where pip put it and the encoder is built
here as the package defines it (a 3-layer LSTM over 40 mel bands, 256 units, a linear layer, ReLU,
unit length; 1.6 s windows at 1.3 a second, their embeddings averaged), and the weights must fill it
exactly (a strict load). The volume is first raised to −30 dBFS as its preprocessing does; its
trimming of long pauses (webrtcvad) is left out.

A proxy: GE2E d-vectors are not the WavLM-based speaker-verification embeddings the benchmarks
report (SpeechEditBench, Ming-Freeform-Audio-Edit), so its numbers are not comparable to theirs.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import numpy as np
import torch

from auk_app import dsp, jit_cache
from auk_app.errors import CheckpointError

RATE = 16_000
MEL_BANDS, WINDOW_MS, STEP_MS = 40, 25, 10
PARTIAL_FRAMES = 160  # 1.6 s
PARTIALS_PER_SECOND, MIN_COVERAGE = 1.3, 0.75
TARGET_DBFS = -30.0
HIDDEN, LAYERS = 256, 3
PACKAGE = "resemblyzer"
NAME = "Resemblyzer's GE2E d-vector"


def weights_file() -> Path:
    """Resemblyzer's ``pretrained.pt``, found without importing the package."""
    spec = importlib.util.find_spec(PACKAGE)
    places = [] if spec is None else list(spec.submodule_search_locations or ())
    for place in places:
        if (Path(place) / "pretrained.pt").is_file():
            return Path(place) / "pretrained.pt"
    raise CheckpointError("Speaker similarity needs the resemblyzer package (its encoder's weights ship inside "
                          "it): pip install -r requirements.txt.")


class SpeakerEncoder(torch.nn.Module):
    """The GE2E encoder: mel frames [B, T, 40] → unit-length embeddings [B, 256]."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(MEL_BANDS, HIDDEN, LAYERS, batch_first=True)
        self.linear = torch.nn.Linear(HIDDEN, HIDDEN)

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        _, (hidden, _) = self.lstm(mels)
        raw = torch.relu(self.linear(hidden[-1]))
        return raw / torch.norm(raw, dim=1, keepdim=True).clamp_min(1e-12)

    @classmethod
    def load(cls) -> SpeakerEncoder:
        state = torch.load(weights_file(), map_location="cpu", weights_only=True)["model_state"]
        model = cls()
        model.load_state_dict({k: v for k, v in state.items() if not k.startswith("similarity_")}, strict=True)
        return model.eval()

    @torch.inference_mode()
    def embed(self, wav: np.ndarray, rate: int) -> np.ndarray:
        """One utterance's embedding: its 1.6 s windows' embeddings averaged, then unit length."""
        wav = _raised(dsp.resample(np.asarray(wav, np.float32), rate, RATE))
        hop = RATE * STEP_MS // 1000
        starts = _window_starts(wav.size, hop)
        wav = np.pad(wav, (0, max(0, (starts[-1] + PARTIAL_FRAMES) * hop - wav.size)))
        mel = jit_cache.librosa().feature.melspectrogram(y=wav, sr=RATE, n_fft=RATE * WINDOW_MS // 1000,
                                                         hop_length=hop, n_mels=MEL_BANDS).astype(np.float32).T
        windows = np.stack([mel[s:s + PARTIAL_FRAMES] for s in starts])
        mean = self(torch.from_numpy(windows)).mean(dim=0).numpy()
        return mean / max(float(np.linalg.norm(mean)), 1e-12)


def _raised(wav: np.ndarray) -> np.ndarray:
    """Quiet audio raised to TARGET_DBFS RMS (louder audio kept), as the encoder was trained on."""
    level = dsp.dbfs(dsp.rms(wav))
    return wav * np.float32(10 ** ((TARGET_DBFS - level) / 20)) if np.isfinite(level) and level < TARGET_DBFS else wav


def _window_starts(n_samples: int, hop: int) -> list[int]:
    """The mel frames where each 1.6 s window starts: PARTIALS_PER_SECOND of them a second, the last
    kept when it covers at least MIN_COVERAGE of its window (one window at least)."""
    frames = int(np.ceil((n_samples + 1) / hop))
    step = max(1, int(round(RATE / PARTIALS_PER_SECOND / hop)))
    starts = list(range(0, max(1, frames - PARTIAL_FRAMES + step + 1), step))
    coverage = (n_samples - starts[-1] * hop) / (PARTIAL_FRAMES * hop)
    return starts[:-1] if coverage < MIN_COVERAGE and len(starts) > 1 else starts


_encoder: SpeakerEncoder | None = None
_lock = threading.Lock()


def encoder() -> SpeakerEncoder:
    """The encoder, loaded once a process (the batch's item threads share it)."""
    global _encoder
    with _lock:
        if _encoder is None:
            _encoder = SpeakerEncoder.load()
        return _encoder


def similarity(source: np.ndarray, result: np.ndarray, rate: int) -> float:
    """Cosine similarity of the two clips' voices: 1 for the same voice, lower for another."""
    model = encoder()
    with _lock:  # one LSTM forward at a time: torch's CPU threads are shared with the model run
        a, b = model.embed(source, rate), model.embed(result, rate)
    return float(np.dot(a, b))
