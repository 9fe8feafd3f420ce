"""The extraction steps: the judge lists a text's statements or its writer's opinions.

Work is shared through the call cache: a text's statements are always asked for with the same
prompt, schema and token limit, whichever metric asks, so answer correctness, answer relevance,
faithfulness and context recall reuse each other's extractions (bias and toxicity their
opinions).

An extraction must be supported by its text and copy no example of the prompt
(:func:`shared.kit.steps.grounding.extraction_check`); an answer whose items are mostly supported
keeps those and drops the rest (``Outcome.dropped``; the metrics report them as
``dropped_items`` in the row's details).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...base.types import Outcome
from ...engine.distinct import item_key
from ...engine.runner import Check
from . import grounding, prompts
from .base import JudgeStep, ask, is_dry_run, object_schema, token_limit

MAX_ITEMS = 10  # statements / opinions extracted from one text
ITEM_MAX_CHARS = 160  # one extracted statement or opinion
LIST_MAX_TOKENS = token_limit(MAX_ITEMS * (ITEM_MAX_CHARS + 8))


def list_schema(key: str, max_items: int = MAX_ITEMS) -> dict[str, Any]:
    """``{key: [str, ...]}`` with at most ``max_items`` short, non-empty, distinct strings
    (``uniqueItems``: the local judge ends a list at its first repeat, and a weak judge that
    repeats an item repeats it until ``max_items``; :mod:`shared.engine.distinct`)."""
    strings = {"type": "string", "minLength": 1, "maxLength": ITEM_MAX_CHARS}
    return object_schema({key: {"type": "array", "items": strings, "maxItems": max_items,
                                "uniqueItems": True}})


def clean_items(items: Sequence[str]) -> list[str]:
    """Stripped, non-empty, first occurrence of each item (a weak judge repeats itself)."""
    seen: dict[str, None] = {}
    for item in items:
        item = item_key(item)  # the one notion of "the same item", as uniqueItems lists use it
        if item:
            seen.setdefault(item, None)
    return list(seen)


@dataclass(frozen=True)
class ExtractionStep(JudgeStep):
    """The judge lists the ``key`` items of a text. A job: ``(text, question)``; a template
    with a ``{question}`` field shows the question, whose words then count as support for the
    items. ``require_items``: a text with words must yield at least one item."""

    key: str = "statements"
    require_items: bool = False

    def fields(self, job: tuple[str, str | None]) -> dict[str, str]:
        text, question = job
        return {"text": text} if question is None else {"text": text, "question": question}

    def schema(self, job: tuple[str, str | None]) -> dict[str, Any]:
        return list_schema(self.key)

    def check(self, job: tuple[str, str | None]) -> Check:
        text, question = job
        return grounding.extraction_check(self.key, text, question or "", self.template.examples,
                                          require_items=self.require_items)

    def max_tokens(self, job: tuple[str, str | None]) -> int:
        return LIST_MAX_TOKENS

    def read(self, job: tuple[str, str | None], answer: Any) -> Outcome:
        text, question = job
        report = grounding.ground_items(clean_items(answer[self.key]), text, question or "",
                                        self.template.examples)
        return Outcome(report.kept, dropped=report.unsupported)


STATEMENTS = ExtractionStep(prompts.STATEMENTS, "statements", "statements", require_items=True)
STATEMENTS_WITH_QUESTION = ExtractionStep(prompts.STATEMENTS_WITH_QUESTION, "statements",
                                          "statements", require_items=True)
OPINIONS = ExtractionStep(prompts.OPINIONS, "opinions", "opinions")


def extract_statements(judge: Any, texts: Sequence[str],
                       questions: Sequence[str | None] | None = None) -> list[Outcome]:
    """Per text, its statements (``list[str]``): the first step of answer correctness, answer
    relevance, faithfulness (claims) and context recall (the reference's statements). A text
    with a question (``questions``, one per text or ``None``) is split with the question shown,
    so names left out of a short answer come from the question."""
    questions = list(questions) if questions is not None else [None] * len(texts)
    return ask(judge, [(STATEMENTS if question is None else STATEMENTS_WITH_QUESTION,
                        (text, question))
                       for text, question in zip(texts, questions, strict=True)])


def extract_opinions(judge: Any, texts: Sequence[str]) -> list[Outcome]:
    """Per text, the writer's opinions (``list[str]``): the first step of bias and toxicity."""
    return OPINIONS.ask(judge, [(text, None) for text in texts])


def items_or_estimate(judge: Any, step: Outcome, text: str) -> list[str] | None:
    """The extracted items of ``step``; in a dry run, a stand-in list (``[text]``) so that the
    next step is planned as one request per sample; ``None`` when extraction failed."""
    if step.ok:
        return step.value
    if is_dry_run(judge):
        return [text]
    return None
