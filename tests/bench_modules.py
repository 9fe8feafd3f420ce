"""The benchmark scripts the tests exercise, loaded from their files (bench/ is not a package:
its scripts import their neighbours by file name)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "bench"


def bench_module(name: str, path: str) -> ModuleType:
    """The script at ``bench/<path>``, run as module ``name``. It is registered in
    ``sys.modules`` before it runs: dataclasses look their module up there."""
    spec = importlib.util.spec_from_file_location(name, BENCH / path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
