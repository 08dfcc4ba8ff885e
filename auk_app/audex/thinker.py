"""Load the Audex 2B "thinker" LM onto transformers' ``ArceeForCausalLM``.

The checkpoint declares ``model_type: nemotron_dense``, which transformers does not know. Its
math is Arcee's exactly: a Llama body (GQA, RMSNorm, default RoPE) whose MLP is
``down(relu(up(x))²)`` (squared ReLU, no gate), no biases, untied head, with the same weight
names, so the config is translated field by field and the shard loads strictly.

Layout of ``nvidia/Nemotron-Labs-Audex-2B``: ``checkpoint_folder_audiogen/`` holds config,
tokenizer and ``model.safetensors.index.json``; the shard its ``weight_map`` names is stored once,
in ``checkpoint_folder_full/`` (deduplicated), so a shard is looked up in the audiogen folder
first, then in the sibling full folder.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from auk_app import transformers_import

with transformers_import.LOCK:
    from transformers import ArceeConfig, ArceeForCausalLM, PreTrainedTokenizerFast
    from transformers.initialization import no_init_weights

from auk_app.audex.vocab import AudexVocab
from auk_app.errors import CheckpointError
from auk_app.resolve import AUDEX_AUDIOGEN_DIR, AUDEX_AUDIOGEN_FILES, AUDEX_FULL_DIR, WEIGHT_INDEX
from auk_app.weights import load_strict, read_safetensors

DEFAULT_MAX_POSITIONS = 131072  # the 2B config's 128K context

# Config fields that, when present, must hold these values for Arcee's math to be the model's.
_MUST_MATCH = {
    "hidden_act": "relu2",
    "mlp_hidden_act": "relu2",
    "attention_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": False,
}


@dataclass(frozen=True)
class AudexThinker:
    """The loaded LM, its tokenizer and the TTA token layout read from that tokenizer."""

    model: ArceeForCausalLM
    tokenizer: Any
    vocab: AudexVocab
    directory: Path


def audiogen_dir(path: str | Path) -> Path:
    """Accept the snapshot root or its ``checkpoint_folder_audiogen`` folder."""
    path = Path(path)
    return path / AUDEX_AUDIOGEN_DIR if (path / AUDEX_AUDIOGEN_DIR).is_dir() else path


def _first(config: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if config.get(name) is not None:
            return config[name]
    return None


def arcee_config(config: Mapping[str, Any], *, source: str | Path) -> ArceeConfig:
    """Translate a ``nemotron_dense`` config.json dict into an ArceeConfig.

    Reads hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
    num_key_value_heads, head_dim, norm_eps (or rms_norm_eps), the RoPE θ from
    ``rope_parameters`` (or ``rope_theta``), vocab_size and max_position_embeddings. Raises
    CheckpointError naming missing fields, or fields whose value Arcee cannot reproduce.
    """
    rope = config.get("rope_parameters") or {}
    fields = {
        "hidden_size": config.get("hidden_size"),
        "intermediate_size": config.get("intermediate_size"),
        "num_hidden_layers": config.get("num_hidden_layers"),
        "num_attention_heads": config.get("num_attention_heads"),
        "vocab_size": config.get("vocab_size"),
        "norm_eps": _first(config, "norm_eps", "rms_norm_eps"),
        "rope_theta": _first({**config, **rope}, "rope_theta"),
    }
    missing = [name for name, value in fields.items() if value is None]
    if missing:
        raise CheckpointError(
            f"{source} lacks the fields {', '.join(missing)} needed to build the Audex thinker. "
            "Use the config.json of nvidia/Nemotron-Labs-Audex-2B's checkpoint_folder_audiogen."
        )
    conflicts = [f"{k}={config[k]!r} (need {v!r})" for k, v in _MUST_MATCH.items() if k in config and config[k] != v]
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type != "default":
        conflicts.append(f"rope_type={rope_type!r} (need 'default')")
    rotary = _first({**config, **rope}, "partial_rotary_factor")
    if rotary not in (None, 1.0):
        conflicts.append(f"partial_rotary_factor={rotary!r} (need 1.0)")
    if conflicts:
        raise CheckpointError(
            f"{source} describes a model the Arcee mapping cannot run: {'; '.join(conflicts)}. "
            "Use the Audex 2B checkpoint_folder_audiogen config."
        )
    heads = fields["num_attention_heads"]
    return ArceeConfig(
        vocab_size=fields["vocab_size"],
        hidden_size=fields["hidden_size"],
        intermediate_size=fields["intermediate_size"],
        num_hidden_layers=fields["num_hidden_layers"],
        num_attention_heads=heads,
        num_key_value_heads=config.get("num_key_value_heads") or heads,
        head_dim=config.get("head_dim") or fields["hidden_size"] // heads,
        hidden_act="relu2",
        max_position_embeddings=config.get("max_position_embeddings") or DEFAULT_MAX_POSITIONS,
        rms_norm_eps=fields["norm_eps"],
        rope_parameters={"rope_type": "default", "rope_theta": float(fields["rope_theta"])},
        tie_word_embeddings=False,
        attention_bias=False,
        mlp_bias=False,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )


def _check_files(directory: Path) -> None:
    if not directory.is_dir():
        raise CheckpointError(
            f"Audex checkpoint folder {directory} does not exist. Point it at the snapshot root of "
            f"nvidia/Nemotron-Labs-Audex-2B or at its {AUDEX_AUDIOGEN_DIR} folder."
        )
    missing = [name for name in AUDEX_AUDIOGEN_FILES if not (directory / name).is_file()]
    if missing:
        raise CheckpointError(
            f"Audex checkpoint folder {directory} is missing {', '.join(missing)}. "
            f"Download {AUDEX_AUDIOGEN_DIR}/ of nvidia/Nemotron-Labs-Audex-2B completely."
        )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path} is not readable JSON ({exc}). Download it again.") from exc


def _shard_paths(directory: Path, weight_map: Mapping[str, str]) -> dict[str, Path]:
    """Shard name -> file, looking in the audiogen folder, then the sibling full folder."""
    found, missing = {}, []
    for name in sorted(set(weight_map.values())):
        candidates = (directory / name, directory.parent / AUDEX_FULL_DIR / name)
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            missing.append(f"{name} (looked in {candidates[0].parent} and {candidates[1].parent})")
        else:
            found[name] = path
    if missing:
        raise CheckpointError(
            f"The Audex thinker weights named by {directory / WEIGHT_INDEX} are missing: {'; '.join(missing)}. "
            f"Download the shard(s) from {AUDEX_FULL_DIR}/ of nvidia/Nemotron-Labs-Audex-2B."
        )
    return found


def _read_weights(directory: Path) -> dict[str, torch.Tensor]:
    """The tensors the index maps, read from their shards (other tensors in a shard are ignored)."""
    index_path = directory / WEIGHT_INDEX
    weight_map = _read_json(index_path).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{index_path} has no weight_map. Download it again.")
    state = {}
    for name, path in _shard_paths(directory, weight_map).items():
        tensors = read_safetensors(path)
        state.update({key: tensors[key] for key, shard in weight_map.items() if shard == name and key in tensors})
    return state


def cast_keeping_rope_fp32(model: torch.nn.Module, dtype: torch.dtype) -> None:
    # RoPE inverse frequencies stay float32: at θ = 1e8 a bf16 rounding (2^-9 relative) shifts the
    # angle at position p by about p·2^-9·f, which grows along the stream; parameters take `dtype`.
    buffers = {name: buf.clone() for name, buf in model.named_buffers()}
    model.to(dtype)
    for name, buf in buffers.items():
        owner, _, attr = name.rpartition(".")
        setattr(model.get_submodule(owner), attr, buf)


def load_tokenizer(path: str | Path) -> tuple[Any, AudexVocab]:
    """The tokenizer of ``path`` (snapshot root or its audiogen folder) and its TTA token layout.

    All a front end of a remote engine needs; raises CheckpointError when files are missing or
    the tokenizer lacks the TTA tokens.
    """
    directory = audiogen_dir(path)
    _check_files(directory)
    try:
        # The named class reads tokenizer.json directly; AutoTokenizer would first parse config.json and
        # warn, on every load, that transformers does not know the nemotron_dense model type.
        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(directory), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"The tokenizer in {directory} could not be loaded ({exc}). Download it again.") from exc
    try:
        vocab = AudexVocab.from_tokenizer(tokenizer)
    except ValueError as exc:
        raise CheckpointError(f"The tokenizer in {directory} is not an Audex TTA tokenizer: {exc}.") from exc
    return tokenizer, vocab


class TokenizerOnce:
    """The tokenizer and TTA layout of one checkpoint folder (:func:`load_tokenizer`), loaded on
    first call, once, behind a lock: what an AudexPipeline and its in-process sampler share."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self._text: tuple[Any, AudexVocab] | None = None
        self._lock = threading.Lock()

    def __call__(self) -> tuple[Any, AudexVocab]:
        with self._lock:
            if self._text is None:
                self._text = load_tokenizer(self.path)
            return self._text


