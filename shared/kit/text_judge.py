"""Judge steps that judge a text by itself rather than against contexts or a reference: the
writer's opinions and whether each is flagged (bias, toxicity: one shared extraction, so the two
metrics reuse each other's opinions through the call cache), and a summary's 1-5 coherence
rating. Built on :mod:`.rag_judge`'s step machinery; every step returns one
:class:`~shared.base.types.Outcome` per sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base.types import Outcome
from ..engine import grounding, prompts
from ..engine.prompts import PromptTemplate
from .judge_metric import first_failure
from .rag_judge import (
    dropped_details,
    extract_items,
    failed_step,
    judge_items,
    object_schema,
    token_limit,
    verdict_dicts,
    verdict_jobs,
    yes_share,
)
from .results import SampleResult

SUMMARY_REASON_MAX_CHARS = 160


def coherence_schema() -> dict[str, Any]:
    """A 1-5 rating with a short reason."""
    return object_schema({
        "reason": {"type": "string", "maxLength": SUMMARY_REASON_MAX_CHARS},
        "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
    })


def extract_opinions(judge: Any, texts: Sequence[str]) -> list[Outcome]:
    """Per text, the writer's opinions (``list[str]``): the first step of bias and toxicity."""
    return extract_items(judge, (prompts.OPINIONS, prompts.OPINIONS), "opinions", texts, "opinions")


def flagged_opinion_share(judge: Any, predictions: Sequence[str], template: PromptTemplate,
                          desc: str) -> list[SampleResult]:
    """Bias and toxicity: the opinions of each prediction (one shared extraction), the judge's
    verdict on each, and the share flagged; no opinions scores 0.0."""
    opinions = extract_opinions(judge, predictions)
    verdicts = judge_items(judge, template, "opinions",
                           verdict_jobs(judge, opinions, predictions), desc)
    return [
        first_failure(step, judged) or SampleResult.measured(
            yes_share(judged), opinions=step.value, verdicts=verdict_dicts(judged.value),
            **dropped_details(step))
        for step, judged in zip(opinions, verdicts, strict=True)
    ]


def rate_summaries(judge: Any, sources: Sequence[str], summaries: Sequence[str]) -> list[Outcome]:
    """Summary coherence: per sample ``{"score": 1..5, "reason": str}``."""
    requests = [prompts.SUMMARY_COHERENCE.request(source=s, summary=p)
                for s, p in zip(sources, summaries, strict=True)]
    check = grounding.reasons_check([""], prompts.SUMMARY_COHERENCE.examples)
    outcomes = judge.structured(requests, coherence_schema(),
                                max_tokens=token_limit(SUMMARY_REASON_MAX_CHARS + 40),
                                desc="summary_coherence", checks=[check] * len(requests))
    return [
        Outcome({"score": o.value["score"], "reason": o.value["reason"]}) if o.ok
        else failed_step("summary_coherence", o.error)
        for o in outcomes
    ]
