"""What every judge step is: one object holding its whole contract with the judge.

RAGAS pairs each prompt with its output model; here a :class:`JudgeStep` holds its prompt
(a :class:`~shared.kit.steps.prompts.PromptTemplate`, whose text and version stay in
:mod:`shared.kit.steps.prompts`), and builds, for each job it is given, the request, the JSON schema
the answer must follow, the grounding check (:mod:`shared.kit.steps.grounding`) the answer must
pass and the completion-token limit; it reads a valid answer into the step's value.

:func:`ask` sends the jobs of one or more steps through the runner's structured path, so answers
are constrained (or validated), checked and cached. A step never raises for a judge fault: each
result is an :class:`~shared.base.types.Outcome` holding a value or the reason it has none, named
after the step (``"statements: ..."``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...base.types import JudgeRequest, Outcome
from ...engine.runner import Check
from .prompts import PromptTemplate


def object_schema(properties: dict[str, Any]) -> dict[str, Any]:
    """A JSON object with exactly ``properties``, all required."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def token_limit(schema_chars: int) -> int:
    """A completion limit for an answer of at most ``schema_chars`` characters (the schema's
    bounds): two characters per token, a margin over English text, so that a constrained answer
    is not cut off. A dry run counts this limit as the step's completion tokens (an upper
    estimate)."""
    return schema_chars // 2 + 64


def failed_step(desc: str, error: str | None) -> Outcome:
    return Outcome(error=f"{desc}: {error}")


def is_dry_run(judge: Any) -> bool:
    config = getattr(judge, "config", None)
    return bool(getattr(config, "dry_run", False))


@dataclass(frozen=True)
class JudgeStep:
    """One judge step: its prompt and, per job (what one request judges), the request, the
    answer schema, the grounding check, the token limit and how the answer is read.

    ``desc`` names the step in progress bars and in the reason of a failed result. A family of
    steps (extraction, verdicts, rating) is a subclass that says what a job is."""

    template: PromptTemplate
    desc: str

    def request(self, job: Any) -> JudgeRequest:
        return self.template.request(**self.fields(job))

    def fields(self, job: Any) -> dict[str, str]:
        """The template's fields for ``job``."""
        raise NotImplementedError

    def schema(self, job: Any) -> dict[str, Any]:
        """The JSON schema of the answer to ``job``'s request."""
        raise NotImplementedError

    def check(self, job: Any) -> Check:
        """The grounding check of the answer to ``job``'s request."""
        raise NotImplementedError

    def max_tokens(self, job: Any) -> int:
        """The completion-token limit of ``job``'s request: it depends on the job alone (it is
        part of the request's cache key, which must not depend on the rest of the batch)."""
        raise NotImplementedError

    def read(self, job: Any, answer: Any) -> Outcome:
        """The step's value from a valid, checked answer."""
        raise NotImplementedError

    def without_judge(self, job: Any) -> Outcome | None:
        """The result of a job that needs no request (nothing to judge), else ``None``."""
        return None

    def ask(self, judge: Any, jobs: Sequence[Any]) -> list[Outcome | None]:
        """Per job, its result (:func:`ask`); a ``None`` job (an earlier step failed) gives
        ``None``."""
        return ask(judge, [(self, job) for job in jobs])


def ask(judge: Any, asks: Sequence[tuple[JudgeStep, Any]]) -> list[Outcome | None]:
    """Per ``(step, job)``, the step's result for the job: ``None`` for a ``None`` job, the
    step's own answer for a job that needs no request, else the judge's answer read by the step
    (or the failure, named after the step).

    The requests go out in one ``judge.structured`` call per token limit, smallest first; the
    steps of one call share its ``desc`` (a statement extraction with and without a question)."""
    results: list[Outcome | None] = [None] * len(asks)
    send: list[int] = []
    for k, (step, job) in enumerate(asks):
        if job is not None:
            results[k] = step.without_judge(job)
            if results[k] is None:
                send.append(k)
    limits = {k: asks[k][0].max_tokens(asks[k][1]) for k in send}
    for limit in sorted(set(limits.values())):
        picked = [k for k in send if limits[k] == limit]
        steps = [asks[k][0] for k in picked]
        jobs = [asks[k][1] for k in picked]
        answers = judge.structured([s.request(j) for s, j in zip(steps, jobs, strict=True)],
                                   [s.schema(j) for s, j in zip(steps, jobs, strict=True)],
                                   max_tokens=limit, desc=steps[0].desc,
                                   checks=[s.check(j) for s, j in zip(steps, jobs, strict=True)])
        for k, step, job, answer in zip(picked, steps, jobs, answers, strict=True):
            results[k] = (step.read(job, answer.value) if answer.ok
                          else failed_step(step.desc, answer.error))
    return results
