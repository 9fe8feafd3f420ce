"""The judge steps over conversations (OpenAI chat messages, :mod:`shared.kit.conversations`):
task completion (one Yes/No label reading of the whole transcript), conversation completeness
(the user's requests, extracted, each judged satisfied or not) and knowledge retention (the facts
the user gave, extracted per user turn; each later assistant message judged for forgetting).

The extracted items must be in the user's own words: the grounding check
(:func:`shared.kit.steps.grounding.extraction_check`) holds the requests to the user's messages and
each fact to the message it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...base.types import Outcome
from .. import scoring
from ..conversations import render
from . import prompts
from .base import ask, is_dry_run
from .chains import ItemVerdicts, dropped_details
from .criteria import read_labels
from .extraction import ExtractionStep, items_or_estimate
from .verdicts import VerdictJob, VerdictStep, as_json_list, verdict_jobs

INTENTIONS = ExtractionStep(prompts.INTENTIONS, "intentions", "intentions", require_items=True)
USER_FACTS = ExtractionStep(prompts.USER_FACTS, "user_facts", "facts")
CONVERSATION_COMPLETENESS = VerdictStep(prompts.CONVERSATION_COMPLETENESS,
                                        "conversation_completeness", "intentions")
KNOWLEDGE_RETENTION = VerdictStep(prompts.KNOWLEDGE_RETENTION, "knowledge_retention", "replies")
TASK_LABELS = ("Yes", "No")


def said(messages: Sequence[dict[str, Any]], role: str) -> list[str]:
    """The text of each message of ``role`` that has words, in order."""
    return [m["content"] for m in messages
            if m["role"] == role and isinstance(m.get("content"), str) and m["content"].strip()]


def has_assistant_turn(messages: Sequence[dict[str, Any]]) -> bool:
    """Whether the assistant said or did anything (a text or a tool call)."""
    return any(m["role"] == "assistant" and (said([m], "assistant") or m.get("tool_calls"))
               for m in messages)


def task_verdicts(judge: Any, tasks: Sequence[str], conversations: Sequence[list[dict]]
                  ) -> list[Outcome]:
    """Per conversation, the judge's reading of "was the task done" from the whole transcript
    (tool calls and results included): a :class:`~.criteria.Reading` of Yes/No."""
    requests = [prompts.TASK_COMPLETION.request(task=task, transcript=render(messages))
                for task, messages in zip(tasks, conversations, strict=True)]
    outcomes = judge.label_probabilities(requests, TASK_LABELS, desc="task_completion")
    return [read_labels(outcome, "task_completion") for outcome in outcomes]


def intention_verdicts(judge: Any, conversations: Sequence[list[dict]]) -> list[ItemVerdicts]:
    """Per conversation, the user's requests (extracted from the user's messages) and a verdict
    on each: satisfied by the conversation or not."""
    texts = ["\n\n".join(said(messages, "user")) for messages in conversations]
    found = INTENTIONS.ask(judge, [(text, None) for text in texts])
    shown = [{"conversation": render(messages)} for messages in conversations]
    verdicts = CONVERSATION_COMPLETENESS.ask(judge, verdict_jobs(judge, found, texts, shown))
    return [ItemVerdicts(items, judged, "intentions")
            for items, judged in zip(found, verdicts, strict=True)]


@dataclass(frozen=True)
class Retention:
    """One conversation's knowledge retention: the facts of each user turn (``facts``, one
    extraction per user message with words), the assistant messages judged (each after at least
    one fact) and their verdicts, one request per user turn that they follow."""

    facts: list[Outcome]
    verdicts: list[Outcome | None]

    def failure(self) -> Outcome | None:
        return next((step for step in [*self.facts, *self.verdicts]
                     if step is not None and not step.ok), None)

    def judged(self) -> list[Any]:
        return [v for step in self.verdicts if step is not None and step.ok for v in step.value]

    def share(self) -> float | None:
        """The share of the judged assistant messages that retain (verdict "yes"); ``None``
        when none was judged (no assistant message follows a fact: nothing to retain)."""
        judged = self.judged()
        return scoring.proportion([v.yes for v in judged]) if judged else None

    def details(self) -> dict[str, Any]:
        return {"facts": [fact for step in self.facts for fact in step.value],
                "verdicts": [v.as_dict() for v in self.judged()],
                **dropped_details(*self.facts)}


def retention_jobs(judge: Any, messages: list[dict], facts: Sequence[Outcome]
                    ) -> list[VerdictJob | None]:
    """The assistant messages after each user turn, judged against every fact given so far;
    ``None`` where no fact came before them (nothing to retain)."""
    jobs: list[VerdictJob | None] = []
    known: list[str] = []
    replies: list[str] = []
    turns = iter(facts)
    for message in [*messages, {"role": "user", "content": ""}]:  # the end closes the last turn
        if message["role"] == "user":
            jobs.append(VerdictJob(replies, {"facts": as_json_list(known)})
                        if known and replies else None)
            replies = []
            if said([message], "user"):
                step = next(turns)
                known += items_or_estimate(judge, step, message["content"]) or []
        elif message["role"] == "assistant" and has_assistant_turn([message]):
            replies.append(render([message]))
    return jobs


def retention_verdicts(judge: Any, conversations: Sequence[list[dict]]) -> list[Retention]:
    """Per conversation, its :class:`Retention`: first the facts of every user
    message of every conversation are extracted, then each assistant message after a fact is
    judged."""
    turns = [said(messages, "user") for messages in conversations]
    found = USER_FACTS.ask(judge, [(text, None) for texts in turns for text in texts])
    facts, start = [], 0
    for texts in turns:
        facts.append(found[start:start + len(texts)])
        start += len(texts)
    jobs = [retention_jobs(judge, messages, steps)
            if all(step.ok for step in steps) or is_dry_run(judge) else []  # else: unmeasured
            for messages, steps in zip(conversations, facts, strict=True)]
    flat = ask(judge, [(KNOWLEDGE_RETENTION, job) for row in jobs for job in row])
    results, start = [], 0
    for steps, row in zip(facts, jobs, strict=True):
        results.append(Retention(steps, flat[start:start + len(row)]))
        start += len(row)
    return results

