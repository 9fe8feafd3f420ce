"""``assert_metric``: a metric on a few rows, asserted with an honest verdict (pass, fail or
inconclusive: :mod:`shared.analysis.verdicts`), judge errors reported apart from quality."""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Mapping
from numbers import Real
from pathlib import Path
from typing import Any

from ..analysis.gates import MAX_UNMEASURED, check_max_unmeasured
from ..analysis.verdicts import Verdict, check_thresholds, verdict_of
from ..base.errors import UserInputError
from ..base.redaction import redact, secret_values
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
        from ..runs.arrow_cells import dataset_slice

        if len(data) == 0:
            raise UserInputError("data has no rows")
        return dataset_slice(data, 0, len(data))
    if hasattr(data, "columns") and hasattr(data, "to_dict") and hasattr(data, "iloc"):
        return _frame_rows(data)
    if not isinstance(data, (list, tuple)) or not all(isinstance(r, Mapping) for r in data):
        raise UserInputError("data must be a list of row dicts, a datasets.Dataset, a pandas "
                             "DataFrame or a path to a file the CLI reads, got "
                             f"{type(data).__name__}")
    if not data:
        raise UserInputError("data has no rows")
    names = list(data[0])
    for index, row in enumerate(data):
        if set(row) != set(names):
            raise UserInputError(f"data row {index}: columns {sorted(row)} differ from row 0's "
                                 f"{sorted(names)}")
    return {name: [row[name] for row in data] for name in names}


def _frame_rows(frame: Any) -> dict[str, list[Any]]:
    """A pandas DataFrame's columns as lists, a missing cell (NaN, ``pd.NA``, ``None``) as
    ``None`` (what an unset value is everywhere else), lists and dicts as they are."""
    import pandas as pd

    if frame.empty:
        raise UserInputError("data has no rows")
    return {str(name): [None if not isinstance(v, (list, tuple, dict)) and pd.isna(v) else v
                        for v in frame[name].tolist()] for name in frame.columns}


def prompt_digests(metric: str, options: Mapping[str, Any] | None = None) -> str:
    """The judge prompts the metric sends with ``options`` (its own among them; the rest are
    ignored), each ``name@version:digest`` (:mod:`shared.kit.sent_prompts`)."""
    from ..kit.sent_prompts import prompt_records, records_text

    return records_text(prompt_records(metric, options))


def _judge_text(options: Mapping[str, Any]) -> str:
    from ..analysis.comparison import judge_description

    info = judge_description(options)
    return f"{info['provider']}/{info['model'] or 'default'}" + (
        f" at {options['base_url']}" if options.get("base_url") else "")


def settle_hint(verdict: Verdict) -> str:
    """What would settle an inconclusive verdict: about how many rows in all would pull the
    straddled end of the interval past the threshold (the distance from the mean to that end
    shrinks as 1/sqrt(n); at least one row more than now), or runs for a sampled judge."""
    assert verdict.value is not None and verdict.low is not None and verdict.high is not None
    needed = []
    for threshold in (verdict.at_least, verdict.at_most):
        if threshold is None or not verdict.low < threshold < verdict.high:
            continue
        gap = abs(verdict.value - threshold)
        side = verdict.value - verdict.low if verdict.value >= threshold else (
            verdict.high - verdict.value)
        if gap == 0:
            return ("the mean sits on the threshold: more rows may move it either way, or, "
                    "for a sampled judge, more runs (runs=k)")
        needed.append(math.ceil(verdict.n * (side / gap) ** 2))
    rows = max([verdict.n + 1, *needed])
    return (f"about {rows} rows in all (now {verdict.n}) would settle it, or, for a sampled "
            "judge, more runs (runs=k)")


# assert_metric's own keyword arguments: a near miss among the options is named
_OWN = ("at_least", "at_most", "score_key", "runs", "alpha", "inconclusive", "max_unmeasured")


def _check_names(options: Mapping[str, Any]) -> None:
    for name in options:
        close = difflib.get_close_matches(name, _OWN, n=1, cutoff=0.75)
        if close and name not in _OWN:
            raise UserInputError(f"assert_metric has no argument {name!r}: did you mean "
                                 f"{close[0]}=?")


