"""Where the benchmarks are, and the repository's package made importable: a benchmark runs as a
script (``python bench/<name>.py``, or through ``run_all.py``), so its own folder is on the path
and this module is found first; the repository above it is not, until this module adds it."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
