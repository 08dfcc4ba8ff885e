"""Where model weights live on disk: one resolution order for every repository the app uses.

First hit wins: an explicit path (argument or CLI flag) > the repository's environment
variable > ``./ckpts/<name>`` > the Hugging Face cache > a download with huggingface_hub,
restricted to the files the app reads. Downloads happen only when the caller opts in or the
app runs on a Hugging Face Space (``SPACE_ID`` is set); otherwise a missing repository is
reported with the exact command that fetches it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from auk_app.errors import CheckpointError

CKPT_ROOT = Path("ckpts")

# The files of each kind of snapshot, named once: Repo.required below (is a local copy complete?)
# and the loaders' own checks (which file is missing?) read these same lists.
AUK_RELEASE_CONFIG = "config.yaml"  # tencent/AuK and tencent/AuK-Flash
AUK_RELEASE_DIT = {"base": "auk_base.safetensors", "flash": "auk_flash.safetensors"}
AUK_ASSEMBLED_CONFIG = "config.json"  # a vLLM-Omni assembled directory
AUK_ASSEMBLED_DIT = "auk.safetensors"
AUK_VAE = "vae.safetensors"  # both layouts
WEIGHT_INDEX = "model.safetensors.index.json"  # a sharded transformers checkpoint's weight map
QWEN_OMNI_FILES = ("config.json", "tokenizer_config.json", "preprocessor_config.json")  # plus weights, tokenizer
AUDEX_AUDIOGEN_DIR = "checkpoint_folder_audiogen"  # config, tokenizer and the weight index
AUDEX_FULL_DIR = "checkpoint_folder_full"  # the shard the index names, stored once
AUDEX_SHARD = "model-00001-of-00002.safetensors"  # the one shard of checkpoint_folder_full the thinker reads
AUDEX_AUDIOGEN_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", WEIGHT_INDEX)
XCODEC_FILES = ("config.json", "model.safetensors")


@dataclass(frozen=True)
class Repo:
    """A Hugging Face repository the app can use, and how to recognise a usable copy."""

    repo_id: str
    env_var: str
    local_name: str
    allow_patterns: tuple[str, ...]
    required: tuple[str, ...]  # relative paths; any one tuple entry may be "a|b" for alternatives

    def is_complete(self, directory: Path) -> bool:
        return directory.is_dir() and all(
            any((directory / option).exists() for option in entry.split("|")) for entry in self.required
        )

    @property
    def download_command(self) -> str:
        return f"hf download {self.repo_id} --local-dir {CKPT_ROOT / self.local_name}"


def _auk(variant: str, repo_id: str, env_var: str, local_name: str) -> Repo:
    dit = AUK_RELEASE_DIT[variant]
    return Repo(
        repo_id, env_var, local_name,
        (AUK_RELEASE_CONFIG, dit, AUK_VAE),
        (f"{AUK_RELEASE_CONFIG}|{AUK_ASSEMBLED_CONFIG}", f"{dit}|{AUK_ASSEMBLED_DIT}", AUK_VAE),
    )


AUK_BASE = _auk("base", "tencent/AuK", "AUK_BASE_DIR", "AuK")
AUK_FLASH = _auk("flash", "tencent/AuK-Flash", "AUK_FLASH_DIR", "AuK-Flash")
QWEN_OMNI = Repo(
    "Qwen/Qwen2.5-Omni-3B", "AUK_QWEN_DIR", "Qwen2.5-Omni-3B",
    ("*.json", "*.safetensors", "*.txt", "*.model"),
    QWEN_OMNI_FILES,
)
AUDEX = Repo(
    "nvidia/Nemotron-Labs-Audex-2B", "AUDEX_DIR", "Nemotron-Labs-Audex-2B",
    ("config.json", f"{AUDEX_AUDIOGEN_DIR}/*", f"{AUDEX_FULL_DIR}/{AUDEX_SHARD}"),
    tuple(f"{AUDEX_AUDIOGEN_DIR}/{name}" for name in AUDEX_AUDIOGEN_FILES),
)
XCODEC1 = Repo(
    "hf-audio/xcodec-hubert-general-balanced", "XCODEC1_PATH", "xcodec-hubert-general-balanced",
    ("*.json", "*.safetensors"),
    XCODEC_FILES,
)


def on_space() -> bool:
    return bool(os.environ.get("SPACE_ID"))


def find(repo: Repo, explicit: str | Path | None = None) -> Path | None:
    """The first complete local copy in resolution order, without downloading."""
    if explicit is not None:
        path = Path(explicit).expanduser()
        if not repo.is_complete(path):
            raise CheckpointError(
                f"{path} is not a complete copy of {repo.repo_id}: it needs {', '.join(repo.required)}. "
                f"Get it with: {repo.download_command}"
            )
        return path
    candidates = []
    if os.environ.get(repo.env_var):
        candidates.append(Path(os.environ[repo.env_var]).expanduser())
    candidates.append(CKPT_ROOT / repo.local_name)
    for path in candidates:
        if repo.is_complete(path):
            return path
    return _from_hf_cache(repo)


def resolve(repo: Repo, explicit: str | Path | None = None, *, download: bool = False) -> Path:
    """A usable local copy, downloading it first when allowed; CheckpointError otherwise."""
    path = find(repo, explicit)
    if path is not None:
        return path
    if download or on_space():
        from huggingface_hub import snapshot_download

        try:
            return Path(snapshot_download(repo.repo_id, allow_patterns=list(repo.allow_patterns)))
        except Exception as exc:  # network, auth and disk errors all end the same way for the user
            raise CheckpointError(f"Downloading {repo.repo_id} failed ({exc}). Get it with: {repo.download_command}") from exc
    raise CheckpointError(missing_message([repo]))


def missing_message(repos: list[Repo]) -> str:
    """One message listing every missing repository and the command that fetches each."""
    lines = [f"{repo.repo_id} (or set {repo.env_var}): {repo.download_command}" for repo in repos]
    return "Model weights not found. Download them with:\n" + "\n".join(lines)


def _from_hf_cache(repo: Repo) -> Path | None:
    try:
        from huggingface_hub import snapshot_download

        path = Path(snapshot_download(repo.repo_id, allow_patterns=list(repo.allow_patterns), local_files_only=True))
    except Exception:  # not cached (LocalEntryNotFoundError) or no usable cache directory
        return None
    return path if repo.is_complete(path) else None
