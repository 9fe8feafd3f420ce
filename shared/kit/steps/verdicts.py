"""The verdict steps: the judge gives one verdict with a short reason per item of a list
(a statement, opinion, claim or context), and answer correctness's TP/FP/FN classification.

Each verdict echoes its item's number (``"item": k``, held to its position by the schema) and its
reason must be about that item (:func:`shared.kit.steps.grounding.verdicts_check`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...base.types import Outcome
from ...engine.runner import Check
from . import grounding, prompts
from .base import JudgeStep, ask, object_schema, token_limit
from .extraction import items_or_estimate

REASON_MAX_CHARS = 80  # the judge's reason for one verdict
YES_NO = ("yes", "no")


def _verdict_items(labels: Sequence[str], n: int) -> dict[str, Any]:
    """n verdicts, the k-th echoing ``"item": k`` (its item's number; docs/GROUNDING.md)."""
    items = [object_schema({
        "item": {"const": k},
        "verdict": {"type": "string", "enum": list(labels)},
        "reason": {"type": "string", "maxLength": REASON_MAX_CHARS},
    }) for k in range(1, n + 1)]
    return {"type": "array", "prefixItems": items, "minItems": n, "maxItems": n}


def verdicts_schema(n: int, labels: Sequence[str] = YES_NO) -> dict[str, Any]:
    """``{"verdicts": [{"verdict", "reason"}] * n}``: exactly one verdict per item judged."""
    return object_schema({"verdicts": _verdict_items(labels, n)})


def correctness_schema(n_answer: int, n_reference: int) -> dict[str, Any]:
    """One TP/FP verdict per answer statement and one TP/FN verdict per reference statement."""
    return object_schema({
        "answer": _verdict_items(("TP", "FP"), n_answer),
        "reference": _verdict_items(("TP", "FN"), n_reference),
    })


def verdict_max_tokens(n: int) -> int:
    """The token limit of an answer holding ``n`` verdicts."""
    return token_limit(n * (REASON_MAX_CHARS + 40))


@dataclass(frozen=True)
class JudgedItem:
    """The judge's verdict on one item (a statement, opinion, claim or context)."""

    item: str
    verdict: str
    reason: str

    @property
    def yes(self) -> bool:
        return self.verdict in ("yes", "TP")

    def as_dict(self) -> dict[str, str]:
        return {"item": self.item, "verdict": self.verdict, "reason": self.reason}


def _paired(items: Sequence[str], answers: Sequence[dict[str, str]]) -> list[JudgedItem]:
    """Items paired with the judge's verdicts (the schema made the two lists equally long)."""
    pairs = zip(items, answers, strict=True)
    return [JudgedItem(item, answer["verdict"], answer["reason"]) for item, answer in pairs]


@dataclass
class VerdictJob:
    """Items to judge with one request, and the template's other fields (question, ...)."""

    items: list[str]
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class VerdictStep(JudgeStep):
    """A yes/no verdict with a short reason per item of a :class:`VerdictJob`; the items enter
    the template's ``items_field`` as one JSON list. Value: the :class:`JudgedItem` list, in item
    order; a job without items sends nothing and gives an empty list."""

    items_field: str = "statements"

    def fields(self, job: VerdictJob) -> dict[str, str]:
        return {**job.fields, self.items_field: as_json_list(job.items)}

    def schema(self, job: VerdictJob) -> dict[str, Any]:
        return verdicts_schema(len(job.items))

    def check(self, job: VerdictJob) -> Check:
        return grounding.verdicts_check({"verdicts": job.items}, self.template.examples,
                                        " ".join(job.fields.values()))

    def max_tokens(self, job: VerdictJob) -> int:
        return verdict_max_tokens(len(job.items))

    def read(self, job: VerdictJob, answer: Any) -> Outcome:
        return Outcome(_paired(job.items, answer["verdicts"]))

    def without_judge(self, job: VerdictJob) -> Outcome | None:
        return None if job.items else Outcome([])


ANSWER_RELEVANCE = VerdictStep(prompts.ANSWER_RELEVANCE, "answer_relevance", "statements")
BIAS = VerdictStep(prompts.BIAS, "bias", "opinions")
TOXICITY = VerdictStep(prompts.TOXICITY, "toxicity", "opinions")
CONTEXT_PRECISION = VerdictStep(prompts.CONTEXT_PRECISION, "context_precision", "contexts")
CONTEXT_RECALL = VerdictStep(prompts.CONTEXT_RECALL, "context_recall", "statements")
CONTEXT_RELEVANCE = VerdictStep(prompts.CONTEXT_RELEVANCE, "context_relevance", "contexts")
FAITHFULNESS = VerdictStep(prompts.FAITHFULNESS, "faithfulness", "claims")
HALLUCINATION = VerdictStep(prompts.HALLUCINATION, "hallucination", "contexts")


@dataclass
class CorrectnessJob:
    answer_statements: list[str]
    reference_statements: list[str]
    question: str | None = None


@dataclass(frozen=True)
class CorrectnessStep(JudgeStep):
    """Answer correctness: TP/FP for each answer statement, TP/FN for each reference statement.

    Value: ``{"TP": [...], "FP": [...], "FN": [...]}`` of :class:`JudgedItem` (TP holds the answer
    statements the reference supports). When either list is empty there is nothing to ask: every
    answer statement is FP and every reference statement FN."""

    def fields(self, job: CorrectnessJob) -> dict[str, str]:
        lists = {"answer_statements": as_json_list(job.answer_statements),
                 "reference_statements": as_json_list(job.reference_statements)}
        return lists if job.question is None else {"question": job.question, **lists}

    def schema(self, job: CorrectnessJob) -> dict[str, Any]:
        return correctness_schema(len(job.answer_statements), len(job.reference_statements))

    def check(self, job: CorrectnessJob) -> Check:
        lists = {"answer": job.answer_statements, "reference": job.reference_statements}
        return grounding.verdicts_check(lists, self.template.examples, job.question or "")

    def max_tokens(self, job: CorrectnessJob) -> int:
        return verdict_max_tokens(len(job.answer_statements) + len(job.reference_statements))

    def read(self, job: CorrectnessJob, answer: Any) -> Outcome:
        answer_verdicts = _paired(job.answer_statements, answer["answer"])
        reference = _paired(job.reference_statements, answer["reference"])
        return Outcome({
            "TP": [v for v in answer_verdicts if v.verdict == "TP"],
            "FP": [v for v in answer_verdicts if v.verdict == "FP"],
            "FN": [v for v in reference if v.verdict == "FN"],
        })

    def without_judge(self, job: CorrectnessJob) -> Outcome | None:
        if job.answer_statements and job.reference_statements:
            return None
        return Outcome({
            "TP": [],
            "FP": [JudgedItem(s, "FP", "no reference statements") for s in job.answer_statements],
            "FN": [JudgedItem(s, "FN", "no answer statements") for s in job.reference_statements],
        })


CORRECTNESS = CorrectnessStep(prompts.ANSWER_CORRECTNESS, "answer_correctness")
CORRECTNESS_WITH_QUESTION = CorrectnessStep(prompts.ANSWER_CORRECTNESS_WITH_QUESTION,
                                            "answer_correctness")


def correctness_verdicts(judge: Any, jobs: Sequence[CorrectnessJob | None]
                         ) -> list[Outcome | None]:
    """Per job, its TP/FP/FN verdicts (:class:`CorrectnessStep`), asked with the question when
    the job has one; ``None`` for a ``None`` job."""
    return ask(judge, [(CORRECTNESS if job is None or job.question is None
                        else CORRECTNESS_WITH_QUESTION, job) for job in jobs])


def as_json_list(items: Sequence[str]) -> str:
    return json.dumps(list(items), ensure_ascii=False)


def verdict_jobs(judge: Any, steps: Sequence[Outcome], texts: Sequence[str],
                 fields: Sequence[dict[str, str]] | None = None) -> list[VerdictJob | None]:
    """Per extraction step, the job that judges its items, with the template's other
    ``fields`` (one dict per step); ``None`` where the extraction failed. In a dry run the
    step's text stands in for its items (:func:`.extraction.items_or_estimate`)."""
    fields = fields if fields is not None else [{}] * len(steps)
    jobs: list[VerdictJob | None] = []
    for step, text, extra in zip(steps, texts, fields, strict=True):
        items = items_or_estimate(judge, step, text)
        jobs.append(None if items is None else VerdictJob(items, dict(extra)))
    return jobs


def verdict_dicts(verdicts: Sequence[JudgedItem]) -> list[dict[str, str]]:
    return [v.as_dict() for v in verdicts]
