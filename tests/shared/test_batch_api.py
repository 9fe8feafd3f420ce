"""Batch judging (``batch=True``) through the official SDKs against fakes of OpenAI's Files +
Batches and Anthropic's Message Batches (``tests/fakes/batches.py``) in front of the real
llama.cpp server: the same scores as synchronous judging, no direct request, half the cost,
resume after kill -9 without a second batch, a failed item asked again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic import FakeAnthropic
from fakes.batches import FakeBatches
from metric_examples import EXAMPLES

from shared.engine.backends.batching import STORE_FILE, BatchStore
from shared.engine.backends.registry import PROVIDERS
from shared.engine.config import judge_config

pytestmark = pytest.mark.server

KEY = "sk-test-batch"
METRICS = ("faithfulness", "l3score")  # loaded by the metrics fixture
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fast_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_METRICS_BATCH_POLL", "0.05")


@pytest.fixture()
def fake(llama_server: str) -> Iterator[FakeBatches]:
    with FakeBatches(llama_server) as server:
        yield server


def openai_options(base_url: str, cache_dir: Path, **more: Any) -> dict[str, Any]:
    return {"provider": "openai", "base_url": base_url, "api_key": KEY, "model": "gpt-4o-mini",
            "response_format": "json_object", "cache_dir": str(cache_dir),
            "show_progress": False, **more}


def scores(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in ("usage", "Cost", "judge", "dry_run")}


@pytest.mark.parametrize("name", ["faithfulness", "l3score"])
def test_openai_batch_gives_the_synchronous_scores_at_half_the_cost(
        name: str, metrics: dict[str, Any], fake: FakeBatches, llama_server: str,
        tmp_path: Path) -> None:
    inputs = EXAMPLES[name]
    sync = metrics[name].compute(**inputs, **openai_options(llama_server, tmp_path / "sync"))
    ours = metrics[name].compute(**inputs, **openai_options(f"{fake.url}/v1", tmp_path / "b",
                                                            batch=True))
    assert scores(ours) == scores(sync)
    assert fake.direct == 0 and fake.created
    assert ours["usage"]["prompt_tokens"] == sync["usage"]["prompt_tokens"]
    assert ours["Cost"] == pytest.approx(
        sync["Cost"] * PROVIDERS["openai"].capabilities.batch_discount)
    created = list(fake.created)
    again = metrics[name].compute(**inputs, **openai_options(f"{fake.url}/v1", tmp_path / "b",
                                                             batch=True))
    assert scores(again) == scores(sync) and fake.created == created  # all cached


def test_anthropic_message_batches(metrics: dict[str, Any], fake: FakeBatches,
                                   llama_server: str, tmp_path: Path) -> None:
    inputs = EXAMPLES["faithfulness"]
    base = {"provider": "anthropic", "base_url": fake.url, "api_key": KEY,
            "model": "claude-haiku-4-5", "show_progress": False}
    ours = metrics["faithfulness"].compute(**inputs, **base, batch=True,
                                           cache_dir=str(tmp_path / "b"))
    assert fake.direct == 0 and fake.created
    assert all(b.startswith("msgbatch_") for b in fake.created)
    with FakeAnthropic(llama_server, KEY) as server:
        sync = metrics["faithfulness"].compute(**inputs, **{**base, "base_url": server.url},
                                               cache_dir=str(tmp_path / "s"))
        assert server.count == sync["usage"]["calls"] > 0
    assert scores(ours) == scores(sync)
    usage = ours["usage"]
    assert ours["Cost"] == pytest.approx(
        (usage["prompt_tokens"] * 1.00 + usage["completion_tokens"] * 5.00) / 1e6 * 0.5)


def test_a_failed_item_is_asked_again_once(metrics: dict[str, Any], llama_server: str,
                                           tmp_path: Path) -> None:
    inputs = EXAMPLES["l3score"]
    sync = metrics["l3score"].compute(**inputs, **openai_options(llama_server, tmp_path / "s"))
    with FakeBatches(llama_server, fail_once=("r0",)) as fake:
        ours = metrics["l3score"].compute(
            **inputs, **openai_options(f"{fake.url}/v1", tmp_path / "b", batch=True))
        assert len(fake.created) == 2  # the round, then its failed item again
    assert scores(ours) == scores(sync)


def test_no_batch_api_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError) as info:
        judge_config(provider="deepseek", api_key="k", batch=True)
    message = str(info.value)
    assert "\n" not in message and "has no batch API" in message
    for name, provider in PROVIDERS.items():
        assert (name in message.split("needs one of ")[1]) == (
            provider.capabilities.batch is not None)


def store_key(batch_id: str, store: BatchStore) -> str:
    """The key under which the store holds ``batch_id`` ("" while it holds none)."""
    import sqlite3

    if not (store.path / STORE_FILE).exists():
        return ""
    with sqlite3.connect(store.path / STORE_FILE) as db:
        row = db.execute("SELECT key FROM batches WHERE batch_id = ?", (batch_id,)).fetchone()
    return row[0] if row else ""


CHILD = """
import json, sys, evaluate
from shared.kit.registry import metric_path
options = json.loads(sys.argv[1]); inputs = json.loads(sys.argv[2])
evaluate.load(metric_path("l3score"), experiment_id="batch-kill").compute(**inputs, **options)
"""


@pytest.mark.parametrize("moment", ["waiting", "submitting"])
def test_resume_after_kill_submits_no_second_batch(moment: str, metrics: dict[str, Any],
                                                   llama_server: str, tmp_path: Path) -> None:
    """kill -9 while the batch runs (its id stored) or in the instant the provider has accepted
    it but the process has not learned its id yet: the rerun re-attaches either way."""
    inputs = EXAMPLES["l3score"]
    pause = 3.0 if moment == "submitting" else 0.0
    with FakeBatches(llama_server, delay=4.0, create_pause=pause) as fake:
        options = openai_options(f"{fake.url}/v1", tmp_path / "b", batch=True)
        store = BatchStore(tmp_path / "b")
        env = {**os.environ, "JUDGE_METRICS_BATCH_POLL": "0.05"}
        child = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(options),
                                  json.dumps(inputs)], cwd=ROOT, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        def ready() -> bool:
            if not fake.created:
                return False
            return moment == "submitting" or bool(store_key(fake.created[0], store))

        deadline = time.monotonic() + 600  # the child imports the SDKs on a busy machine
        while not ready() and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
        assert ready(), child.communicate()[1].decode()[-2000:]
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        # the id reached the store only when the kill came after the provider's answer
        assert bool(store_key(fake.created[0], store)) == (moment == "waiting")
        # the rerun, as a user runs it: the same command in a new process
        rerun = subprocess.run([sys.executable, "-c", CHILD, json.dumps(options),
                                json.dumps(inputs)], cwd=ROOT, env=env, capture_output=True,
                               timeout=900)
        assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
        assert f"re-attached to batch {fake.created[0]}" in rerun.stderr.decode(), \
            rerun.stderr.decode()[-2000:]
        assert len(fake.created) == 1 and fake.direct == 0
        ours = metrics["l3score"].compute(**inputs, **options)  # every answer cached now
        assert len(fake.created) == 1 and ours["usage"]["calls"] == 0
    sync = metrics["l3score"].compute(**inputs, **openai_options(llama_server, tmp_path / "s"))
    assert scores(ours) == scores(sync)
