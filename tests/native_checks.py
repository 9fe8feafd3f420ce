"""The checks every native protocol backend must pass: its provider's official SDK as the
client, a fake of the provider's wire format (``tests/fakes/``, written from its public
reference) in front of the real llama.cpp server (the ``llama_server`` fixture).

A protocol's test module subclasses :class:`NativeProtocolChecks` as a ``Test...`` class and
supplies what is its own: the fake it starts, the judge settings that name the provider, what
each kind of request must look like on its wire, and how it names its faults. Each check below
then runs for that protocol: a structured metric gives the OpenAI-compatible path's numbers (and
a second run asks nothing), a written label matches the OpenAI-compatible path without
log-probabilities, G-Eval's samples are N requests each, l3score refuses before any request,
two transient faults are retried, a fault is never cached, the credential shows in no message,
repr or cache file, a missing SDK names its extra, and an unreachable judge fails fast.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from backend_cases import STATEMENTS, ask, collect
from conftest import free_port, load_metrics
from fakes.translating import Received, TranslatingFake
from faultproxy import FaultProxy
from metric_examples import EXAMPLES, judge_options

from shared.engine.backends.base import LogprobsUnavailable
from shared.engine.backends.pool import make_backend, release_backend
from shared.engine.backends.remote import DEAD_AFTER
from shared.engine.config import judge_config

METRICS = ("faithfulness", "pairwise", "l3score", "g_eval")


def scores(result: dict[str, Any]) -> dict[str, Any]:
    """A result without what differs between two providers by design (usage, cost, the judge
    description)."""
    return {key: value for key, value in result.items()
            if key not in ("usage", "Cost", "judge", "dry_run")}


def one_row(name: str) -> dict[str, Any]:
    """The first row of metric ``name``'s example."""
    return {key: value[:1] for key, value in EXAMPLES[name].items()}


