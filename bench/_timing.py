"""The timing harness the string-metric benchmarks share: alternating runs, medians, table rows."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

REPEATS = 3


def alternate(ours: Callable[[], object], reference: Callable[[], object] | None,
              repeats: int = REPEATS) -> tuple[float, float | None]:
    """Median seconds of ``ours`` and ``reference``, run alternately ``repeats`` times each."""
    mine, theirs = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        ours()
        mine.append(time.perf_counter() - start)
        if reference is not None:
            start = time.perf_counter()
            reference()
            theirs.append(time.perf_counter() - start)
    return statistics.median(mine), (statistics.median(theirs) if theirs else None)


def row(workload: str, ours: float, reference: float | None, note: str = "") -> dict:
    """Print one markdown row and return it as bench/run_all.py expects."""
    ratio = reference / ours if reference is not None else None
    cells = [workload, f"{ours:.3f}", "-" if reference is None else f"{reference:.3f}",
             "-" if ratio is None else f"{ratio:.2f}x"]
    print("| " + " | ".join(cells) + " |" + (f" {note}" if note else ""), flush=True)
    return {"workload": workload, "ours": ours, "reference": reference, "ratio": ratio,
            "note": note}
