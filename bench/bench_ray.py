"""score_dataset on Ray Data (1 and 2 workers) against the single-process path: rouge, accuracy
and semantic_list_contains; and the engine's fixed cost on a small input.

One local Ray cluster on this machine's CPUs, started once (its start-up is not timed). Each
workload runs the single-process path and the Ray engine side by side in this process; the Ray
time is the whole ``score_dataset`` call as a user makes it: the actor pool's start (each worker
imports the libraries and loads the metric, and the embedding model), the transfer of the rows
into the object store and back, and the scoring. ``ratio`` is single-process seconds / Ray
seconds (above 1: Ray is faster). Every Ray output column must equal the single-process one
(asserted after timing; semantic_list_contains' details hold floats of another process's torch
and are compared to 1e-6). One run per workload: the runs take minutes, and the fixed cost is
the point of the small-input rows. The single-process path is warmed first (its imports and
first metric load are paid once per process); each Ray call starts fresh workers, which pay them.

Sizes: ``BENCH_RAY_ROWS`` (default 20,000) rows for rouge and accuracy, a tenth of that for
semantic_list_contains (embedding is ~100x slower per row on this CPU), which keeps the run to
a few minutes here; ``BENCH_RAY_ROWS=100000`` runs 100k and 10k rows; ``BENCH_RAY_ROWS=500``
gives a smoke run (each row then mostly times the workers' start).
"""

from __future__ import annotations

import json
import os
import random
import time

import _repo  # noqa: F401  (makes `shared` importable)
from _timing import row

ROWS = int(os.environ.get("BENCH_RAY_ROWS", "20000"))
SMALL = 100  # rows of the fixed-cost workload
WORDS = ["report", "market", "energy", "policy", "health", "water", "court", "city", "student",
         "research", "the", "a", "of", "in", "to", "and", "for", "with", "Paris", "Jupiter"]


def rows(n: int, seed: int = 0) -> list[dict]:
    """Short answers with one or two references, and expected phrases for the embedding metric."""
    rng = random.Random(seed)

    def text(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k))

    out = []
    for _ in range(n):
        reference = text(rng.randint(8, 30))
        prediction = " ".join(w if rng.random() < 0.7 else rng.choice(WORDS)
                              for w in reference.split()[: rng.randint(3, 30)])
        references = [reference] if rng.random() < 0.7 else [reference, text(10)]
        out.append({"prediction": prediction, "reference": references,
                    "expected": [" ".join(reference.split()[:2]), text(2)]})
    return out


def same(local, scored, metric: str) -> None:
    """Every output column of the Ray run equals the single-process run's."""
    assert scored.column_names == local.column_names, (scored.column_names, local.column_names)
    for column in local.column_names:
        if column == "semantic_list_contains_details":
            for ours, theirs in zip(scored[column], local[column], strict=True):
                ours, theirs = json.loads(ours), json.loads(theirs)
                a, b = ours.pop("similarities"), theirs.pop("similarities")
                assert ours == theirs and a.keys() == b.keys()
                assert all(abs(a[k] - b[k]) < 1e-6 for k in a), metric
        else:
            assert scored[column] == local[column], (metric, column)


def timed(function):
    started = time.perf_counter()
    result = function()
    return time.perf_counter() - started, result


def main() -> list[dict]:
    import datasets
    import ray

    from shared import score_dataset

    started = time.perf_counter()
    ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False,
             logging_level="WARNING")
    print(f"ray cluster started in {time.perf_counter() - started:.1f} s (not timed below)",
          flush=True)
    ray.data.DataContext.get_current().enable_progress_bars = False
    results = []
    try:
        workloads = [("rouge", ROWS, False), ("accuracy", ROWS, False),
                     ("semantic_list_contains", ROWS // 10, False), ("rouge", SMALL, True),
                     ("accuracy", SMALL, True)]
        # the single-process path's imports and first metric loads, out of its times
        for metric in {w[0]: None for w in workloads}:
            score_dataset(datasets.Dataset.from_list(rows(10)), metric, show_progress=False)
        for metric, n, small in workloads:
            dataset = datasets.Dataset.from_list(rows(n))
            local_seconds, (local, _) = timed(
                lambda m=metric, d=dataset: score_dataset(d, m, show_progress=False))
            for workers in (1, 2):
                ray_seconds, (scored, summary) = timed(
                    lambda m=metric, d=dataset, w=workers: score_dataset(
                        d, m, show_progress=False, engine="ray", workers=w))
                same(local, scored, metric)
                note = (f"rows/s: single process {n / local_seconds:,.0f}, Ray "
                        f"{n / ray_seconds:,.0f} ({summary.ray['batches']} batches on "
                        f"{summary.ray['workers']} worker(s)); Ray time includes the workers' "
                        "start")
                if small:
                    note = (f"fixed cost of the engine: {ray_seconds - local_seconds:.1f} s "
                            f"more than the single process; " + note)
                results.append(row(f"{metric}, {n:,} rows, Ray {workers} worker(s) vs one "
                                   "process", ray_seconds, local_seconds, note))
    finally:
        ray.shutdown()
    return results


if __name__ == "__main__":
    main()
