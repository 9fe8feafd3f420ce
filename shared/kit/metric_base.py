"""The base class of every metric: declared inputs, validated before any work.

A metric declares its per-sample inputs once (``INPUTS``); this class derives the
``datasets.Features`` evaluate needs from them, and its ``compute`` validates and normalises every
input (lists, ``datasets`` columns, numpy arrays, pandas Series) before evaluate sees it, so a bad
input fails with an error that names the argument and the sample index, before any judge call.

A single-process ``compute`` that is given all its inputs hands the validated columns straight to
``_compute``. evaluate would write them to an Arrow cache file and read them back, which is how
it gathers ``add_batch`` calls and distributed workers' shares, and which costs more than the
scoring itself for the string metrics (0.25 s of 0.35 s for accuracy on 100k pairs). The columns
are already in the form that round trip returns (lists of ``str``, lists of lists of ``str``), so
the result is the same; ``add_batch`` and ``num_process > 1`` still go through evaluate.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import datasets
import evaluate
from datasets.utils.py_utils import temp_seed

from ..base import validation
from ..base.options import Option, check_options, with_options
from ..base.text import paused_gc
from .about import About

InputKind = Literal["text", "texts", "list", "phrases", "messages", "json"]


@dataclass(frozen=True)
class Input:
    """One per-sample input of a metric.

    kind: ``"text"`` a string; ``"texts"`` a string or a list of strings (several references);
    ``"list"`` a list of strings that may be empty (retrieved contexts, in order); ``"phrases"``
    a list of phrases, one phrase, or a JSON list string (may be empty); ``"messages"`` a
    conversation in OpenAI's chat format (:func:`shared.kit.conversations.check_messages`);
    ``"json"`` any JSON value, checked and normalised per sample by ``check(value, name,
    index)``. A conversation or JSON input reaches ``_compute`` as canonical JSON text of its
    normalised value (``json.loads`` it): text is what evaluate's Arrow cache holds whatever
    the value's shape, so ``compute`` and ``add_batch`` give ``_compute`` the same thing, and a
    batch file keeps these columns (``messages``, ``tool_calls``...) as JSON text. A missing
    value of an optional one (``None``, an empty CSV cell) is ``"null"``.
    Optional inputs are not evaluate features: they reach ``_compute`` as keyword arguments
    (``None`` when absent).
    """

    name: str
    kind: InputKind = "text"
    required: bool = True
    allow_empty: bool = False
    column: str | None = None  # a batch file's column, when the rule below does not give it
    check: Callable[[Any, str, int], Any] | None = None  # kind "json": one sample normalised

    @property
    def column_name(self) -> str:
        """The column of a batch file (CLI, demo) that holds this input: the singular of the
        name (``predictions`` -> ``prediction``), except that a list per row keeps its plural
        (``contexts``, ``messages``, ``tool_calls``)."""
        if self.column:
            return self.column
        if self.kind in ("list", "messages", "json"):
            return self.name
        return self.name.removesuffix("s")

    def feature(self) -> Any:
        if self.kind in ("text", "messages", "json"):
            return datasets.Value("string")
        return datasets.Sequence(datasets.Value("string"))

    def validate(self, values: Any) -> list[Any]:
        if self.kind == "text":
            return validation.texts(self.name, values, allow_empty=self.allow_empty)
        if self.kind == "texts":
            return validation.text_or_texts(self.name, values, allow_empty=self.allow_empty)
        if self.kind == "phrases":
            return validation.text_or_texts(
                self.name, values, allow_empty=True, allow_no_items=True, parse_json=True
            )
        if self.kind in ("messages", "json"):
            return self._json_values(values)
        return validation.text_lists(self.name, values)

    def _json_values(self, values: Any) -> list[str]:
        """Each sample's JSON value checked, as canonical JSON text; in an optional input a
        missing value (``None``, an empty CSV cell) is ``"null"``."""
        if self.kind == "messages":
            from .conversations import check_messages

            def check(value: Any, name: str, index: int) -> Any:
                return check_messages(value, argument=name, index=index)
        else:
            check = self.check or (lambda value, name, index: value)
        out = []
        for i, value in enumerate(validation.as_list(self.name, values)):
            if not self.required and (value is None or isinstance(value, str)
                                      and not value.strip()):
                out.append("null")
                continue
            _valid_unicode(self.name, value, i)
            out.append(json.dumps(check(value, self.name, i), ensure_ascii=False))
        return out


def _valid_unicode(name: str, value: Any, index: int) -> None:
    """Every string (and key) in a JSON value valid Unicode, else an ``InputError`` at
    ``name[index][item]`` (the top-level item of a list) naming the character position."""
    items = enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)]
    for item, part in items:
        where = index if item is None else (index, item)
        stack = [part]
        while stack:
            current = stack.pop()
            if isinstance(current, str):
                if not current.isascii():
                    validation.unicode_text(name, current, where)
            elif isinstance(current, Mapping):
                stack.extend(current.keys())
                stack.extend(current.values())
            elif isinstance(current, (list, tuple)):
                stack.extend(current)


@dataclass(frozen=True)
class Example:
    """A metric's example: ``compute`` inputs (one list per argument) and the options it needs.
    The demo starts from it, the tests score it, the card shows the same call."""

    inputs: Mapping[str, list[Any]]
    options: Mapping[str, Any] = field(default_factory=dict)


# The RAG metrics' example: two samples, the first answered from its contexts, the second not.
_RAG_SAMPLES: dict[str, list[Any]] = {
    "questions": ["What is the capital of France?", "When was the Eiffel Tower completed?"],
    "predictions": ["The capital of France is Paris.", "The Eiffel Tower was completed in 1925."],
    "references": ["Paris is the capital of France.", "The Eiffel Tower was completed in 1889."],
    "contexts": [
        ["Paris is the capital and largest city of France.",
         "France is a country in Western Europe."],
        ["Berlin is the capital of Germany.",
         "The Eiffel Tower was completed in 1889 for the World's Fair in Paris."],
    ],
}


def rag_example(*inputs: str) -> Example:
    """The shared RAG example restricted to ``inputs`` (``compute`` argument names)."""
    return Example({name: _RAG_SAMPLES[name] for name in inputs})


class ValidatedMetric(evaluate.Metric):
    """An ``evaluate.Metric`` whose inputs are declared in ``INPUTS`` and options in ``OPTIONS``,
    both checked up front, and whose ``MetricInfo`` is built from ``ABOUT`` (its description,
    ``compute`` text, citation and links, :class:`~shared.kit.about.About`): no metric script
    writes ``_info()``.

    The class also declares what the registry (``shared.kit.registry``) reads: ``HEADLINE`` (the
    aggregate output keys), ``USES_JUDGE`` (takes the judge options, ``shared.engine.config.
    JUDGE_OPTIONS``), ``USES_EMBEDDINGS``, ``LOWER_IS_BETTER``, ``EXAMPLE``,
    ``DECISION_THRESHOLD`` and ``SCORE_RANGE`` (the lowest and highest per-row score;
    ``compare`` refuses a score outside it).

    ``DECISION_THRESHOLD``: the score at or above which a per-row score counts as "yes"
    (correct, toxic, faithful...) when ``judge-metrics agree`` compares it with boolean human
    labels (balanced accuracy, Cohen's kappa, F1). Chosen by reasoning, never fitted to the
    labelled sets. The default, 0.5, is right for every score in [0, 1]: where l3score's
    P(Yes) / (P(Yes) + P(No)) favours "Yes"; any cut in (0, 1] of the 0/1 per-row scores of
    accuracy and semantic_list_contains (which already applied its similarity_threshold); the
    midpoint of [0, 1] and DeepEval's default threshold for answer_correctness and the
    DeepEval-style shares. ``None``: no natural cut (agree then reports AUROC, the correlations
    and the best threshold on the rows only).
    """

    ABOUT: ClassVar[About]
    INPUTS: ClassVar[tuple[Input, ...]] = ()
    OPTIONS: ClassVar[tuple[Option, ...]] = ()
    HEADLINE: ClassVar[tuple[str, ...]] = ("score",)
    USES_JUDGE: ClassVar[bool] = False
    USES_EMBEDDINGS: ClassVar[bool] = False
    LOWER_IS_BETTER: ClassVar[bool] = False
    EXAMPLE: ClassVar[Example | None] = None
    DECISION_THRESHOLD: ClassVar[float | None] = 0.5
    SCORE_RANGE: ClassVar[tuple[float, float]] = (0.0, 1.0)
    # Whether validation and scoring run with the cyclic collector paused
    # (:func:`shared.base.text.paused_gc`): by default (None) for the metrics that only compute
    # over strings in this process, i.e. neither a judge nor an embedding model. Never for a judge
    # metric, whose network clients do make cycles over a long run.
    PAUSES_GC: ClassVar[bool | None] = None

    def _info(self) -> evaluate.MetricInfo:
        about = self.ABOUT
        return evaluate.MetricInfo(
            description=about.description,
            citation=about.citation,
            inputs_description=self.describe_inputs(about.arguments),
            features=self.input_features(),
            homepage=about.homepage,
            codebase_urls=list(about.codebase_urls),
            reference_urls=list(about.reference_urls),
        )

    @classmethod
    def input_features(cls) -> datasets.Features:
        return datasets.Features({i.name: i.feature() for i in cls.INPUTS if i.required})

    @classmethod
    def describe_inputs(cls, description: str) -> str:
        """``description`` (the ``Args:`` inputs, ``Returns:``, ``Examples:`` text of the metric
        script) with the declared options' lines and, for a judge metric, the judge-options
        paragraph added to ``Args:``."""
        from ..engine.backends.registry import LOCAL
        from ..engine.config import JUDGE_OPTION_NAMES

        return with_options(description, cls.OPTIONS,
                            JUDGE_OPTION_NAMES if cls.USES_JUDGE else (), LOCAL)

    def check_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """The declared options checked, defaults filled in; the judge options (of a judge
        metric) passed on as given: ``JudgeConfig`` checks them. A ``TypeError`` names an
        option the metric does not take."""
        from ..engine.config import JUDGE_OPTION_NAMES

        return check_options(self.metric_name, self.OPTIONS, options,
                             JUDGE_OPTION_NAMES if self.USES_JUDGE else ())

    @functools.cached_property
    def metric_name(self) -> str:
        """The metric's registry name: its script's name (``l3score``; evaluate's ``name`` is
        derived from the class name, ``l3_score``)."""
        return Path(inspect.getfile(type(self))).stem

    def validate_inputs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Validated, normalised copies of the declared inputs found in ``kwargs``."""
        columns: dict[str, list[Any]] = {}
        for spec in self.INPUTS:
            value = kwargs.get(spec.name)
            if value is None:
                if spec.required:
                    raise validation.InputError(spec.name, None, "is required")
                continue
            columns[spec.name] = spec.validate(value)
        if columns and validation.same_length(**columns) == 0:
            raise ValueError(f"{self.name} needs at least one sample; got empty inputs")
        return columns

    def compute(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> Any:
        """Validate and normalise the declared inputs, then score them (after any ``add`` or
        ``add_batch`` calls, ``compute()`` without inputs scores what they added).

        (evaluate appends the metric's inputs description to this docstring.)
        """
        pauses = self.PAUSES_GC
        if pauses is None:
            pauses = not (self.USES_JUDGE or self.USES_EMBEDDINGS)
        with paused_gc() if pauses else nullcontext():
            return self._validated_compute(predictions, references, kwargs)

    def _validated_compute(self, predictions: Any, references: Any, kwargs: dict[str, Any]
                           ) -> Any:
        kwargs = self._named_inputs(predictions, references, kwargs)
        declared = {spec.name for spec in self.INPUTS}
        options = {k: v for k, v in kwargs.items() if k not in declared}
        if self._has_added_samples() and not any(
            kwargs.get(spec.name) is not None for spec in self.INPUTS if spec.required
        ):
            optional = {
                spec.name: spec.validate(kwargs[spec.name])
                for spec in self.INPUTS
                if not spec.required and kwargs.get(spec.name) is not None
            }
            return self._evaluate_compute(**optional, **self.check_options(options))
        columns = self.validate_inputs(kwargs)
        options = self.check_options(options)
        optional = {
            spec.name: columns.get(spec.name) for spec in self.INPUTS if not spec.required
        }
        features = {k: v for k, v in columns.items() if k not in optional}
        if self._gathers_nothing():
            with temp_seed(self.seed):
                return self._compute(**features, **optional, **options)
        return self._evaluate_compute(**features, **optional, **options)

    def add_batch(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> None:
        """Validate a batch as ``compute`` does, then add it to evaluate's stack."""
        kwargs = self._named_inputs(predictions, references, kwargs)
        features = {spec.name for spec in self.INPUTS if spec.required}
        not_added = sorted(set(kwargs) - features)
        if not_added:
            raise TypeError(
                f"{self.name}.add_batch takes only {', '.join(sorted(features))}; give "
                f"{', '.join(not_added)} to compute"
            )
        super().add_batch(**self.validate_inputs(kwargs))

    def add(self, *, prediction: Any = None, reference: Any = None, **kwargs: Any) -> None:
        """Validate one sample as ``compute`` does, then add it to evaluate's stack."""
        batch = {name: [value] for name, value in kwargs.items()}
        if prediction is not None:
            batch["predictions"] = [prediction]
        if reference is not None:
            batch["references"] = [reference]
        self.add_batch(**batch)

    def _named_inputs(self, predictions: Any, references: Any, kwargs: dict[str, Any]
                      ) -> dict[str, Any]:
        """``kwargs`` with ``predictions``/``references`` in it; a TypeError for an input the
        metric does not declare."""
        if predictions is not None:
            kwargs["predictions"] = predictions
        if references is not None:
            kwargs["references"] = references
        declared = {spec.name for spec in self.INPUTS}
        unknown_inputs = [
            k for k in ("predictions", "references") if k in kwargs and k not in declared
        ]
        if unknown_inputs:
            raise TypeError(f"{self.name} takes no {', '.join(unknown_inputs)}")
        return kwargs

    def _evaluate_compute(self, **kwargs: Any) -> Any:
        try:
            return super().compute(**kwargs)
        except BaseException:
            self._release_evaluate_files()
            raise

    def _has_added_samples(self) -> bool:
        return any(getattr(self, name, None) is not None for name in ("writer", "buf_writer"))

    def _gathers_nothing(self) -> bool:
        """True when evaluate's cache file would hold only this call's inputs: one process, no
        ``add_batch`` pending, python-object format."""
        return self.num_process == 1 and not self._has_added_samples() and self.info.format is None

    def _release_evaluate_files(self) -> None:
        """evaluate keeps its cache-file locks and files when ``_compute`` raises (a bad option,
        ``LogprobsUnavailable``); the next ``compute`` on this object would wait 1 s for the held
        lock and the files would stay behind. Release and remove them."""
        locks = list(getattr(self, "filelocks", None) or [])
        if getattr(self, "filelock", None) is not None:
            locks.append(self.filelock)
        paths = list(getattr(self, "file_paths", None) or [])
        if getattr(self, "cache_file_name", None):
            paths.append(self.cache_file_name)
        self.writer = self.buf_writer = self.data = None
        self.filelock = self.filelocks = self.file_paths = self.cache_file_name = None
        self.selected_feature_format = None
        for path in paths:
            if not getattr(self, "keep_in_memory", False) and os.path.exists(path):
                try:
                    os.remove(path)
                except OSError:
                    pass
        for lock in locks:
            try:
                lock.release(force=True)
            except Exception:  # best effort: never hide the original error
                pass


# evaluate.load instantiates the first non-abstract EvaluationModule subclass in a metric script's
# namespace, and ``from shared import ValidatedMetric`` puts this base class there before the
# metric's own class: marking the base abstract makes evaluate pick the metric.
ValidatedMetric.__abstractmethods__ = frozenset({"_compute"})
