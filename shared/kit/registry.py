"""Which metrics exist and what each needs (used by the CLI, batch, the demo and the reports),
derived from the metric classes.

Each metric class declares what the registry reads (``shared.kit.metric_base.ValidatedMetric``):
its ``INPUTS`` (with the batch-file column of each), ``OPTIONS``, ``HEADLINE``, ``USES_JUDGE``,
``USES_EMBEDDINGS``, ``LOWER_IS_BETTER``, ``EXAMPLE``, ``DECISION_THRESHOLD`` and, for a
judge metric, ``ROUNDS`` and ``SCORING_PROMPTS`` (the prompts it sends depend on its options:
:mod:`shared.kit.sent_prompts` asks the class). The registry imports
``metrics/<name>/<name>.py`` (no model is loaded at import) the first time something asks, so
``import shared.kit.registry`` stays cheap and the CLI starts fast. Only the names, in the order
the CLI and the demo list them, are written here.

``columns`` maps a ``compute`` argument to the singular column name of a batch file
(docs/BATCH.md: question, prediction, reference, contexts, source, expected).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.options import Option

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def _metrics_dir() -> Path:
    """The metric folders: inside the installed package (``judge_metrics/metrics/``, package
    data of the wheel), else the checkout's ``metrics/`` beside ``shared/``."""
    installed = PACKAGE_DIR / "metrics"
    return installed if installed.is_dir() else PACKAGE_DIR.parent / "metrics"


METRICS_DIR = _metrics_dir()

# The order the CLI (--metric all), the reports and the demo list the metrics in.
ORDER = (
    "l3score", "semantic_list_contains", "accuracy", "answer_correctness", "answer_relevance",
    "bias", "toxicity", "context_precision", "context_recall", "context_relevance",
    "faithfulness", "hallucination", "summary_coherence", "rouge", "bleu", "g_eval", "pairwise",
    "tool_call_correctness", "trajectory_match", "task_completion", "conversation_completeness",
    "knowledge_retention",
)


def metric_folders(metrics_dir: Path = METRICS_DIR) -> list[str]:
    """The metrics of a checkout: the folders ``metrics/<name>/`` holding ``<name>.py``."""
    if not metrics_dir.is_dir():  # an installed or vendored package (a Space): none
        return []
    return sorted(p.parent.name for p in metrics_dir.glob("*/*.py") if p.stem == p.parent.name)


# Every metric: those of ORDER, then any other metric folder (a new metric needs no line here)
NAMES = ORDER + tuple(name for name in metric_folders() if name not in ORDER)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    columns: dict[str, str]  # compute argument -> column
    optional_columns: dict[str, str] = field(default_factory=dict)
    judge: bool = False  # calls an LLM judge
    embeds: bool = False  # uses an embedding model
    headline: tuple[str, ...] = ("score",)  # aggregate output key(s)
    lower_is_better: bool = False
    options: tuple[Option, ...] = ()  # its declared options
    example: Any = None  # its Example (compute inputs and options)
    decision_threshold: float | None = 0.5  # `agree`: a per-row score >= this counts as "yes"
    score_range: tuple[float, float] = (0.0, 1.0)  # the lowest and highest per-row score
    rounds: tuple[str, ...] = ()  # a judge metric's dependent rounds of requests (ROUNDS)
    # what a judge metric needs of its judge (REQUIRES): (capability, minimum) pairs
    requires: tuple[tuple[str, bool | int], ...] = ()
    # the prompts a judge metric's score is read from, its `examples` shown before them
    scoring_prompts: tuple[str, ...] = ()


def spec_of(metric_class: type, name: str) -> MetricSpec:
    """The :class:`MetricSpec` a metric class declares."""
    inputs = metric_class.INPUTS
    return MetricSpec(
        name=name,
        columns={i.name: i.column_name for i in inputs if i.required},
        optional_columns={i.name: i.column_name for i in inputs if not i.required},
        judge=metric_class.USES_JUDGE,
        embeds=metric_class.USES_EMBEDDINGS,
        headline=tuple(metric_class.HEADLINE),
        lower_is_better=metric_class.LOWER_IS_BETTER,
        options=tuple(metric_class.OPTIONS),
        example=metric_class.EXAMPLE,
        decision_threshold=metric_class.DECISION_THRESHOLD,
        # a class from an older Space bundle (evaluate's module cache keeps one per script hash)
        # declares no range: the default's
        score_range=tuple(getattr(metric_class, "SCORE_RANGE", (0.0, 1.0))),
        rounds=tuple(getattr(metric_class, "ROUNDS", ())),
        requires=tuple(getattr(metric_class, "REQUIRES", ())),
        scoring_prompts=tuple(getattr(metric_class, "SCORING_PROMPTS", ())),
    )


