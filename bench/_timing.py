"""The timing harness the benchmarks share: alternating runs, medians, table rows; for the judge
benchmarks, whose repetitions take minutes, their sizes and a time budget."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator

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


def budgeted(asked: int, budget_seconds: float) -> Iterator[int]:
    """Repetition numbers 0, 1, ... up to ``asked``, stopping early where the next repetition would
    end after ``budget_seconds`` (judged by the mean so far; at least one always runs). This keeps
    the judge benchmarks, whose repetitions take minutes, inside `make bench`'s time on a slow or
    loaded machine."""
    started = time.perf_counter()
    for rep in range(asked):
        yield rep
        if (time.perf_counter() - started) / (rep + 1) * (rep + 2) > budget_seconds:
            return


def repetitions_note(done: int, asked: int, budget_seconds: float) -> str:
    """How many repetitions the median is of, and why fewer than asked when so."""
    cut = f" (of {asked} asked: time budget {budget_seconds:.0f} s)" if done < asked else ""
    return f"median of {done}{cut}"


def sizes(name: str, rows: int, repeats: int, budget_seconds: float) -> tuple[int, int, float]:
    """A judge benchmark's rows, repetitions and time budget (seconds): the environment's
    ``BENCH_<name>_ROWS``, ``BENCH_<name>_REPEATS`` and ``BENCH_<name>_BUDGET``, else the
    defaults given."""
    return (int(os.environ.get(f"BENCH_{name}_ROWS", rows)),
            int(os.environ.get(f"BENCH_{name}_REPEATS", repeats)),
            float(os.environ.get(f"BENCH_{name}_BUDGET", budget_seconds)))
