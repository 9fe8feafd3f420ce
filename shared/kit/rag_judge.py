"""The judge steps of the RAG metrics (Valor-style, RAGAS), and the step machinery that
:mod:`.text_judge` (bias, toxicity, summary coherence) builds on.

Each step builds its requests from one template of :mod:`.prompts` and one JSON schema per
request, and sends them through the runner's structured path, so answers are constrained (or
validated) and cached. Work is shared through the call cache: the statements of a text are always
asked for with the same prompt, schema and token limit, whichever metric asks, so answer
correctness, answer relevance, faithfulness and context recall reuse each other's extractions.

A step never raises for a judge fault: each result is an :class:`~shared.base.types.Outcome` that
holds a value or the reason it has none (the metric reports that sample as unmeasured, see
:func:`shared.kit.judge_metric.first_failure`).

Every step passes grounding checks (:mod:`.grounding`) to the runner: an extraction must be
supported by its text and copy no example of the prompt; a reason must not be a format
placeholder; verdict ``k`` echoes ``"item": k`` and its reason is not about another item. A
failed check gets the runner's one repair retry, then makes the sample unmeasured. An extraction
whose items are mostly supported keeps those and drops the rest (``Outcome.dropped``; the metrics
report them as ``dropped_items`` in the row's details).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base.types import Outcome
from ..engine import grounding, prompts
from ..engine.prompts import PromptTemplate
from . import scoring
from .judge_metric import first_failure
from .results import SampleResult

MAX_ITEMS = 10  # statements / opinions extracted from one text
ITEM_MAX_CHARS = 160  # one extracted statement or opinion
REASON_MAX_CHARS = 80  # the judge's reason for one verdict
YES_NO = ("yes", "no")
DRY_RUN_NOTE = "dry run: later steps estimated as one request per sample"


# --- schemas ----------------------------------------------------------------------------------

def object_schema(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _verdict_items(labels: Sequence[str], n: int) -> dict[str, Any]:
    """n verdicts, the k-th echoing ``"item": k`` (its item's number; docs/GROUNDING.md)."""
    items = [object_schema({
        "item": {"const": k},
        "verdict": {"type": "string", "enum": list(labels)},
        "reason": {"type": "string", "maxLength": REASON_MAX_CHARS},
    }) for k in range(1, n + 1)]
    return {"type": "array", "prefixItems": items, "minItems": n, "maxItems": n}


def list_schema(key: str, max_items: int = MAX_ITEMS) -> dict[str, Any]:
    """``{key: [str, ...]}`` with at most ``max_items`` short, non-empty strings."""
    strings = {"type": "string", "minLength": 1, "maxLength": ITEM_MAX_CHARS}
    return object_schema({key: {"type": "array", "items": strings, "maxItems": max_items}})


def verdicts_schema(n: int, labels: Sequence[str] = YES_NO) -> dict[str, Any]:
    """``{"verdicts": [{"verdict", "reason"}] * n}``: exactly one verdict per item judged."""
    return object_schema({"verdicts": _verdict_items(labels, n)})


def correctness_schema(n_answer: int, n_reference: int) -> dict[str, Any]:
    """One TP/FP verdict per answer statement and one TP/FN verdict per reference statement."""
    return object_schema({
        "answer": _verdict_items(("TP", "FP"), n_answer),
        "reference": _verdict_items(("TP", "FN"), n_reference),
    })


def token_limit(schema_chars: int) -> int:
    """A completion limit for an answer of at most ``schema_chars`` characters (the schema's
    bounds): two characters per token, a margin over English text, so that a constrained answer
    is not cut off. A dry run counts this limit as the step's completion tokens (an upper
    estimate)."""
    return schema_chars // 2 + 64


LIST_MAX_TOKENS = token_limit(MAX_ITEMS * (ITEM_MAX_CHARS + 8))


def _verdict_max_tokens(n: int) -> int:
    return token_limit(n * (REASON_MAX_CHARS + 40))


# --- results ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    """The judge's verdict on one item (a statement, opinion, claim or context)."""

    item: str
    verdict: str
    reason: str

    @property
    def yes(self) -> bool:
        return self.verdict in ("yes", "TP")

    def as_dict(self) -> dict[str, str]:
        return {"item": self.item, "verdict": self.verdict, "reason": self.reason}


@dataclass
class VerdictJob:
    """Items to judge with one request, and the template's other fields (question, ...)."""

    items: list[str]
    fields: dict[str, str] = field(default_factory=dict)


@dataclass
class CorrectnessJob:
    answer_statements: list[str]
    reference_statements: list[str]
    question: str | None = None


def is_dry_run(judge: Any) -> bool:
    config = getattr(judge, "config", None)
    return bool(getattr(config, "dry_run", False))


def items_or_estimate(judge: Any, step: Outcome, text: str) -> list[str] | None:
    """The extracted items of ``step``; in a dry run, a stand-in list (``[text]``) so that the
    next step is planned as one request per sample; ``None`` when extraction failed."""
    if step.ok:
        return step.value
    if is_dry_run(judge):
        return [text]
    return None


def verdict_jobs(judge: Any, steps: Sequence[Outcome], texts: Sequence[str],
                 fields: Sequence[dict[str, str]] | None = None) -> list[VerdictJob | None]:
    """Per extraction step, the job that judges its items, with the template's other
    ``fields`` (one dict per step); ``None`` where the extraction failed. In a dry run the
    step's text stands in for its items (:func:`items_or_estimate`)."""
    fields = fields if fields is not None else [{}] * len(steps)
    jobs: list[VerdictJob | None] = []
    for step, text, extra in zip(steps, texts, fields, strict=True):
        items = items_or_estimate(judge, step, text)
        jobs.append(None if items is None else VerdictJob(items, dict(extra)))
    return jobs


def as_json_list(items: Sequence[str]) -> str:
    return json.dumps(list(items), ensure_ascii=False)


def _clean(items: Sequence[str]) -> list[str]:
    """Stripped, non-empty, first occurrence of each item (a weak judge repeats itself)."""
    seen: dict[str, None] = {}
    for item in items:
        item = " ".join(item.split())
        if item:
            seen.setdefault(item, None)
    return list(seen)


def _verdicts(items: Sequence[str], answers: Sequence[dict[str, str]]) -> list[Verdict]:
    """Pair items with the judge's verdicts (the schema made the two lists equally long)."""
    pairs = zip(items, answers, strict=True)
    return [Verdict(item, answer["verdict"], answer["reason"]) for item, answer in pairs]


def failed_step(desc: str, error: str | None) -> Outcome:
    return Outcome(error=f"{desc}: {error}")


# --- steps ------------------------------------------------------------------------------------

def extract_items(judge: Any, templates: Sequence[PromptTemplate], key: str,
                  texts: Sequence[str], desc: str, questions: Sequence[str | None] | None = None,
                  require_items: bool = False) -> list[Outcome]:
    """Per text, the ``key`` items the judge lists, cleaned and grounded. ``templates``:
    (without a question, with a question); ``questions``: one per text or ``None``; a text with
    a question is extracted with the second template, and the question's words count as support
    for its items."""
    questions = list(questions) if questions is not None else [None] * len(texts)
    requests, checks, sources = [], [], []
    for text, question in zip(texts, questions, strict=True):
        if question is None:
            requests.append(templates[0].request(text=text))
            examples = templates[0].examples
        else:
            requests.append(templates[1].request(text=text, question=question))
            examples = templates[1].examples
        sources.append((text, question or "", examples))
        checks.append(grounding.extraction_check(key, text, question or "", examples,
                                                 require_items=require_items))
    outcomes = judge.structured(requests, list_schema(key), max_tokens=LIST_MAX_TOKENS,
                                desc=desc, checks=checks)
    steps = []
    for outcome, (text, question, examples) in zip(outcomes, sources, strict=True):
        if not outcome.ok:
            steps.append(failed_step(desc, outcome.error))
            continue
        report = grounding.ground_items(_clean(outcome.value[key]), text, question, examples)
        steps.append(Outcome(report.kept, dropped=report.unsupported))
    return steps


def extract_statements(judge: Any, texts: Sequence[str],
                       questions: Sequence[str | None] | None = None) -> list[Outcome]:
    """Per text, its statements (``list[str]``): the first step of answer correctness, answer
    relevance, faithfulness (claims) and context recall (the reference's statements). A text
    with a question (``questions``, one per text or ``None``) is split with the question shown,
    so names left out of a short answer come from the question."""
    return extract_items(judge, (prompts.STATEMENTS, prompts.STATEMENTS_WITH_QUESTION),
                         "statements", texts, "statements", questions, require_items=True)


def _structured_by_size(judge: Any, requests: list[Any], schemas: list[dict[str, Any]],
                        sizes: list[int], desc: str, checks: list[Any]) -> list[Any]:
    """``judge.structured`` with a token limit that depends only on each request's own number
    of verdicts, so a request's cache key does not depend on the other rows of the batch;
    ``checks`` (:mod:`.grounding` checks, one per request) run on the answers."""
    outcomes: list[Any] = [None] * len(requests)
    for size in sorted(set(sizes)):
        picked = [k for k, s in enumerate(sizes) if s == size]
        answers = judge.structured([requests[k] for k in picked], [schemas[k] for k in picked],
                                   max_tokens=_verdict_max_tokens(size), desc=desc,
                                   checks=[checks[k] for k in picked])
        for k, answer in zip(picked, answers, strict=True):
            outcomes[k] = answer
    return outcomes


def judge_items(judge: Any, template: PromptTemplate, items_field: str,
                jobs: Sequence[VerdictJob | None], desc: str) -> list[Outcome | None]:
    """One request per job: a yes/no verdict with a short reason for each of its items.

    ``value`` is a list of :class:`Verdict` in item order. A ``None`` job (an earlier step
    failed) gives ``None``; a job without items gives an empty list and sends nothing.
    """
    results: list[Outcome | None] = [None] * len(jobs)
    send: list[int] = []
    for i, job in enumerate(jobs):
        if job is None:
            continue
        if not job.items:
            results[i] = Outcome([])
        else:
            send.append(i)
    if not send:
        return results
    requests = [
        template.request(**jobs[i].fields, **{items_field: as_json_list(jobs[i].items)})
        for i in send
    ]
    schemas = [verdicts_schema(len(jobs[i].items)) for i in send]
    sizes = [len(jobs[i].items) for i in send]
    checks = [grounding.verdicts_check({"verdicts": jobs[i].items}, template.examples,
                                       " ".join(jobs[i].fields.values())) for i in send]
    outcomes = _structured_by_size(judge, requests, schemas, sizes, desc, checks)
    for i, outcome in zip(send, outcomes, strict=True):
        if not outcome.ok:
            results[i] = failed_step(desc, outcome.error)
            continue
        results[i] = Outcome(_verdicts(jobs[i].items, outcome.value["verdicts"]))
    return results


def correctness_verdicts(judge: Any, jobs: Sequence[CorrectnessJob | None]) -> list[Outcome | None]:
    """Answer correctness: TP/FP for each answer statement, TP/FN for each reference statement.

    ``value`` is ``{"TP": [...], "FP": [...], "FN": [...]}`` of :class:`Verdict` (TP holds the
    answer statements the reference supports). When either list is empty there is nothing to
    ask: every answer statement is FP and every reference statement FN.
    """
    results: list[Outcome | None] = [None] * len(jobs)
    send: list[int] = []
    for i, job in enumerate(jobs):
        if job is None:
            continue
        if not job.answer_statements or not job.reference_statements:
            results[i] = Outcome({
                "TP": [],
                "FP": [Verdict(s, "FP", "no reference statements") for s in job.answer_statements],
                "FN": [Verdict(s, "FN", "no answer statements") for s in job.reference_statements],
            })
        else:
            send.append(i)
    if not send:
        return results
    requests = []
    for i in send:
        job = jobs[i]
        lists = {
            "answer_statements": as_json_list(job.answer_statements),
            "reference_statements": as_json_list(job.reference_statements),
        }
        if job.question is None:
            requests.append(prompts.ANSWER_CORRECTNESS.request(**lists))
        else:
            requests.append(
                prompts.ANSWER_CORRECTNESS_WITH_QUESTION.request(question=job.question, **lists)
            )
    schemas = [
        correctness_schema(len(jobs[i].answer_statements), len(jobs[i].reference_statements))
        for i in send
    ]
    sizes = [len(jobs[i].answer_statements) + len(jobs[i].reference_statements) for i in send]
    checks = [grounding.verdicts_check(
        {"answer": jobs[i].answer_statements, "reference": jobs[i].reference_statements},
        prompts.ANSWER_CORRECTNESS.examples, jobs[i].question or "") for i in send]
    outcomes = _structured_by_size(judge, requests, schemas, sizes, "answer_correctness", checks)
    for i, outcome in zip(send, outcomes, strict=True):
        if not outcome.ok:
            results[i] = failed_step("answer_correctness", outcome.error)
            continue
        job = jobs[i]
        answer = _verdicts(job.answer_statements, outcome.value["answer"])
        reference = _verdicts(job.reference_statements, outcome.value["reference"])
        results[i] = Outcome({
            "TP": [v for v in answer if v.verdict == "TP"],
            "FP": [v for v in answer if v.verdict == "FP"],
            "FN": [v for v in reference if v.verdict == "FN"],
        })
    return results


def verdict_dicts(verdicts: Sequence[Verdict]) -> list[dict[str, str]]:
    return [v.as_dict() for v in verdicts]


def dropped_details(*steps: Outcome | None) -> dict[str, Any]:
    """A row's ``dropped_items`` (how many extracted items the grounding check dropped) and,
    when there are any, the ``unsupported`` items themselves."""
    dropped = [item for step in steps if step is not None for item in step.dropped]
    return {"dropped_items": len(dropped), **({"unsupported": dropped} if dropped else {})}


def yes_share(judged: Outcome, empty: float = 0.0) -> float:
    """The share of "yes" verdicts of a verdict step; ``empty`` when nothing was judged."""
    return scoring.proportion([v.yes for v in judged.value], empty=empty)


def verdict_share(verdicts: Sequence[Outcome | None], empty: float = 0.0) -> list[SampleResult]:
    """Per sample, the share of "yes" verdicts, with the verdicts and reasons as details; a
    failed step makes that sample unmeasured."""
    return [
        first_failure(judged) or SampleResult.measured(
            yes_share(judged, empty), verdicts=verdict_dicts(judged.value))
        for judged in verdicts
    ]