class NativeProtocolChecks:
    # -- what a protocol supplies

    settings: dict[str, Any]  # the judge options naming the provider and model (and key)
    secrets: tuple[str, ...]  # what must show nowhere
    price: tuple[float, float]  # the model's list price, USD per 1M tokens in and out
    retried: tuple[str, str]  # two transient faults, retried in that order
    retry_waits: bool  # whether one of them names a wait (retry-after: 1) the SDK keeps
    unsaved: tuple[str, str, str]  # a fault not retried; its status and error name
    echoing: tuple[str, str, str]  # a fault quoting the credential back; status, error name
    echo_options: dict[str, Any] = {}  # the options its credential is given with
    sdk: str  # the module a missing SDK is
    extra: str  # the install extra that brings it

    def start(self, upstream: str) -> TranslatingFake:
        raise NotImplementedError

    def check_structured(self, seen: Received) -> None:
        """One request of a structured metric: a forced tool, greedy."""
        raise NotImplementedError

    def check_written(self, seen: Received) -> None:
        """One request of a short written answer: no tools."""
        raise NotImplementedError

    def check_sampled(self, seen: Received) -> None:
        """One request of G-Eval's samples."""
        raise NotImplementedError

    def check_credential(self, seen: Received) -> None:
        """The credential of ``echo_options``, as it went out."""
        raise NotImplementedError

    # -- the fixtures and helpers

    @pytest.fixture(scope="class")
    def metrics(self, request: pytest.FixtureRequest) -> dict[str, Any]:
        return load_metrics(request.module.__file__, METRICS)

    @pytest.fixture()
    def fake(self, llama_server: str) -> Iterator[TranslatingFake]:
        with self.start(llama_server) as server:
            yield server

    def options(self, fake: TranslatingFake, cache_dir: str, **more: Any) -> dict[str, Any]:
        return {**self.settings, "base_url": fake.url, "cache_dir": cache_dir,
                "show_progress": False, **more}

    def assert_nowhere(self, where: str, text: str | bytes) -> None:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        for secret in self.secrets:
            assert secret not in text, f"a credential leaked into {where}"

    def assert_no_file_holds_a_secret(self, cache_dir: str) -> None:
        files = [p for p in Path(cache_dir).rglob("*") if p.is_file()]
        assert files, f"nothing was written under {cache_dir}"
        for path in files:
            self.assert_nowhere(str(path), path.read_bytes())

    # -- the checks

    def test_a_structured_metric_gives_the_openai_compatible_numbers(
            self, metrics: dict[str, Any], fake: TranslatingFake, llama_server: str,
            tmp_path: Path) -> None:
        inputs = EXAMPLES["faithfulness"]
        reference = metrics["faithfulness"].compute(
            **inputs, **judge_options(llama_server, str(tmp_path / "openai")))
        ours = metrics["faithfulness"].compute(**inputs, **self.options(fake, str(tmp_path / "n")))
        assert scores(ours) == scores(reference)
        assert ours["usage"]["calls"] == fake.count > 0
        usage, (per_input, per_output) = ours["usage"], self.price
        assert ours["Cost"] == pytest.approx(
            (usage["prompt_tokens"] * per_input + usage["completion_tokens"] * per_output) / 1e6,
            abs=1e-6)
        for seen in fake.received:
            self.check_structured(seen)
        # a second run is answered from the call cache
        sent = fake.count
        again = metrics["faithfulness"].compute(**inputs, **self.options(fake, str(tmp_path / "n")))
        assert fake.count == sent and again["usage"]["calls"] == 0
        assert scores(again) == scores(ours)

    def test_pairwise_gives_the_written_label_as_the_openai_compatible_path(
            self, metrics: dict[str, Any], fake: TranslatingFake, llama_server: str,
            tmp_path: Path) -> None:
        """No log-probabilities: the label the judge writes, read as the OpenAI-compatible
        backend reads it from a model without them (the same server behind a proxy that strips
        them)."""
        inputs = EXAMPLES["pairwise"]
        with FaultProxy(llama_server, default="no_logprobs") as proxy:
            reference = metrics["pairwise"].compute(
                **inputs, **judge_options(proxy.url, str(tmp_path / "openai")))
            reference_host = proxy.url.split("//")[1].split("/")[0]
        result = metrics["pairwise"].compute(**inputs, **self.options(fake, str(tmp_path / "n")))
        assert fake.count >= 2
        for seen in fake.received:
            self.check_written(seen)
        host = fake.url.split("//")[1]
        assert repr(scores(result)).replace(host, "HOST") == \
            repr(scores(reference)).replace(reference_host, "HOST")

    def test_g_eval_samples_ask_n_answers_per_sample(
            self, metrics: dict[str, Any], fake: TranslatingFake, tmp_path: Path) -> None:
        inputs = {**EXAMPLES["g_eval"], "samples": 3}
        result = metrics["g_eval"].compute(**inputs, **self.options(fake, str(tmp_path / "c")))
        n = len(inputs["predictions"])
        assert fake.count == 3 * n  # N requests per sample
        for seen in fake.received:
            self.check_sampled(seen)
        measured = [detail for detail, score in zip(result["details"], result["scores"],
                                                    strict=True) if score is not None]
        assert measured, result["unmeasured"]
        for detail in measured:
            assert detail["score_method"] == "sampled" and detail["samples"] == 3
            named = [s for s in detail["sampled_scores"] if s is not None]
            assert detail["probabilities"] == {
                str(k): named.count(k) / len(named) for k in range(1, 6)}
        again = metrics["g_eval"].compute(**inputs, **self.options(fake, str(tmp_path / "c")))
        assert fake.count == 3 * n and again["usage"]["calls"] == 0

    def test_l3score_refuses_before_any_request(self, metrics: dict[str, Any],
                                                fake: TranslatingFake, cache_dir: str) -> None:
        with pytest.raises((LogprobsUnavailable, ValueError), match="log-probabilities"):
            metrics["l3score"].compute(**EXAMPLES["l3score"], **self.options(fake, cache_dir))
        assert fake.count == 0

    def test_transient_faults_are_retried(self, fake: TranslatingFake) -> None:
        fake.add_faults(*self.retried)
        config = judge_config(**self.options(fake, "unused", max_retries=2))
        judge = make_backend(config)
        try:
            started = time.monotonic()
            results = collect(judge.structured, [ask("List one fact about Paris as JSON.")],
                              STATEMENTS, 64)
            elapsed = time.monotonic() - started
        finally:
            release_backend(config)
        assert results[0].ok, results[0].error
        assert [seen.fault for seen in fake.received] == [*self.retried, None]
        assert fake.received[0].body == fake.received[2].body  # the same request, asked again
        if self.retry_waits:
            assert elapsed >= 1.0  # the retry-after: 1 was honoured

    def test_a_fault_is_not_cached_and_is_asked_again(
            self, metrics: dict[str, Any], fake: TranslatingFake, cache_dir: str) -> None:
        fault, status, name = self.unsaved
        inputs = one_row("faithfulness")
        fake.add_faults(fault)
        failed = metrics["faithfulness"].compute(**inputs, **self.options(fake, cache_dir,
                                                                          max_retries=0))
        assert fake.count == 1
        reason = failed["unmeasured"][0]["reason"]
        assert f"HTTP {status}" in reason and name in reason, reason
        later = metrics["faithfulness"].compute(**inputs, **self.options(fake, cache_dir,
                                                                         max_retries=0))
        assert fake.count > 1  # asked again: the fault was not cached
        assert all(status not in u["reason"] for u in later["unmeasured"]), later["unmeasured"]

    def test_the_credential_appears_in_no_message_repr_or_cache_file(
            self, metrics: dict[str, Any], fake: TranslatingFake, cache_dir: str) -> None:
        fault, status, name = self.echoing
        inputs = one_row("faithfulness")
        options = self.options(fake, cache_dir, **self.echo_options)
        fake.add_faults(fault)
        result = metrics["faithfulness"].compute(**inputs, **options, max_retries=0)
        reason = result["unmeasured"][0]["reason"]
        assert f"HTTP {status}" in reason and name in reason, reason
        self.assert_nowhere("the result", repr(result))
        metrics["faithfulness"].compute(**inputs, **options)
        for seen in fake.received:  # the credential went out
            self.check_credential(seen)
        config = judge_config(**options)
        self.assert_nowhere("the backend's repr", repr(make_backend(config)))
        self.assert_nowhere("the config's repr", repr(config))
        self.assert_no_file_holds_a_secret(cache_dir)

    def test_a_missing_sdk_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, self.sdk, None)
        with pytest.raises(ValueError) as raised:  # at configuration, before any request
            make_backend(judge_config(**self.settings, base_url="http://127.0.0.1:9"))
        message = str(raised.value)
        assert "\n" not in message and f"pip install 'judge-metrics[{self.extra}]'" in message

    def test_an_unreachable_judge_fails_fast(self) -> None:
        """Nothing listens at the endpoint: after DEAD_AFTER failed attempts the rest of the
        batch is not sent (the RemoteBackend plumbing, fed by the SDK's HTTP attempts)."""
        config = judge_config(**self.settings, max_retries=DEAD_AFTER,
                              base_url=f"http://127.0.0.1:{free_port()}", max_concurrency=1)
        judge = make_backend(config)
        try:
            results = collect(judge.structured, [ask(f"Question {n}?") for n in range(4)],
                              STATEMENTS, 16)
        finally:
            release_backend(config)
        reasons = [results[n].error or "" for n in range(4)]
        assert all("unreachable" in reason for reason in reasons[1:]), reasons
        assert f"{DEAD_AFTER} attempts in a row" in reasons[-1]
