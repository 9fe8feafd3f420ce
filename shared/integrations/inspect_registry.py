"""What inspect imports through this package's ``inspect_ai`` entry point: every metric's
scorer registered as ``judge_metrics/<metric>`` (e.g. ``inspect score LOG --scorer
judge_metrics/accuracy``)."""

from __future__ import annotations

from ..kit.registry import available
from .inspect_scorers import registered

SCORERS = {metric: registered(metric) for metric in available()}
