"""What the remote protocols without log-probabilities share (Anthropic's Messages API,
Amazon Bedrock's Converse API): Yes/No scoring is refused before any request, and label
requests (g_eval, pairwise) read the label the judge writes (``method`` "sampled")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ...base.types import JudgeRequest, LabelAnswer, Outcome, TokenUsage
from ..logprobs import sampled_answer
from .base import LogprobsUnavailable, ResultCallback
from .openai_responses import label_written
from .registry import LOCAL
from .remote import RemoteBackend


def usage_with_cache(field: Callable[[str], Any], prompt: str, answer: str, cache_read: str,
                     cache_write: str) -> TokenUsage:
    """A reply's token usage from its count fields (``field(name)``, a count that is no int
    read as 0), for a protocol that reports prompt-cache reads and writes apart from its
    prompt tokens: they count as prompt tokens, and apart as cached and cache-write tokens."""
    def count(name: str) -> int:
        value = field(name)
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0

    return TokenUsage(prompt_tokens=count(prompt) + count(cache_read) + count(cache_write),
                      completion_tokens=count(answer), cached_tokens=count(cache_read),
                      cache_write_tokens=count(cache_write))


class WrittenAnswerBackend(RemoteBackend):
    """A remote judge whose protocol returns no log-probabilities: it gives its request for a
    short written answer (:meth:`_write`) and its readers of that answer's text and usage
    (:attr:`RemoteBackend.read_text`, :attr:`RemoteBackend.read_usage`)."""

    async def _write(self, request: JudgeRequest, sampled: bool) -> Any:
        """The protocol's request for a short written answer to ``request``; ``sampled``: for
        :meth:`sample_labels`, at the protocol's sampling temperature."""
        raise NotImplementedError

    def yes_no(self, requests: Sequence[JudgeRequest], top_k: int,
               on_result: ResultCallback) -> NoReturn:
        raise LogprobsUnavailable(
            f"provider={self.provider!r} (model {self.model!r}) returns no log-probabilities; "
            "a metric scored from the judge's Yes/No log-probabilities needs the first answer "
            "token's top log-probabilities. Choose a provider that returns them (openai, "
            f"gemini, a vLLM or llama.cpp server) or the local backend (provider={LOCAL!r}).")

    def label_probabilities(self, requests: Sequence[JudgeRequest], labels: Sequence[str],
                            on_result: ResultCallback) -> None:
        """The label the judge writes (probability 1.0, ``method`` "sampled")."""
        self._written(requests, labels, label_written, False, on_result)

    def sample_labels(self, requests: Sequence[JudgeRequest], labels: Sequence[str],
                      samples: Sequence[int], on_result: ResultCallback) -> None:
        """Each answer sampled by the protocol (:meth:`_write` with ``sampled``); these
        protocols take no seed, so the answers differ by chance, each cached under its number
        all the same."""
        self._written(requests, labels, sampled_answer, True, on_result)

    def _written(self, requests: Sequence[JudgeRequest], labels: Sequence[str],
                 label: Callable[[str, tuple[str, ...]], LabelAnswer], sampled: bool,
                 on_result: ResultCallback) -> None:
        """Each request's written answer, read as ``label(text, labels)`` with its usage."""
        labels = tuple(labels)

        async def one(request: JudgeRequest) -> Outcome:
            return await self._answer(
                lambda: self._write(request, sampled),
                lambda answer: Outcome(value=label(self.read_text(answer), labels),
                                       usage=self.read_usage(answer)), self.read_usage)

        self._run(requests, one, on_result, probe_first=False)
