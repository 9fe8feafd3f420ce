"""The glue every judge metric shares: its judge options in, its standard outputs out."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .config import JUDGE_OPTION_NAMES, JudgeConfig, judge_config
from .grounding import count_invalid

if TYPE_CHECKING:
    from .runner import Judge


def split_judge_options(options: dict[str, Any]) -> tuple[JudgeConfig, dict[str, Any]]:
    """Take the judge options (``JUDGE_OPTION_NAMES``) out of a metric's ``compute`` keyword
    arguments: returns the validated :class:`JudgeConfig` and the remaining options.
    ``options`` itself is not modified. Raises ``ValueError``/``TypeError`` naming a bad option."""
    rest = dict(options)
    judge_options = {name: rest.pop(name) for name in JUDGE_OPTION_NAMES if name in rest}
    return judge_config(**judge_options), rest


def _measured(score: Any) -> bool:
    if score is None or isinstance(score, bool):
        return score is not None
    return isinstance(score, (int, float)) and math.isfinite(score)


def mean_measured(scores: Iterable[Any]) -> float | None:
    """Mean of the measured scores (``None`` and NaN are unmeasured and skipped; booleans count
    as 1/0); ``None`` when nothing was measured. Never NaN."""
    values = [float(score) for score in scores if _measured(score)]
    return math.fsum(values) / len(values) if values else None


def _no_nan(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def judge_output(
    headline: dict[str, Any],
    scores: list[Any],
    details: list[Any],
    unmeasured: list[dict[str, Any]],
    judge: Judge,
) -> dict[str, Any]:
    """A judge metric's result: ``{**headline, "scores", "details", "unmeasured",
    "invalid_answers", "usage", "Cost"}``, plus ``"dry_run": judge.plan()`` when the judge is in
    dry-run mode. ``invalid_answers`` counts the unmeasured rows per kind of invalid judge answer
    (:func:`shared.grounding.count_invalid`). NaN in the headline or the scores becomes
    ``None``."""
    output = {key: _no_nan(value) for key, value in headline.items()}
    output.update(
        scores=[_no_nan(score) for score in scores],
        details=details,
        unmeasured=unmeasured,
        invalid_answers=count_invalid(unmeasured),
        usage=judge.usage.as_dict(),
        Cost=judge.cost,
    )
    if judge.config.dry_run:
        output["dry_run"] = judge.plan()
    return output
