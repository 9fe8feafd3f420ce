"""From judge steps to per-sample results: the share of "yes" verdicts, and the one chain that
answer relevance, faithfulness, context recall, bias and toxicity share: extract a text's items
(statements or opinions), judge each item, score the share of "yes".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...base.types import Outcome
from .. import scoring
from ..judge_metric import first_failure
from ..results import SampleResult
from .extraction import extract_opinions, extract_statements
from .verdicts import VerdictStep, verdict_dicts, verdict_jobs


def yes_share(judged: Outcome, empty: float = 0.0) -> float:
    """The share of "yes" verdicts of a verdict step; ``empty`` when nothing was judged."""
    return scoring.proportion([v.yes for v in judged.value], empty=empty)


def dropped_details(*steps: Outcome | None) -> dict[str, Any]:
    """A row's ``dropped_items`` (how many extracted items the grounding check dropped) and,
    when there are any, the ``unsupported`` items themselves."""
    dropped = [item for step in steps if step is not None for item in step.dropped]
    return {"dropped_items": len(dropped), **({"unsupported": dropped} if dropped else {})}


def verdict_share(verdicts: Sequence[Outcome | None], empty: float = 0.0) -> list[SampleResult]:
    """Per sample, the share of "yes" verdicts, with the verdicts and reasons as details; a
    failed step makes that sample unmeasured."""
    return [
        first_failure(judged) or SampleResult.measured(
            yes_share(judged, empty), verdicts=verdict_dicts(judged.value))
        for judged in verdicts
    ]


@dataclass(frozen=True)
class ItemVerdicts:
    """One text's extracted items and the judge's verdicts on them (``None``: not asked, the
    extraction failed). ``key`` names the items in the details (statements, claims,
    opinions)."""

    items: Outcome
    verdicts: Outcome | None
    key: str

    def failure(self) -> SampleResult | None:
        """The unmeasured result of the first failed step, else ``None``."""
        return first_failure(self.items, self.verdicts)

    def yes_share(self, empty: float = 0.0) -> float:
        """The share of items judged "yes"; ``empty`` when there are none."""
        return yes_share(self.verdicts, empty)

    def details(self) -> dict[str, Any]:
        """The items, the verdicts with their reasons, and the items the grounding dropped."""
        return {self.key: self.items.value, "verdicts": verdict_dicts(self.verdicts.value),
                **dropped_details(self.items)}

    def scored(self, score: float) -> SampleResult:
        """A measured sample of ``score`` with :meth:`details`."""
        return SampleResult.measured(score, **self.details())


def first_failure_of(chains: Sequence[ItemVerdicts]) -> SampleResult | None:
    """The unmeasured result of the first failed step of several chains (one per reference),
    else ``None``."""
    return first_failure(*(step for chain in chains for step in (chain.items, chain.verdicts)))


def _judged(judge: Any, step: VerdictStep, items: list[Outcome], texts: Sequence[str],
            fields: Sequence[dict[str, str]] | None) -> list[ItemVerdicts]:
    verdicts = step.ask(judge, verdict_jobs(judge, items, texts, fields))
    return [ItemVerdicts(found, judged, step.items_field)
            for found, judged in zip(items, verdicts, strict=True)]


def statement_verdicts(judge: Any, step: VerdictStep, texts: Sequence[str],
                       fields: Sequence[dict[str, str]] | None = None,
                       questions: Sequence[str | None] | None = None) -> list[ItemVerdicts]:
    """Per text, its statements (split with its question shown, when ``questions`` are given)
    and ``step``'s verdict on each, asked with the template's other ``fields`` (one dict per
    text): answer relevance, faithfulness, context recall."""
    return _judged(judge, step, extract_statements(judge, texts, questions), texts, fields)


def opinion_verdicts(judge: Any, step: VerdictStep, texts: Sequence[str]) -> list[ItemVerdicts]:
    """Per text, the writer's opinions (one extraction, shared by bias and toxicity through the
    call cache) and ``step``'s verdict on each."""
    return _judged(judge, step, extract_opinions(judge, texts), texts, None)
