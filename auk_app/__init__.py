"""AuK Studio: an in-process pipeline and Gradio app for AuK and Audex text-to-audio.

Importing the package is free: the public names below are resolved on first use
(PEP 562), so ``import auk_app`` pulls in neither torch nor transformers.
"""

from importlib import import_module

__version__ = "0.1.0"

_PUBLIC = {
    # AuK core
    "AuKTransformer": "auk_app.auk.dit",
    "AuKStepContext": "auk_app.auk.dit",
    "dit_state_dict": "auk_app.auk.dit",
    "build_time_grid": "auk_app.auk.sampler",
    "sample_latents": "auk_app.auk.sampler",
    "AuKVAE": "auk_app.auk.vae",
    "AuKCheckpoint": "auk_app.auk.checkpoint",
    "load_auk_checkpoint": "auk_app.auk.checkpoint",
    "FLASH_T_GRID": "auk_app.auk.configs",
    # Audex text-to-audio token space
    "AUDEX_AUDIOCODEC_TOKEN_OFFSET": "auk_app.audex.tta",
    "AUDEX_AUDIOCODEC_VOCAB_SIZE": "auk_app.audex.tta",
    "AUDEX_AUDIOGEN_START_TOKEN_ID": "auk_app.audex.tta",
    "AUDEX_AUDIOGEN_END_TOKEN_ID": "auk_app.audex.tta",
    "XCODEC1_CODEBOOK_SIZE": "auk_app.audex.tta",
    "XCODEC1_NUM_CODEBOOKS": "auk_app.audex.tta",
    "NEG_INF": "auk_app.audex.tta",
    "TTARVQPhaseMaskLogitsProcessor": "auk_app.audex.tta",
    "build_tta_phase_token_ids": "auk_app.audex.tta",
    "validate_rvq_phase": "auk_app.audex.tta",
}

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'auk_app' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
