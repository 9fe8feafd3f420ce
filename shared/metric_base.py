"""The base class of every metric: declared inputs, validated before any work.

A metric declares its per-sample inputs once (``INPUTS``); this class derives the
``datasets.Features`` evaluate needs from them, and its ``compute`` validates and normalises every
input (lists, ``datasets`` columns, numpy arrays, pandas Series) before evaluate sees it, so a bad
input fails with an error that names the argument and the sample index, before any judge call.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import datasets
import evaluate

from . import validation

InputKind = Literal["text", "texts", "list", "phrases"]


@dataclass(frozen=True)
class Input:
    """One per-sample input of a metric.

    kind: ``"text"`` a string; ``"texts"`` a string or a list of strings (several references);
    ``"list"`` a list of strings that may be empty (retrieved contexts, in order); ``"phrases"``
    a list of phrases, one phrase, or a JSON list string (may be empty).
    Optional inputs are not evaluate features: they reach ``_compute`` as keyword arguments
    (``None`` when absent).
    """

    name: str
    kind: InputKind = "text"
    required: bool = True
    allow_empty: bool = False

    def feature(self) -> Any:
        if self.kind == "text":
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
        return validation.text_lists(self.name, values)


class ValidatedMetric(evaluate.Metric):
    """An ``evaluate.Metric`` whose inputs are declared in ``INPUTS`` and checked up front."""

    INPUTS: ClassVar[tuple[Input, ...]] = ()

    @classmethod
    def input_features(cls) -> datasets.Features:
        return datasets.Features({i.name: i.feature() for i in cls.INPUTS if i.required})

    def validate_inputs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Validated, normalised copies of the declared inputs found in ``kwargs``."""
        columns: dict[str, list[Any]] = {}
        for spec in self.INPUTS:
            value = kwargs.get(spec.name)
            if value is None:
                if spec.required:
                    raise ValueError(f"{spec.name} is required")
                continue
            columns[spec.name] = spec.validate(value)
        if columns and validation.same_length(**columns) == 0:
            raise ValueError(f"{self.name} needs at least one sample; got empty inputs")
        return columns

    def compute(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> Any:
        """Validate and normalise the declared inputs, then run evaluate's ``compute``.

        (evaluate appends the metric's inputs description to this docstring.)
        """
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
        columns = self.validate_inputs(kwargs)
        options = {k: v for k, v in kwargs.items() if k not in declared}
        optional = {
            spec.name: columns.get(spec.name) for spec in self.INPUTS if not spec.required
        }
        features = {k: v for k, v in columns.items() if k not in optional}
        try:
            return super().compute(**features, **optional, **options)
        except BaseException:
            self._release_evaluate_files()
            raise

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
