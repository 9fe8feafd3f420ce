"""Which prompts a metric sends: one answer for every place that shows it.

Each judge metric declares its prompts once, on its class (``JudgeMetric.PROMPTS``, or
``sent_prompts`` where they are written from the options: g_eval's from the criteria,
pairwise's from its criteria). The run and comparison reports (the prompt versions), the
``prompts`` property of ``assert_metric``'s JUnit record, an alignment profile's prompt record
and a judge card's prompts all read :func:`prompt_records` (or :func:`prompt_ids`), so they
always name the same set. A prompt's digest is the first 12 hex digits of the sha256 of
``name@version``, a newline and its text: the digest ``tests/shared/test_prompts.py`` pins, cut.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from ..base.options import check_options
from .registry import METRICS, metric_class
from .steps.prompts import PromptTemplate

__all__ = ["DIGEST_DIGITS", "metric_prompts", "prompt_digest", "prompt_ids", "prompt_records",
           "records_text"]

DIGEST_DIGITS = 12


def metric_prompts(metric: str, options: Mapping[str, Any] | None = None
                   ) -> tuple[PromptTemplate, ...]:
    """The templates ``metric`` sends with ``options`` (a metric's own options, checked as
    ``compute`` checks them; any other key, a judge option say, is ignored; a required option
    not given is left out and the declaration shows it as a ``{field}``), sorted by prompt id.
    A metric without a judge sends none."""
    if metric not in METRICS or not METRICS[metric].judge:
        return ()
    cls = metric_class(metric)
    given = {k: v for k, v in (options or {}).items() if k in {o.name for o in cls.OPTIONS}}
    declared = [o for o in cls.OPTIONS if o.name in given or not o.required]
    checked = check_options(metric, declared, given)
    sent = {t.prompt_id: t for t in cls.sent_prompts(**checked)}
    return tuple(sent[pid] for pid in sorted(sent))


def prompt_digest(template: PromptTemplate) -> str:
    text = f"{template.prompt_id}\n{template.text}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_DIGITS]


def prompt_records(metric: str, options: Mapping[str, Any] | None = None
                   ) -> list[dict[str, str]]:
    """Each prompt ``metric`` sends with ``options``: its name, version and digest."""
    return [{"name": t.name, "version": t.version, "digest": prompt_digest(t)}
            for t in metric_prompts(metric, options)]


def prompt_ids(metrics: Iterable[str],
               metric_options: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """The ids (``name@version``) of the prompts the ``metrics`` send (``metric_options``:
    ``{metric: {option: value}}``), sorted, each once."""
    return sorted({t.prompt_id for m in metrics
                   for t in metric_prompts(m, (metric_options or {}).get(m))})


def records_text(records: Iterable[Mapping[str, str]]) -> str:
    """``name@version:digest``, space-separated: the records on one line."""
    return " ".join(f"{r['name']}@{r['version']}:{r['digest']}" for r in records)
