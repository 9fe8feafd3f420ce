"""Batch judging (``batch=True``) through the official SDKs against fakes of OpenAI's Files +
Batches, Anthropic's Message Batches and Gemini's Batch Mode (``tests/fakes/batches.py``) in
front of the real llama.cpp server: the same scores as synchronous judging, no direct request,
half the cost, resume after kill -9 without a second batch, a failed item asked again once or
left unmeasured with its reason."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic import FakeAnthropic
from fakes.batches import FakeBatches
from fakes.gemini import FakeGemini
from metric_examples import EXAMPLES

from shared.engine.backends.batch_store import STORE_FILE, BatchStore
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


MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5",
          "gemini": "gemini-3.5-flash"}  # each a model the registry prices
BATCH_IDS = {"openai": "batch_", "anthropic": "msgbatch_", "gemini": "batches/"}


def options(provider: str, base_url: str, cache_dir: Path, **more: Any) -> dict[str, Any]:
    extra = {"response_format": "json_object"} if provider == "openai" else {}
    return {"provider": provider, "base_url": base_url, "api_key": KEY,
            "model": MODELS[provider], "cache_dir": str(cache_dir), "show_progress": False,
            **extra, **more}


def batch_url(provider: str, fake: FakeBatches) -> str:
    """The base URL a provider's client takes to reach the batch fake."""
    return f"{fake.url}/v1" if provider == "openai" else fake.url


@contextmanager
def synchronous(provider: str, llama_server: str) -> Iterator[tuple[str, Any]]:
    """``(base_url, server)`` of the provider's synchronous API in front of the same llama.cpp
    server (``server`` None where the client talks to the llama.cpp server itself)."""
    if provider == "openai":
        yield llama_server, None
        return
    fake = {"anthropic": FakeAnthropic, "gemini": FakeGemini}[provider]
    with fake(llama_server, KEY) as server:
        yield server.url, server


def synchronous_result(provider: str, name: str, metrics: dict[str, Any], llama_server: str,
                       cache_dir: Path) -> dict[str, Any]:
    """``name`` computed on its example through the provider's synchronous API."""
    with synchronous(provider, llama_server) as (url, server):
        result = metrics[name].compute(**EXAMPLES[name], **options(provider, url, cache_dir))
        if server is not None:  # every call went to the synchronous API
            assert server.count == result["usage"]["calls"] > 0
    return result


def scores(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in ("usage", "Cost", "judge", "dry_run")}


@pytest.mark.parametrize(("provider", "name"), [
    ("openai", "faithfulness"), ("openai", "l3score"), ("anthropic", "faithfulness"),
    ("gemini", "faithfulness"), ("gemini", "l3score")])
def test_batch_gives_the_synchronous_scores_at_half_the_cost(
        provider: str, name: str, metrics: dict[str, Any], fake: FakeBatches,
        llama_server: str, tmp_path: Path) -> None:
    inputs = EXAMPLES[name]
    sync = synchronous_result(provider, name, metrics, llama_server, tmp_path / "sync")
    batched = options(provider, batch_url(provider, fake), tmp_path / "b", batch=True)
    ours = metrics[name].compute(**inputs, **batched)
    assert scores(ours) == scores(sync)
    assert fake.direct == 0 and fake.created
    assert all(b.startswith(BATCH_IDS[provider]) for b in fake.created)
    # an ended batch is read once: its answers come from the status read that saw it end
    # (Anthropic's SDK reads it again in messages.batches.results, for its results_url)
    assert fake.ended_reads == dict.fromkeys(fake.created, 2 if provider == "anthropic" else 1)
    assert ours["usage"]["prompt_tokens"] == sync["usage"]["prompt_tokens"]
    assert ours["Cost"] == pytest.approx(
        sync["Cost"] * PROVIDERS[provider].capabilities.batch_discount)
    created = list(fake.created)
    again = metrics[name].compute(**inputs, **batched)
    assert scores(again) == scores(sync) and fake.created == created  # all cached


@pytest.mark.parametrize(("provider", "keep_metadata"), [
    ("openai", True), ("gemini", True), ("gemini", False)])
