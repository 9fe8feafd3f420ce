"""``assert_metric``: a metric on a few rows, asserted with an honest verdict (pass, fail or
inconclusive: :mod:`shared.analysis.verdicts`), judge errors reported apart from quality."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..analysis.gates import check_max_unmeasured
from ..analysis.verdicts import Verdict, check_thresholds, verdict_of
from ..base.errors import UserInputError
from ..certification.card import check_card
from ..runs.rows import MetricRows
from . import session

__all__ = ["UnmeasuredError", "Verdict", "assert_metric"]

INCONCLUSIVE = ("fail", "skip")


class UnmeasuredError(AssertionError):
    """Too many rows unmeasured (judge errors, unreadable answers): not a quality failure."""


def rows_of(data: Any) -> dict[str, list[Any]]:
    """``data`` (row dicts with the CLI's column names, a ``datasets.Dataset`` or a path the CLI
    reads) -> column -> values."""
    if isinstance(data, (str, os.PathLike)):
        from ..runs.files import check_input_path, load_input

        path = Path(data)
        check_input_path(path, "data")
        data = load_input(path, "data")
    if hasattr(data, "column_names") and hasattr(data, "to_dict"):
        return dict(data.to_dict())
    if not isinstance(data, (list, tuple)) or not all(isinstance(r, Mapping) for r in data):
        raise UserInputError("data must be a list of row dicts, a datasets.Dataset or a path "
                             f"to a file the CLI reads, got {type(data).__name__}")
    if not data:
        raise UserInputError("data has no rows")
    names = list(data[0])
    for index, row in enumerate(data):
        if set(row) != set(names):
            raise UserInputError(f"data row {index}: columns {sorted(row)} differ from row 0's "
                                 f"{sorted(names)}")
    return {name: [row[name] for row in data] for name in names}


def prompt_digests(metric: str) -> str:
    """The judge prompts the metric sends, each ``name@version:sha256[:12]`` of its text."""
    from ..analysis.report.page import prompts_of
    from ..kit.steps import prompts

    texts = {t.prompt_id: t.text for t in vars(prompts).values()
             if isinstance(t, prompts.PromptTemplate)}
    return " ".join(f"{pid}:{hashlib.sha256(texts[pid].encode()).hexdigest()[:12]}"
                    for pid in prompts_of([metric]))


def _judge_text(options: Mapping[str, Any]) -> str:
    from ..analysis.comparison import judge_description

    info = judge_description(options)
    return f"{info['provider']}/{info['model'] or 'default'}" + (
        f" at {options['base_url']}" if options.get("base_url") else "")


def _settle_hint(verdict: Verdict) -> str:
    """What would settle an inconclusive verdict: about how many rows would make the interval
    narrow enough (its width shrinks as 1/sqrt(n)), or runs for a sampled judge."""
    thresholds = [t for t in (verdict.at_least, verdict.at_most) if t is not None]
    gap = min(abs(verdict.value - t) for t in thresholds)
    half = (verdict.high - verdict.low) / 2
    more = ("more rows" if gap == 0 else
            f"about {math.ceil(verdict.n * (half / gap) ** 2)} rows (now {verdict.n})")
    return f"{more} would settle it, or, for a sampled judge, more runs (runs=k)"


def assert_metric(metric: str, data: Any, *, at_least: float | None = None,
                  at_most: float | None = None, score_key: str | None = None, runs: int = 1,
                  alpha: float = 0.05, inconclusive: str = "fail",
                  max_unmeasured: float | None = None, card: str | os.PathLike[str] | None = None,
                  **options: Any) -> Verdict:
    """Score ``data`` with ``metric`` and assert its mean: ``pass`` when the whole (1 - alpha)
    interval of the mean clears the threshold(s), ``AssertionError`` when it misses them
    entirely, and when it straddles them an ``AssertionError`` saying "inconclusive" (or
    ``pytest.skip`` with ``inconclusive="skip"``). ``runs=k`` asks the judge k times per row
    without the cache; the interval is then over the rows' means. More than ``max_unmeasured``
    (a share; the pytest option ``--max-unmeasured``) of the rows unmeasured is an
    :class:`UnmeasuredError`, told apart from quality. ``options``: the metric's and the
    judge's (provider, model, base_url ...; the pytest options fill in those not given).
    ``card``: a judge card (``certify --card``) for this judge, metric, options and prompts
    (refused otherwise); when it is not certified, a pass is inconclusive."""
    if inconclusive not in INCONCLUSIVE:
        raise UserInputError(f"inconclusive must be one of {', '.join(INCONCLUSIVE)}, "
                             f"got {inconclusive!r}")
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise UserInputError(f"runs must be a whole number >= 1, got {runs!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise UserInputError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if max_unmeasured is None:
        max_unmeasured = session.LIMITS["max_unmeasured"]
    check_max_unmeasured(max_unmeasured, "max_unmeasured")
    probe = MetricRows(metric, score_key=score_key)
    if probe.spec.judge:
        options = {**session.JUDGE, **options}
        if runs > 1:
            options["use_cache"] = False  # each run asks the judge afresh
    elif runs > 1:
        raise UserInputError(f"runs={runs}: {metric} calls no judge, so every run would "
                             "score the same")
    check_thresholds(at_least, at_most, probe.spec.score_range, metric)
    judge_card = None if card is None else check_card(card, [metric], options)
    scorer = MetricRows(metric, score_key=score_key, **options)
    rows = rows_of(data)
    results = [scorer.score(rows) for _ in range(runs)]
    verdict = verdict_of([[r.value for r in run] for run in results], at_least=at_least,
                         at_most=at_most, confidence=1 - alpha,
                         score_range=probe.spec.score_range)
    _record(metric, verdict, options if probe.spec.judge else None)
    total = verdict.n + verdict.unmeasured
    if verdict.n == 0 or (max_unmeasured is not None
                          and verdict.unmeasured / total > max_unmeasured):
        reasons = sorted({r.unmeasured for run in results for r in run if r.unmeasured})
        limit = "" if max_unmeasured is None else f" > max_unmeasured {max_unmeasured:.1%}"
        raise UnmeasuredError(
            f"{metric}: {verdict.unmeasured} of {total} rows unmeasured "
            f"({verdict.unmeasured / total:.1%}){limit}: judge errors or unreadable answers, "
            f"not a quality verdict; reasons: {'; '.join(reasons)[:500]}")
    shown = f"{metric}{'.' + score_key if score_key else ''}: {verdict.describe()}" + (
        f", {verdict.unmeasured} unmeasured row(s) left out" if verdict.unmeasured else "")
    if verdict.outcome == "fail":
        raise AssertionError(f"{shown}: the whole interval misses the threshold")
    uncertified = judge_card.reason if judge_card and verdict.outcome == "pass" else None
    if verdict.outcome == "inconclusive" or uncertified:
        message = f"inconclusive: {shown}: " + (uncertified or "the interval straddles the "
                                                 f"threshold; {_settle_hint(verdict)}")
        if inconclusive == "skip":
            import pytest

            pytest.skip(message)
        raise AssertionError(message)
    return verdict


def _record(metric: str, verdict: Verdict, judge: Mapping[str, Any] | None) -> None:
    def number(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.4f}"

    properties: list[tuple[str, object]] = [
        ("metric", metric), ("value", number(verdict.value)),
        ("interval", f"[{number(verdict.low)}, {number(verdict.high)}]"),
        ("outcome", verdict.outcome), ("n", verdict.n), ("unmeasured", verdict.unmeasured)]
    if judge is not None:
        properties += [("judge", _judge_text(judge)), ("prompts", prompt_digests(metric))]
    session.record(properties)