def _secrets(options: Mapping[str, Any]) -> list[str]:
    """The keys among the options (a panel's judges' too) and in the providers' key
    variables: what no output of an assertion may show."""
    from ..engine.backends.registry import key_variables

    found = secret_values(options)
    for judge in options.get("judges") or ():
        if isinstance(judge, Mapping):
            found += secret_values(judge)
    return found + [os.environ[name] for name in key_variables() if os.environ.get(name)]


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


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
    (refused otherwise); when it is not certified, a pass is inconclusive.
    ``max_unmeasured`` ``None``: the pytest option's, else :data:`MAX_UNMEASURED` (10 %);
    1 turns the bound off. A failure shows the verdict only (not this function's arguments,
    an API key among them), with every credential redacted."""
    __tracebackhide__ = True  # pytest shows the verdict, not our frames and their arguments
    secrets = _secrets({**session.JUDGE, **options})
    session.SECRETS.update(secrets)
    try:
        return _assert(metric, data, at_least, at_most, score_key, runs, alpha, inconclusive,
                       max_unmeasured, card, options)
    except (AssertionError, UserInputError) as error:
        raise type(error)(redact(str(error), secrets)) from None


def _assert(metric: str, data: Any, at_least: Any, at_most: Any, score_key: str | None,
            runs: Any, alpha: Any, inconclusive: Any, max_unmeasured: Any,
            card: str | os.PathLike[str] | None, options: dict[str, Any]) -> Verdict:
    __tracebackhide__ = True
    if inconclusive not in INCONCLUSIVE:
        raise UserInputError(f"inconclusive must be one of {', '.join(INCONCLUSIVE)}, "
                             f"got {inconclusive!r}")
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise UserInputError(f"runs must be a whole number >= 1, got {runs!r}")
    if not _is_number(alpha) or not 0 < alpha < 1:
        raise UserInputError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if max_unmeasured is None:
        max_unmeasured = session.LIMITS["max_unmeasured"]
    if max_unmeasured is None:
        max_unmeasured = MAX_UNMEASURED
    check_max_unmeasured(max_unmeasured, "max_unmeasured")
    _check_names(options)
    probe = MetricRows(metric, score_key=score_key)
    if probe.spec.judge:
        options = {**session.JUDGE, **options}
        if runs > 1:
            options["use_cache"] = False  # each run asks the judge afresh
    elif runs > 1:
        raise UserInputError(f"runs={runs}: {metric} calls no judge, so every run would "
                             "score the same")
    scorer = MetricRows(metric, score_key=score_key, **options)  # an unknown option first
    check_thresholds(at_least, at_most, probe.spec.score_range, metric)
    judge_card = None if card is None else check_card(card, [metric], options)
    rows = rows_of(data)
    results = [scorer.score(rows) for _ in range(runs)]
    verdict = verdict_of([[r.value for r in run] for run in results], at_least=at_least,
                         at_most=at_most, confidence=1 - alpha,
                         score_range=probe.spec.score_range)
    _record(metric, scorer.key, verdict, options if probe.spec.judge else None)
    total = verdict.n + verdict.unmeasured
    if verdict.n == 0 or verdict.unmeasured / total > max_unmeasured:
        reasons = sorted({r.unmeasured for run in results for r in run if r.unmeasured})
        raise UnmeasuredError(
            f"{metric}: {verdict.unmeasured} of {total} rows unmeasured "
            f"({verdict.unmeasured / total:.1%} > max_unmeasured {max_unmeasured:.1%}): judge "
            f"errors or unreadable answers, not a quality verdict; reasons: "
            f"{'; '.join(reasons)[:500]}")
    shown = f"{metric}{'.' + score_key if score_key else ''}: {verdict.describe()}"
    if verdict.outcome == "fail":
        raise AssertionError(f"{shown}: the whole interval misses the threshold")
    uncertified = judge_card.reason if judge_card and verdict.outcome == "pass" else None
    if verdict.outcome == "inconclusive" or uncertified:
        message = f"inconclusive: {shown}: " + (uncertified or "the interval straddles the "
                                                 f"threshold; {settle_hint(verdict)}")
        if inconclusive == "skip":
            import pytest

            pytest.skip(redact(message, _secrets(options)))
        raise AssertionError(message)
    return verdict


def _record(metric: str, key: str, verdict: Verdict, judge: Mapping[str, Any] | None) -> None:
    def number(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.4f}"

    properties: list[tuple[str, object]] = [
        ("metric", metric), ("score_key", key), ("value", number(verdict.value)),
        ("interval", f"[{number(verdict.low)}, {number(verdict.high)}]"),
        ("outcome", verdict.outcome), ("n", verdict.n), ("unmeasured", verdict.unmeasured)]
    if judge is not None:
        properties += [("judge", redact(_judge_text(judge), _secrets(judge))),
                       ("prompts", prompt_digests(metric, judge))]
    session.record(properties)
