"""inspect_ai scorers of our metrics (docs/INTEGRATIONS.md).

``inspect_scorer("faithfulness", columns={"contexts": "documents"})`` is an inspect ``Scorer``:
per sample, ``predictions`` <- the model's completion, ``references`` <- the target,
``questions`` <- the input text, ``messages`` <- the conversation (``state.messages`` as OpenAI
chat dicts, by :func:`shared.kit.conversations.from_inspect`), every other input from the
sample's metadata (under its CLI column name, or the key ``columns`` maps the input to). The
value is the metric's per-sample score as ``score`` writes it
(:class:`shared.runs.rows.MetricRows`); an unmeasured sample is ``Score.unscored`` with its
reason, never 0. inspect_ai is imported only when a scorer is made.

Bad input is one sample's problem: a sample without a target, with an empty completion, a value
of the wrong shape or a tool call inspect could not parse is left unscored with its reason
(naming the sample) and the rest are scored. A bad option is our one-line error, in Python and
on inspect's command line. inspect writes a scorer's arguments into its log (the header, the
scoring events, ``results.scores[].params``): every credential among them is stored masked."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

from ..base.errors import UserInputError
from ..base.redaction import mask_secret_options
from ..base.validation import InputError
from ..kit.conversations import from_inspect
from ..runs.rows import MetricRows, RowScore

NAMESPACE = "judge_metrics"  # the scorers' namespace in inspect's registry: judge_metrics/<metric>

# compute argument -> where an inspect sample holds it (the rest come from the metadata)
FROM_STATE = {"predictions": "completion", "references": "target", "questions": "input",
              "messages": "messages"}


def checked_columns(rows: MetricRows, columns: Mapping[str, str] | None) -> dict[str, str]:
    """``columns`` (a compute argument or its CLI column -> a metadata key) keyed by CLI
    column; an input the metric does not take is a one-line error."""
    known = rows.columns()
    found = {}
    for name, key in (columns or {}).items():
        column = known.get(name, name)
        if column not in known.values():
            raise UserInputError(f"columns: {rows.name} has no input {name!r} (its inputs: "
                                 f"{', '.join(known)})")
        found[column] = key
    return found


async def sample_row(state: Any, target: Any, rows: MetricRows,
                     columns: Mapping[str, str]) -> dict[str, list[Any]]:
    """One inspect sample as a one-row batch (CLI column -> [value])."""
    metadata = state.metadata or {}
    row = rows.mapped(columns, metadata, f"sample {state.sample_id}'s metadata")
    for argument, column in rows.columns().items():
        source = FROM_STATE.get(argument)
        if column in row:
            continue
        if source == "completion":
            row[column] = [state.output.completion]
        elif source == "target":
            texts = list(target.target) if target is not None else []
            if not texts or not any(str(t).strip() for t in texts):
                raise UserInputError(f"sample {state.sample_id} has no target ({rows.name} "
                                     f"reads its {column} from it)")
            row[column] = [texts[0] if len(texts) == 1 else texts]
        elif source == "input":
            row[column] = [state.input_text]
        elif source == "messages":
            row[column] = [from_inspect(state.messages)]
        elif column in metadata:
            row[column] = [metadata[column]]
    return row


def as_inspect_score(result: RowScore, key: str) -> Any:
    from inspect_ai.scorer import Score

    if result.value is None:
        return Score.unscored(reason=result.unmeasured, explanation=result.unmeasured,
                              metadata=result.details)
    reason = result.details.get("reason")
    return Score(value=result.value, explanation=reason if isinstance(reason, str) else None,
                 metadata={"score_key": key, **result.details})


def score_function(metric: str, columns: Mapping[str, str] | None = None,
                   score_key: str | None = None, **options: Any) -> Any:
    """The async ``score(state, target)`` of ``metric`` (its options checked now)."""
    rows = MetricRows(metric, score_key=score_key, **options)
    mapped = checked_columns(rows, columns)
    lock = threading.Lock()  # one compute at a time: a metric object is not thread-safe

    def score_one(row: dict[str, list[Any]]) -> RowScore:
        with lock:
            return rows.score(row)[0]

    async def score(state: Any, target: Any) -> Any:
        try:
            row = await sample_row(state, target, rows, mapped)
            result = await asyncio.to_thread(score_one, row)
        except (UserInputError, InputError) as error:  # this sample's input: it alone unscored
            said = str(error)
            reason = said if said.startswith("sample ") else f"sample {state.sample_id}: {said}"
            result = RowScore(None, {"unmeasured": reason}, reason)
        return as_inspect_score(result, rows.key)

    return InspectScore(score)


class InspectScore:
    """The async ``score(state, target)`` inspect calls. inspect tags it with its creation
    arguments (``__registry_params__``, written into the log): they are stored with every
    credential masked (:func:`shared.base.redaction.mask_secret_options`)."""

    def __init__(self, score: Any) -> None:
        self._score = score

    async def __call__(self, state: Any, target: Any) -> Any:
        return await self._score(state, target)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.endswith("params__") and isinstance(value, Mapping):
            value = mask_secret_options(value)
        object.__setattr__(self, name, value)


_FACTORIES: dict[str, Any] = {}


def registered(metric: str) -> Any:
    """The scorer factory of ``metric`` in inspect's registry, registered at first use as
    ``judge_metrics/<metric>`` (the name ``inspect score --scorer`` takes)."""
    if metric not in _FACTORIES:
        from inspect_ai._util.registry import registry_name
        from inspect_ai.scorer import mean, scorer, stderr

        def factory(columns: dict[str, str] | None = None, score_key: str | None = None,
                    **options: Any) -> Any:
            from inspect_ai._util.error import PrerequisiteError

            try:
                return score_function(metric, columns, score_key, **options)
            except UserInputError as error:  # inspect's own one-line error, not "couldn't
                raise PrerequisiteError(f"judge-metrics: {error}") from None  # be loaded"

        factory.__name__ = factory.__qualname__ = metric
        # inspect namespaces a scorer by the installed package of its code; an editable
        # install (pip install -e .) is not found by the package's name: say it here
        name = metric if "/" in registry_name(factory, metric) else f"{NAMESPACE}/{metric}"
        _FACTORIES[metric] = scorer(metrics=[mean(), stderr()], name=name)(factory)
    return _FACTORIES[metric]


def inspect_scorer(metric: str, *, columns: Mapping[str, str] | None = None,
                   score_key: str | None = None, **options: Any) -> Any:
    """An inspect ``Scorer`` of ``metric`` (metrics ``mean()`` and ``stderr()``), named
    ``judge_metrics/<metric>`` in logs; ``options``: the metric's and the judge's (provider, model,
    judges, use_cache ...), checked now (a ``UserInputError``)."""
    from inspect_ai._util.error import PrerequisiteError

    try:
        return registered(metric)(columns=columns, score_key=score_key, **options)
    except PrerequisiteError as error:
        raise UserInputError(str(error.message).removeprefix("judge-metrics: ")) from None
