"""Batch rounds that must never stick (the official OpenAI SDK against ``tests/fakes/batches.py``
in front of the real llama.cpp server): a finished batch without one usable answer never pins
its requests, an unreadable results file or a duplicated ``custom_id`` is asked again, a batch
that never ends stops at the deadline naming the batch, and the batch store follows each call's
own ``cache_dir`` (``use_cache=False``: nothing stored, nothing re-attached)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.batches import FakeBatches
from metric_examples import EXAMPLES
from test_batch_api import options, scores, synchronous_result

from shared.engine.backends.batch_store import STORE_FILE, BatchStore

pytestmark = pytest.mark.server

METRICS = ("l3score",)
INPUTS = EXAMPLES["l3score"]
MEMO: dict[str, Any] = {}  # the real answers, by request body, shared by this module's fakes


def fake_batches(llama_server: str, **faults: Any) -> FakeBatches:
    return FakeBatches(llama_server, memo=MEMO, **faults)


@pytest.fixture(autouse=True)
def fast_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_METRICS_BATCH_POLL", "0.05")


@pytest.fixture(scope="module")
def sync(metrics: dict[str, Any], llama_server: str,
         tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return synchronous_result("openai", "l3score", metrics, llama_server,
                              tmp_path_factory.mktemp("sync"))


def batched(metrics: dict[str, Any], fake: FakeBatches, cache_dir: Path,
            **more: Any) -> dict[str, Any]:
    return metrics["l3score"].compute(**INPUTS, **options(
        "openai", f"{fake.url}/v1", cache_dir, batch=True, **more))


def stored_ids(cache_dir: Path) -> list[str]:
    import sqlite3

    if not (cache_dir / STORE_FILE).exists():
        return []
    with sqlite3.connect(cache_dir / STORE_FILE) as db:
        return [row[0] for row in db.execute("SELECT batch_id FROM batches")]


def test_a_round_that_failed_whole_is_sent_again_and_a_rerun_measures(
        metrics: dict[str, Any], llama_server: str, sync: dict[str, Any],
        tmp_path: Path) -> None:
    """The provider is down for two batches: the retry round is really a second batch (not the
    first re-attached), and once it is back the rerun submits a third and measures every row."""
    with fake_batches(llama_server, fail_batches=2) as fake:
        down = batched(metrics, fake, tmp_path)
        assert len(fake.created) == 2 and fake.direct == 0
        assert all(s is None for s in down["scores"])
        assert stored_ids(tmp_path) == []  # no finished, answerless batch pins the rows
        again = batched(metrics, fake, tmp_path)
        assert len(fake.created) == 3
    assert scores(again) == scores(sync)


def test_an_unreadable_results_file_is_asked_again(metrics: dict[str, Any], llama_server: str,
                                                   sync: dict[str, Any],
                                                   tmp_path: Path) -> None:
    with fake_batches(llama_server, garble_first=True) as fake:
        ours = batched(metrics, fake, tmp_path)
        assert len(fake.created) == 2
    assert scores(ours) == scores(sync)


def test_a_duplicated_custom_id_is_trusted_in_neither_line(metrics: dict[str, Any],
                                                           llama_server: str,
                                                           sync: dict[str, Any],
                                                           tmp_path: Path) -> None:
    with fake_batches(llama_server, duplicate=("r0",)) as fake:
        ours = batched(metrics, fake, tmp_path)
        assert len(fake.created) == 2  # r0 asked again, alone
        second = fake.files[fake.batches[fake.created[1]]["input_file_id"]].decode()
        assert second.count("custom_id") == 1 and '"r0"' in second
    assert scores(ours) == scores(sync)


def test_a_batch_that_never_ends_stops_at_the_deadline(metrics: dict[str, Any],
                                                       llama_server: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_METRICS_BATCH_DEADLINE", "0.5")
    with fake_batches(llama_server, never_end=True) as fake:
        ours = batched(metrics, fake, tmp_path)
        assert len(fake.created) == 1  # not submitted again: it may still end
        batch_id = fake.created[0]
    reasons = [u["reason"] for u in ours["unmeasured"]]
    assert len(reasons) == len(INPUTS["predictions"])
    assert all(batch_id in r and "JUDGE_METRICS_BATCH_DEADLINE" in r and "rerun" in r
               for r in reasons)
    assert stored_ids(tmp_path) == [batch_id]  # a rerun re-attaches to it


def test_the_store_follows_the_calls_cache_dir(metrics: dict[str, Any], llama_server: str,
                                               sync: dict[str, Any], tmp_path: Path) -> None:
    """Two configs differing only in ``cache_dir``/``use_cache`` share one backend; each call's
    batch is stored in its own folder, and ``use_cache=False`` stores and re-attaches nothing."""
    with fake_batches(llama_server) as fake:
        batched(metrics, fake, tmp_path / "a")
        assert stored_ids(tmp_path / "a") == fake.created[:1]
        ours = batched(metrics, fake, tmp_path / "b")  # the same backend, another cache
        assert len(fake.created) == 2 and stored_ids(tmp_path / "b") == fake.created[1:]
        assert stored_ids(tmp_path / "a") == fake.created[:1]
        for _ in range(2):
            batched(metrics, fake, tmp_path / "c", use_cache=False)
        assert len(fake.created) == 4 and not (tmp_path / "c").exists()
        assert BatchStore(tmp_path / "c").path == tmp_path / "c"
    assert scores(ours) == scores(sync)


def test_a_batch_answer_without_usage_has_an_unknown_cost(metrics: dict[str, Any],
                                                          llama_server: str, sync: dict[str, Any],
                                                          tmp_path: Path) -> None:
    with fake_batches(llama_server, no_usage=True) as fake:
        ours = batched(metrics, fake, tmp_path)
    assert scores(ours) == scores(sync)
    assert sync["Cost"] > 0 and ours["Cost"] is None  # unknown, not $0.0000
