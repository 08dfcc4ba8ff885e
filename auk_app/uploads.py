"""The uploads a server decoded lately, so that a clip's verdict, its validator and its edit decode it once.

One :class:`Uploads` per Studio (not per process: two apps in one process keep their own). A clip
is keyed by the file's identity (resolved path, size, modification time) and the limits it was
read under; the store holds at most one sample budget of mono samples, and its arrays are
read-only, since every caller shares them. Anything but a path (samples in memory) is mixed to
mono each time: there is nothing to decode.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from auk_app.audio_io import MonoClip, load_mono, read_mono
from auk_app.config import Limits


class Uploads:
    """Decoded clips, most recently used last, within ``max_samples`` mono samples in all."""

    def __init__(self, max_samples: int = Limits().max_decoded_samples) -> None:
        self.max_samples = max_samples
        self._clips: OrderedDict[tuple, MonoClip] = OrderedDict()
        self._samples = 0  # held by _clips
        self._lock = threading.Lock()

    def read(self, source, limits: Limits | None = None) -> MonoClip:
        """``source`` (a path, or samples with their rate) as a mono clip, decoded within ``limits``
        the first time a path is read under them."""
        if not isinstance(source, (str, Path)):
            return load_mono(source, limits)
        path = Path(source)
        key = _key(path, limits)
        with self._lock:
            clip = None if key is None else self._clips.get(key)
            if clip is not None:
                self._clips.move_to_end(key)
                return clip
        clip = read_mono(path, limits)
        if key is not None:
            self._put(key, clip)
        return clip

    def _put(self, key: tuple, clip: MonoClip) -> None:
        clip.mono.setflags(write=False)
        with self._lock:
            if key in self._clips:
                return
            self._clips[key] = clip
            self._samples += clip.mono.size
            while self._samples > self.max_samples and len(self._clips) > 1:
                self._samples -= self._clips.popitem(last=False)[1].mono.size


def _key(path: Path, limits: Limits | None) -> tuple | None:
    try:
        stat = path.stat()
    except OSError:
        return None  # read_mono names the missing file
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns, limits
