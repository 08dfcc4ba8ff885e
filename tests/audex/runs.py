"""Building a run's :class:`AudexSampling` in the tests, under the app's default limits."""

from auk_app.audex.params import AudexSampling
from auk_app.config import Limits
from auk_app.progress import silent

LIMITS = Limits()


def sampling(caption: str = "Rain falling on a tin roof.", **knobs) -> AudexSampling:
    return AudexSampling(caption=caption, limits=LIMITS, **knobs)


def run(pipeline, caption: str, *, decode: bool = True, progress=silent, should_stop=None, **knobs):
    """``pipeline.generate`` of the sampling of ``caption`` and ``knobs``."""
    return pipeline.generate(sampling(caption, **knobs), decode=decode, progress=progress, should_stop=should_stop)
