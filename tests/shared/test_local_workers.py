"""The local judge's CPU workers: groups, threads and torch thread settings."""

from __future__ import annotations

import threading

import pytest
import torch

from shared.engine.backends.local_workers import WORKERS, in_groups, worker_count


def test_worker_count_follows_device_rows_and_threads() -> None:
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert worker_count("cpu", 10) == min(WORKERS, 2)
        assert worker_count("cpu", 1) == 1
        assert worker_count("cpu", 10, workers=3) == 3
        assert worker_count("cpu", 2, workers=3) == 2
        assert worker_count("cuda", 10) == 1 == worker_count("cuda", 10, workers=2)
        torch.set_num_threads(1)
        assert worker_count("cpu", 10) == 1
    finally:
        torch.set_num_threads(before)


def test_groups_run_on_their_own_threads_and_results_keep_the_items_order() -> None:
    before = torch.get_num_threads()
    seen: list[tuple[list[int], str, int, bool]] = []
    lock = threading.Lock()

    def task(group: list[int]) -> list[int]:
        with lock:
            seen.append((group, threading.current_thread().name, torch.get_num_threads(),
                         torch.is_inference_mode_enabled()))
        return [item * 10 for item in group]

    try:
        torch.set_num_threads(2)
        assert in_groups([1, 2, 3, 4, 5], 2, task) == [10, 20, 30, 40, 50]
        assert torch.get_num_threads() == 2  # the caller's own setting is untouched
    finally:
        torch.set_num_threads(before)
    assert sorted(group for group, *_ in seen) == [[1, 3, 5], [2, 4]]  # alternate items
    assert all(name.startswith("local-judge") for _, name, _, _ in seen)
    assert all(threads == 1 and inference for _, _, threads, inference in seen)


def test_one_group_runs_in_the_calling_thread() -> None:
    names: list[str] = []
    assert in_groups([1, 2], 1, lambda group: names.append(
        threading.current_thread().name) or group) == [1, 2]
    assert names == [threading.current_thread().name]


def test_a_failing_group_fails_the_call() -> None:
    def task(group: list[int]) -> list[int]:
        if 2 in group:
            raise RuntimeError("boom")
        return group

    with pytest.raises(RuntimeError, match="boom"):
        in_groups([1, 2, 3], 2, task)
