"""An alignment profile read back and checked completely before any work (``score``,
``agree`` and ``compare --profile``): a profile is a file a person may edit or craft, and every
part of it that applying it reads is checked here, each refusal one line naming the field.

- the file: a regular file (a named pipe would never end), JSON nested a sane depth;
- ``metric`` a metric's name, ``score_key`` one of its keys and ``column`` that key's score
  column (never another column of the run, such as its labels);
- ``threshold`` a finite P(label) in [0, 1]; ``calibration`` ``None`` or a complete map
  (:func:`.calibration_maps.check_map_numbers`: an isotonic map's ``x`` strictly increasing,
  its ``y`` P(label) values in [0, 1]);
- ``metric_options`` an object, ``judge`` ``None`` or ``{"provider", "model"}``,
  ``panel_weights`` ``None`` or finite non-negative numbers, ``few_shot`` a list.

:func:`check_judge` compares the judge a profile was fitted on with the run's: a threshold
tuned on one judge's scores says nothing about another's.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Mapping
from numbers import Real
from pathlib import Path
from typing import Any

from ..base.errors import UserInputError

PROFILE_FORMAT = "judge-metrics alignment profile 1"


def read_profile_file(path: str | os.PathLike[str]) -> Any:
    """The JSON of the file at ``path``: a regular file only; anything unreadable is one
    line."""
    where = f"--profile {path}"
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise UserInputError(f"{where}: not a regular file")
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        if isinstance(error, UserInputError):
            raise
        why = "nested too deeply" if isinstance(error, RecursionError) else error
        raise UserInputError(f"{where}: cannot read it ({why})") from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_profile_fields(data: dict[str, Any], where: str) -> None:
    """Every field of a loaded profile (module docstring); ``where`` names it in a refusal."""
    from ..kit.registry import METRICS
    from ..runs.chunks import score_column_names
    from .calibration_maps import check_map_numbers

    metric = data.get("metric")
    if not isinstance(metric, str) or metric not in METRICS:
        raise UserInputError(f"{where}: 'metric' is {_shown(metric)}, not a metric's name")
    columns = score_column_names(metric, METRICS[metric])
    key = data.get("score_key")
    if key not in columns:
        raise UserInputError(f"{where}: 'score_key' is {_shown(key)}; {metric}'s keys: "
                             f"{', '.join(columns)}")
    if data.get("column") != columns[key]:
        raise UserInputError(f"{where}: 'column' is {_shown(data.get('column'))}, not "
                             f"{metric}'s score column {columns[key]!r}")
    threshold = data.get("threshold")
    if not _finite(threshold) or not 0.0 <= threshold <= 1.0:
        raise UserInputError(f"{where}: 'threshold' is {_shown(threshold)}, not a P(label) "
                             "in [0, 1]")
    calibration = data.get("calibration")
    if calibration is not None:
        if not isinstance(calibration, dict):
            raise UserInputError(f"{where}: 'calibration' must be a map (an object) or null")
        data["calibration"] = check_map_numbers(calibration, f"{where}: its calibration")
    for name, kind, what in (("metric_options", dict, "an object"),
                             ("few_shot", list, "a list"), ("label", str, "a column name")):
        if name in data and data[name] is not None and not isinstance(data[name], kind):
            raise UserInputError(f"{where}: '{name}' must be {what}, got "
                                 f"{type(data[name]).__name__}")
    judge = data.get("judge")
    if judge is not None and not (isinstance(judge, dict) and all(
            isinstance(judge.get(k), (str, type(None))) for k in ("provider", "model"))):
        raise UserInputError(f"{where}: 'judge' must be null or {{'provider', 'model'}}")
    weights = data.get("panel_weights")
    if weights is not None and not (isinstance(weights, list) and weights and all(
            _finite(w) and w >= 0 for w in weights)):
        raise UserInputError(f"{where}: 'panel_weights' must be null or a list of finite "
                             "numbers >= 0")


def _finite(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def judge_text(judge: Mapping[str, Any] | None) -> str:
    if not judge:
        return "no judge"
    return f"{judge.get('provider')}/{judge.get('model') or 'default'}"


def check_judge(data: Mapping[str, Any], judge: Mapping[str, Any] | None, where: str) -> None:
    """Refuse a profile of a judge metric applied to another judge's scores (``judge``: the
    run's, as :func:`.labelled_runs.judge_of` describes it)."""
    fitted = data.get("judge")
    if fitted is None or judge is None:
        return
    if (fitted.get("provider"), fitted.get("model")) != (judge.get("provider"),
                                                          judge.get("model")):
        raise UserInputError(f"{where}: fitted on the scores of the judge "
                             f"{judge_text(fitted)}, this run's judge is {judge_text(judge)}: "
                             "its threshold and map describe that judge only; run `align` "
                             "with this judge")