def test_a_failed_item_is_asked_again_once(provider: str, keep_metadata: bool,
                                           metrics: dict[str, Any], llama_server: str,
                                           tmp_path: Path) -> None:
    """``keep_metadata=False``: Gemini's answers come without their requests' metadata, so the
    answers are matched by position, in the retry batch too."""
    sync = synchronous_result(provider, "l3score", metrics, llama_server, tmp_path / "s")
    with FakeBatches(llama_server, fail_once=("r0",), keep_metadata=keep_metadata) as fake:
        ours = metrics["l3score"].compute(**EXAMPLES["l3score"], **options(
            provider, batch_url(provider, fake), tmp_path / "b", batch=True))
        assert len(fake.created) == 2 and fake.direct == 0  # the round, then its failed item
    assert scores(ours) == scores(sync)


def test_an_expired_gemini_batch_is_asked_again_once(metrics: dict[str, Any],
                                                     llama_server: str, tmp_path: Path) -> None:
    sync = synchronous_result("gemini", "l3score", metrics, llama_server, tmp_path / "s")
    with FakeBatches(llama_server, expire_first=True) as fake:
        ours = metrics["l3score"].compute(**EXAMPLES["l3score"], **options(
            "gemini", batch_url("gemini", fake), tmp_path / "b", batch=True))
        assert len(fake.created) == 2 and fake.direct == 0  # the expired batch, then again
        assert fake.batches[fake.created[0]]["metadata"]["state"] == "BATCH_STATE_EXPIRED"
    assert scores(ours) == scores(sync)


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_an_item_failing_twice_is_left_unmeasured_with_its_reason(
        provider: str, metrics: dict[str, Any], llama_server: str, tmp_path: Path) -> None:
    sync = synchronous_result(provider, "l3score", metrics, llama_server, tmp_path / "s")
    with FakeBatches(llama_server, fail_always=("r0",)) as fake:
        ours = metrics["l3score"].compute(**EXAMPLES["l3score"], **options(
            provider, batch_url(provider, fake), tmp_path / "b", batch=True))
        assert len(fake.created) == 2  # asked again once, not more
    assert ours["scores"][0] is None and [u["index"] for u in ours["unmeasured"]] == [0]
    assert "batch item failed" in str(ours["unmeasured"][0])
    assert ours["scores"][1:] == sync["scores"][1:]


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


@pytest.mark.parametrize(("provider", "moment"), [
    ("openai", "waiting"), ("openai", "submitting"), ("gemini", "submitting")])
def test_resume_after_kill_submits_no_second_batch(provider: str, moment: str,
                                                   metrics: dict[str, Any],
                                                   llama_server: str, tmp_path: Path) -> None:
    """kill -9 while the batch runs (its id stored) or in the instant the provider has accepted
    it but the process has not learned its id yet: the rerun re-attaches either way. A stored
    id is read back the same way for every provider (shared.engine.backends.batching), so that
    case runs on one; finding a batch whose id was never stored is each provider's own
    (OpenAI's metadata, Gemini's display name), so that case runs on both."""
    inputs = EXAMPLES["l3score"]
    pause = 3.0 if moment == "submitting" else 0.0
    with FakeBatches(llama_server, delay=4.0, create_pause=pause) as fake:
        batched = options(provider, batch_url(provider, fake), tmp_path / "b", batch=True)
        store = BatchStore(tmp_path / "b")
        env = {**os.environ, "JUDGE_METRICS_BATCH_POLL": "0.05"}
        child = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(batched),
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
        rerun = subprocess.run([sys.executable, "-c", CHILD, json.dumps(batched),
                                json.dumps(inputs)], cwd=ROOT, env=env, capture_output=True,
                               timeout=900)
        assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
        assert f"re-attached to batch {fake.created[0]}" in rerun.stderr.decode(), \
            rerun.stderr.decode()[-2000:]
        assert len(fake.created) == 1 and fake.direct == 0
        ours = metrics["l3score"].compute(**inputs, **batched)  # every answer cached now
        assert len(fake.created) == 1 and ours["usage"]["calls"] == 0
    sync = synchronous_result(provider, "l3score", metrics, llama_server, tmp_path / "s")
    assert scores(ours) == scores(sync)