def load_thinker(path: str | Path, *, device: torch.device | str, dtype: torch.dtype,
                 text: tuple[Any, AudexVocab] | None = None) -> AudexThinker:
    """Load the tokenizer (unless ``text``, the folder's already loaded one, is given) and LM from
    ``path`` (snapshot root or its audiogen folder), strictly.

    Raises CheckpointError naming missing files, config fields, or missing/unexpected/mis-shaped
    weight keys. Reads local files only; nothing is downloaded.
    """
    directory = audiogen_dir(path)
    _check_files(directory)
    config = arcee_config(_read_json(directory / "config.json"), source=directory / "config.json")
    tokenizer, vocab = text or load_tokenizer(directory)
    if vocab.tokenizer_size > config.vocab_size:
        raise CheckpointError(
            f"The tokenizer in {directory} has {vocab.tokenizer_size} ids but the model only "
            f"{config.vocab_size} rows: config and tokenizer come from different checkpoints."
        )
    state = _read_weights(directory)
    with no_init_weights(), torch.device(device):
        model = ArceeForCausalLM(config)
    cast_keeping_rope_fp32(model, dtype)
    load_strict(model, state, source=directory / WEIGHT_INDEX, what="Audex thinker (ArceeForCausalLM)")
    return AudexThinker(model=model.eval(), tokenizer=tokenizer, vocab=vocab, directory=directory)
