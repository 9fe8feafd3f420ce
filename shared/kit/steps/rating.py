"""The rating step: the judge rates a summary of a text from 1 to 5, with a short reason
(summary coherence)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...base.types import Outcome
from ...engine.runner import Check
from . import grounding, prompts
from .base import JudgeStep, object_schema, token_limit

SUMMARY_REASON_MAX_CHARS = 160


def coherence_schema() -> dict[str, Any]:
    """A 1-5 rating with a short reason."""
    return object_schema({
        "reason": {"type": "string", "maxLength": SUMMARY_REASON_MAX_CHARS},
        "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
    })


@dataclass(frozen=True)
class RatingStep(JudgeStep):
    """A 1-5 rating of a summary against its source. A job: ``(source, summary)``; value:
    ``{"score": 1..5, "reason": str}``; the reason must not be a format placeholder."""

    def fields(self, job: tuple[str, str]) -> dict[str, str]:
        source, summary = job
        return {"source": source, "summary": summary}

    def schema(self, job: tuple[str, str]) -> dict[str, Any]:
        return coherence_schema()

    def check(self, job: tuple[str, str]) -> Check:
        return grounding.reasons_check([""], self.template.examples)

    def max_tokens(self, job: tuple[str, str]) -> int:
        return token_limit(SUMMARY_REASON_MAX_CHARS + 40)

    def read(self, job: tuple[str, str], answer: Any) -> Outcome:
        return Outcome({"score": answer["score"], "reason": answer["reason"]})


SUMMARY_COHERENCE = RatingStep(prompts.SUMMARY_COHERENCE, "summary_coherence")


def rate_summaries(judge: Any, sources: Sequence[str], summaries: Sequence[str]
                   ) -> list[Outcome]:
    """Summary coherence: per sample ``{"score": 1..5, "reason": str}``."""
    return SUMMARY_COHERENCE.ask(judge, list(zip(sources, summaries, strict=True)))