def metric_class(name: str) -> type:
    """The metric class of ``metrics/<name>/<name>.py``, imported as a plain module (the way
    ``evaluate.load`` would, without its module cache)."""
    from .metric_base import ValidatedMetric

    path = METRICS_DIR / name / f"{name}.py"
    module_name = f"_judge_metrics_registry_{name}"
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise
    found = [value for value in vars(module).values()
             if isinstance(value, type) and issubclass(value, ValidatedMetric)
             and value.__module__ == module_name]
    if len(found) != 1:
        raise ImportError(f"{path} must define exactly one ValidatedMetric subclass")
    return found[0]


class _Specs(Mapping):
    """name -> :class:`MetricSpec` of every available metric. The names come from the folders;
    a metric's script is imported the first time its spec is asked for (the first costs
    evaluate's import, about a second: paid by a command that scores, not by ``--help``)."""

    def __init__(self) -> None:
        self._names: list[str] | None = None
        self._specs: dict[str, MetricSpec] = {}

    def _available(self) -> list[str]:
        if self._names is None:
            self._names = available()
        return self._names

    def __getitem__(self, name: str) -> MetricSpec:
        if name not in self._specs:
            if name not in self._available():
                raise KeyError(name)
            self._specs[name] = spec_of(metric_class(name), name)
        return self._specs[name]

    def __contains__(self, name: object) -> bool:
        return name in self._available()

    def __iter__(self) -> Iterator[str]:
        return iter(self._available())

    def __len__(self) -> int:
        return len(self._available())

    def __repr__(self) -> str:
        return f"<metric specs of {', '.join(self._available())}>"


class _Derived(Mapping):
    """A read-only mapping built from the specs on first use."""

    def __init__(self, build: Callable[[], dict[str, Any]]) -> None:
        self._build = build
        self._data: dict[str, Any] | None = None

    def _mapping(self) -> dict[str, Any]:
        if self._data is None:
            self._data = self._build()
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self._mapping()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())


class _LowerIsBetter(Set):
    """The metrics whose ``LOWER_IS_BETTER`` is set; a membership test imports one metric."""

    def __contains__(self, name: object) -> bool:
        return name in METRICS and METRICS[name].lower_is_better  # type: ignore[index]

    def __iter__(self) -> Iterator[str]:
        return (name for name in METRICS if METRICS[name].lower_is_better)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def available() -> list[str]:
    """Names of the metrics whose folder exists (the project grows metric by metric)."""
    return [name for name in NAMES if (METRICS_DIR / name / f"{name}.py").exists()]


def metric_path(name: str) -> str:
    return str(METRICS_DIR / name)


def load(name: str, **init_kwargs: Any) -> Any:
    """The metric ``name`` as an ``evaluate.EvaluationModule``, from any folder: the same class,
    card and results as ``evaluate.load("metrics/<name>")`` in the checkout, since it is that
    call on the metric's folder inside the package. ``init_kwargs`` go to ``evaluate.load``
    (``config_name``, ``experiment_id``, ...)."""
    from ..base.errors import UserInputError

    if not isinstance(name, str) or name not in available():
        raise UserInputError(f"unknown metric {name!r}; choose from: {', '.join(available())}")
    import evaluate

    return evaluate.load(metric_path(name), **init_kwargs)


METRICS: Mapping[str, MetricSpec] = _Specs()

# metrics whose score is better when lower (compare counts B's wins in this direction)
LOWER_IS_BETTER: Set[str] = _LowerIsBetter()


def example_rows(spec: MetricSpec) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """A metric's example as the demo's table shows it: column -> one text per row (a list
    value as JSON text), and the options that example needs."""
    if spec.example is None:
        return {}, {}
    columns = {**spec.columns, **spec.optional_columns}
    rows = {
        columns[argument]: [value if isinstance(value, str) else json.dumps(value)
                            for value in values]
        for argument, values in spec.example.inputs.items()
    }
    return rows, dict(spec.example.options)


EXAMPLES: Mapping[str, tuple[dict[str, list[str]], dict[str, Any]]] = _Derived(
    lambda: {name: example_rows(spec) for name, spec in METRICS.items() if spec.example})


# The score at or above which a metric's per-row score counts as "yes" when `judge-metrics
# agree` compares it with boolean human labels (each class's DECISION_THRESHOLD, with the reason).
DECISION_THRESHOLDS: Mapping[str, float | None] = _Derived(
    lambda: {name: spec.decision_threshold for name, spec in METRICS.items()})
