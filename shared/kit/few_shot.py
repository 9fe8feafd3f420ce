"""Few-shot examples for a judge metric (its ``examples`` option, docs/ALIGNMENT.md): declared,
checked and shown once here for every judge metric.

A judge metric names, in ``SCORING_PROMPTS``, the prompts whose answers its per-row score is
read from: the verdict prompt of the multi-step metrics (statements or opinions -> verdicts:
the extraction prompts only list what the row's own text says, and a person's label is about
the verdict, not the list), the one prompt of the one-prompt metrics (l3score, g_eval's score,
pairwise's preference in both orders, summary_coherence, task_completion, the context
verdicts), never g_eval's reason (it explains a score already given).
:class:`~shared.kit.judge_metric.JudgeMetric` adds the option (:func:`examples_option`) and
hands ``score`` a judge that starts each request of those prompts with one fenced JSON block of
the examples (:func:`show_examples`); every other request, and every request without examples,
is sent byte for byte as before. The examples are user data: fenced against prompt injection
like every field (:func:`~shared.base.text.fence`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..base.options import Option
from ..base.text import fence
from ..base.validation import InputError

__all__ = ["EXAMPLES_INTRO", "check_examples", "examples_block", "examples_option",
           "show_examples"]

EXAMPLES_INTRO = ("Examples a person labelled (JSON: each example's inputs and the person's "
                  "label for the whole example):\n")


def examples_option(metric_class: Any) -> Option:
    """The ``examples`` option of ``metric_class``: its inputs' columns plus ``label``."""
    inputs = metric_class.INPUTS
    keys = ", ".join(spec.column_name for spec in inputs)
    optional = [spec.column_name for spec in inputs if not spec.required]
    names = metric_class.SCORING_PROMPTS
    shown = " and ".join(names) + (" prompts" if len(names) > 1 else " prompt")
    return Option("examples", list, None, nullable=True, type_doc="list of dict",
                  check=lambda name, value: check_examples(name, value, inputs),
                  doc=f"few-shot examples, shown in one fenced JSON block before the {shown} "
                  f"(docs/ALIGNMENT.md): dicts with {keys} (a row's inputs"
                  + (f"; {', '.join(optional)} may be left out" if optional else "")
                  + ") and label (the person's, e.g. Yes or No); `align --few-shot K` chooses "
                  "them from the training folds' disagreements")


def check_examples(name: str, value: Any, inputs: Sequence[Any]) -> list[dict[str, Any]] | None:
    """``value`` checked: ``None`` (or an empty list) for none, else a list of dicts whose keys
    are the columns of ``inputs`` (the :class:`~shared.kit.metric_base.Input` declarations;
    the optional ones may be missing) plus ``label`` (text, a number or true/false). Each value
    is checked as its input is; a conversation or JSON input is kept as its JSON value."""
    if value is None or (isinstance(value, list) and not value):
        return None
    columns = {spec.column_name: spec for spec in inputs}
    keys = ", ".join([*columns, "label"])
    if not isinstance(value, (list, tuple)):
        raise InputError(name, None, f"must be a list of dicts with {keys}, got "
                         f"{type(value).__name__}")
    checked = []
    for index, example in enumerate(value):
        if not isinstance(example, Mapping):
            raise InputError(name, index, f"must be a dict with {keys}, got "
                             f"{type(example).__name__}")
        unknown = sorted(str(k) for k in set(example) - set(columns) - {"label"})
        missing = [c for c, spec in columns.items() if spec.required and example.get(c) is None]
        if "label" not in example:
            missing.append("label")
        if unknown or missing:
            problem = (f"has no {', '.join(missing)}" if missing
                       else f"has unknown keys {', '.join(unknown)}")
            raise InputError(name, index, f"{problem} (an example's keys: {keys})")
        row = {c: _input_value(name, index, spec, example[c])
               for c, spec in columns.items() if example.get(c) is not None}
        checked.append({**row, "label": _label(name, index, example["label"])})
    return checked


def _input_value(name: str, index: int, spec: Any, value: Any) -> Any:
    try:
        found = spec.validate([value])[0]
    except (TypeError, ValueError) as error:
        reason = error.reason if isinstance(error, InputError) else str(error)
        raise InputError(name, index, f"{spec.column_name}: {reason}") from None
    return json.loads(found) if spec.kind in ("messages", "json") else found


def _label(name: str, index: int, value: Any) -> Any:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, (bool, int)) or (isinstance(value, float) and math.isfinite(value)):
        return value
    raise InputError(name, index, f"label must be text, a number or true/false, got {value!r}")


def examples_block(examples: Sequence[Mapping[str, Any]]) -> str:
    """What a request of a scoring prompt starts with: :data:`EXAMPLES_INTRO`, the examples as
    one fenced JSON list, a blank line."""
    text = json.dumps(list(examples), ensure_ascii=False, indent=1)
    return EXAMPLES_INTRO + fence("examples", text) + "\n\n"


class _ShownExamples:
    """A judge that starts the first message of every request of ``names``' prompts with
    ``block``; anything else it is asked goes to ``judge`` as it is."""

    def __init__(self, judge: Any, block: str, names: Iterable[str]) -> None:
        self._judge = judge
        self._block = block
        self._names = frozenset(names)

    def __getattr__(self, name: str) -> Any:
        if name == "_judge":  # not set yet (a copy being made): never recurse
            raise AttributeError(name)
        return getattr(self._judge, name)

    def _shown(self, requests: Iterable[Any]) -> list[Any]:
        out = []
        for request in requests:
            if request.prompt_id.partition("@")[0] in self._names:
                (role, text), *rest = request.messages
                request = dataclasses.replace(
                    request, messages=((role, self._block + text), *rest))
            out.append(request)
        return out

    def structured(self, requests: Iterable[Any], *args: Any, **kwargs: Any) -> Any:
        return self._judge.structured(self._shown(requests), *args, **kwargs)

    def yes_no(self, requests: Iterable[Any], *args: Any, **kwargs: Any) -> Any:
        return self._judge.yes_no(self._shown(requests), *args, **kwargs)

    def label_probabilities(self, requests: Iterable[Any], *args: Any, **kwargs: Any) -> Any:
        return self._judge.label_probabilities(self._shown(requests), *args, **kwargs)

    def label_samples(self, requests: Iterable[Any], *args: Any, **kwargs: Any) -> Any:
        return self._judge.label_samples(self._shown(requests), *args, **kwargs)


def show_examples(judge: Any, examples: Sequence[Mapping[str, Any]] | None,
                  names: Iterable[str]) -> Any:
    """``judge`` itself when there are no examples; else a judge that shows them
    (:func:`examples_block`) before every request of the prompts ``names``."""
    if not examples:
        return judge
    return _ShownExamples(judge, examples_block(examples), names)
