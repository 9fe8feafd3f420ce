"""Plain data types passed between metrics, the judge runner and the backends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JudgeRequest:
    """One chat request to a judge: the messages and the id of the prompt that built them.

    ``prompt_id`` is ``"<name>@<version>"``; it is part of the call-cache key, so bumping a
    prompt's version invalidates its cached answers.
    """

    messages: tuple[tuple[str, str], ...]  # (role, content) pairs
    prompt_id: str

    def as_openai_messages(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]


@dataclass
class TokenUsage:
    """A call's tokens as its provider counted them. ``cached_tokens``: the prompt tokens read
    from the provider's prompt cache (part of ``prompt_tokens``; 0 where not reported);
    ``cache_write_tokens``: those written to it (Anthropic and Bedrock bill a write at 1.25x the
    input price)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0  # prompt tokens written to the cache (billed above input)
    known: bool = True  # False: the answer reported no usable counts (its cost is unknown)

    @classmethod
    def reported(cls, prompt: Any, completion: Any, cached: Any = None,
                 cache_write: Any = None) -> TokenUsage:
        """The usage an answer reported: each count a whole number of at least 0. A prompt or
        answer count that is missing, and any count that is no such number (text, negative,
        a fraction, a boolean), makes the usage unknown (``known=False``, that count read as
        0) instead of failing the answer; a missing cache count is 0."""
        counts = [token_count(prompt), token_count(completion),
                  0 if cached is None else token_count(cached),
                  0 if cache_write is None else token_count(cache_write)]
        return cls(*(c or 0 for c in counts), known=None not in counts)  # type: ignore[misc]


def token_count(value: Any) -> int | None:
    """``value`` as a token count (an int, or a float holding a whole number, at least 0);
    None when it is no count."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else None


@dataclass
class YesNoAnswer:
    """The judge's first answer token.

    ``top`` is the first generated token's top-k list, ``(token, logprob)`` in rank order, as an
    OpenAI-compatible API returns it. ``p_yes``/``p_no`` are exact probabilities summed over the
    Yes-variants / No-variants of the full next-token distribution (local backend only).
    """

    top: list[tuple[str, float]]
    p_yes: float | None = None
    p_no: float | None = None


@dataclass
class LabelAnswer:
    """The judge's first answer token over a set of labels (G-Eval's scores, a pairwise A/B).

    ``probabilities``: each label's probability as the next token, as read, not renormalised
    (summed over the tokens whose stripped text is the label): exact from the full
    distribution (local), from the top-20 list (OpenAI-compatible), or 1.0 for the one label
    a model without log-probabilities wrote (``method`` ``"sampled"``, ``text`` its answer).
    """

    probabilities: dict[str, float]
    method: str = "logprobs"
    text: str | None = None


@dataclass
class Outcome:
    """The result of one judge request, or of one judge step for one sample: a value, or an
    error saying why there is none.

    For ``yes_no`` the value is a :class:`YesNoAnswer`; for ``structured`` the backend returns the
    raw answer text and the runner replaces it with the validated object. ``constrained``: set
    by a backend on a ``structured`` answer whose decoding enforced the request's JSON schema
    (the runner then asks for no repair of a schema error); a fact of that one call.
    ``dropped``: a step's extracted items that the text does not support (:mod:`shared.kit.steps`).
    """

    value: Any = None
    error: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    cached: bool = False
    constrained: bool = False
    dropped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None
