"""The one interface every judge backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...base.types import JudgeRequest, Outcome

if TYPE_CHECKING:
    from ..config import JudgeConfig

ResultCallback = Callable[[int, Outcome], None]

#: Answer tokens of a label written instead of read as log-probabilities ("Score: 4"): a
#: model without log-probabilities, or a sampled label. Every backend and the runner's
#: estimate of a dry run use this one bound.
SAMPLED_MAX_TOKENS = 16
#: The sampling seed sent to a provider that takes one (sampled answer ``s``: ``SEED + s``).
SEED = 1234


class Backend(ABC):
    """A judge model behind four operations: :meth:`yes_no` (the first answer token's
    log-probabilities), :meth:`structured` (an answer to a JSON-schema question),
    :meth:`label_probabilities` (each label's probability as the first token) and
    :meth:`sample_labels` (answers sampled at temperature 1, each naming a label); a backend
    that cannot do one of the last two raises ``NotImplementedError``. :meth:`sampling_params`
    says what each sends, for the call cache's key.

    Backends do no caching, de-duplication or progress reporting: the runner
    (:mod:`shared.engine.runner`) does. A backend reports each finished request through
    ``on_result`` as soon as it has it (so the runner can store it before the next one
    finishes), and turns every per-request failure into ``Outcome(error=...)`` instead of
    raising. It raises only for faults that make every further call pointless (e.g.
    :class:`LogprobsUnavailable`).
    """

    kind: str  # the protocol: "openai-compatible", "local", "anthropic-messages", ...
    model: str
    host: str  # base URL host for remote backends, "" for local ones
    endpoint: str = ""  # base URL without credentials (a call-cache key part), "" for local ones
    provider: str
    # True when this backend constrains structured answers to their schema at decode time (where
    # the schema allows it: each answer's Outcome.constrained says whether its decoding did)
    constrained: bool

    @classmethod
    def from_config(cls, config: JudgeConfig) -> Backend:
        """The backend for ``config`` (checked already: a backend re-checks nothing); what
        :func:`shared.engine.backends.pool.make_backend` calls. Override it when the
        constructor takes something other than the config."""
        return cls(config)  # type: ignore[call-arg]

    @abstractmethod
    def sampling_params(self, operation: str) -> dict[str, Any]:
        """Every sampling parameter sent for ``operation`` ("yes_no", "labels", "structured" or
        "label_samples").

        Part of the call-cache key."""

    @abstractmethod
    def yes_no(
        self, requests: Sequence[JudgeRequest], top_k: int, on_result: ResultCallback
    ) -> None:
        """For each request, the first generated token's top-``top_k`` log-probabilities
        (``Outcome.value`` is a :class:`shared.base.types.YesNoAnswer`)."""

    @abstractmethod
    def structured(self, requests: Sequence[JudgeRequest], json_schema: dict[str, Any],
                   max_tokens: int, on_result: ResultCallback) -> None:
        """For each request, the judge's answer text, constrained to ``json_schema`` where the
        backend can (``Outcome.value`` is the raw text; the runner validates it).
        ``Outcome.constrained`` says whether that answer's decoding enforced the schema."""

    def label_probabilities(self, requests: Sequence[JudgeRequest], labels: Sequence[str],
                            on_result: ResultCallback) -> None:
        """For each request, every label's probability as the first answer token
        (``Outcome.value`` is a :class:`shared.base.types.LabelAnswer`)."""
        raise NotImplementedError(f"{type(self).__name__} cannot read label probabilities")

    def sample_labels(self, requests: Sequence[JudgeRequest], labels: Sequence[str],
                      samples: Sequence[int], on_result: ResultCallback) -> None:
        """For each request, a short answer sampled at temperature 1 and the label it names
        (``Outcome.value`` a :class:`shared.base.types.LabelAnswer`, ``method`` "sampled": 1.0
        for the label written, all 0.0 when it names none, ``text`` the answer). ``samples[i]``
        numbers request ``i``'s sample: where the provider takes a seed, the seed is
        ``sampling_params("label_samples")["seed"] + samples[i]``, so each sample differs and a
        rerun asks the same. What G-Eval's ``samples=N`` asks of a judge."""
        raise NotImplementedError(f"{type(self).__name__} cannot sample answers")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections or memory."""


class LogprobsUnavailable(RuntimeError):
    """The model returns no log-probabilities, so Yes/No scoring (l3score) cannot run on it."""
