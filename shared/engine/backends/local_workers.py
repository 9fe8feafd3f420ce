"""The local judge's CPU workers: a call's prompts split over threads of one torch thread each.

A small model gains little from torch's own threads on a CPU. With passive waiting (why:
``shared/__init__.py``) each of the 400-odd operations of a forward pass wakes the other
thread, and the matrix products of a few rows are bound by reading the weights, not by
arithmetic. Two prompts run side by side, each on its own core with one torch thread, do more
than one run on both cores: on 2 cores 1.3x for one-row decode steps, 2x for 4 to 8 rows and
for a 40-token prefill, 1.8x for a 100-token one (bench/README.md, "local judge"). So a call's
prompts are split into ``WORKERS`` groups (alternately, as they come sorted by length), and each
group runs on a thread of its own, with the caller's torch threads shared out between them.
A group's answers do not depend on the other group's: a row is decoded as in one batch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

# Groups a call is split into at most: the 2 cores measured. More groups than cores would only
# take turns on them; on a larger machine each group gets the caller's threads shared out.
WORKERS = 2

_POOLS: dict[int, ThreadPoolExecutor] = {}  # by size, made at first use and kept
_POOLS_LOCK = threading.Lock()


def worker_count(device: str, rows: int, workers: int | None = None) -> int:
    """Groups for ``rows`` prompts on ``device``: ``workers`` (default: ``WORKERS``, at most the
    caller's torch threads) on a CPU, never more than the rows; 1 on a GPU, where one batch
    is the fast way."""
    if device != "cpu":
        return 1
    import torch

    wanted = min(WORKERS, torch.get_num_threads()) if workers is None else workers
    return max(1, min(wanted, rows))


def in_groups(items: Sequence[Item], count: int,
              task: Callable[[list[Item]], list[Result]]) -> list[Result]:
    """``task`` on ``count`` groups of ``items`` (every ``count``-th item, so lengths sorted
    ascending stay balanced), each group on its own thread with ``1/count`` of the caller's
    torch threads and in inference mode; the results in the order of ``items``. One group
    runs in the calling thread as it is."""
    if count <= 1:
        return task(list(items))
    import torch

    threads = max(1, torch.get_num_threads() // count)

    def run(group: list[Item]) -> list[Result]:
        torch.set_num_threads(threads)  # this thread's own: OpenMP and MKL keep one per thread
        with torch.inference_mode():
            return task(group)

    with _POOLS_LOCK:
        if count not in _POOLS:
            _POOLS[count] = ThreadPoolExecutor(count, "local-judge")
        pool = _POOLS[count]
    futures = [pool.submit(run, list(items[start::count])) for start in range(count)]
    results = [future.result() for future in futures]
    merged: list[Result] = [None] * len(items)  # type: ignore[list-item]
    for start, group in enumerate(results):
        merged[start::count] = group
    return merged
