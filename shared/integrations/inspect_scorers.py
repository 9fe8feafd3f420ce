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
from collections.abc import Mapping
from typing import Any

from ..base.errors import UserInputError
from ..base.redaction import mask_secret_options
from ..base.validation import InputError
from ..kit.conversations import from_inspect
from ..runs.rows import RowScore
from .hosts import FieldMap, HostScorer

NAMESPACE = "judge_metrics"  # the scorers' namespace in inspect's registry: judge_metrics/<metric>

#: inspect's field map: compute argument -> the sample's field that holds it (``completion``:
#: ``state.output.completion``; ``target``: the target, one text or, for several, their list;
#: ``input``: ``state.input_text``; ``messages``: ``state.messages`` as OpenAI chat dicts);
#: every other input from the sample's metadata, by CLI column name or the key ``columns`` says.
FIELDS = FieldMap("inspect", {"predictions": "completion", "references": "target",
                              "questions": "input", "messages": "messages"}, ("metadata",))


def sample_record(state: Any, target: Any, scorer: HostScorer) -> dict[str, Any]:
    """An inspect sample as the record :data:`FIELDS` reads."""

    def target_texts() -> Any:
        texts = list(target.target) if target is not None else []
        if not texts or not any(str(t).strip() for t in texts):
            column = scorer.rows.columns().get("references", "reference")
            raise UserInputError(f"sample {state.sample_id} has no target ({scorer.rows.name} "
                                 f"reads its {column} from it)")
        return texts[0] if len(texts) == 1 else texts

    return {"completion": lambda: state.output.completion, "target": target_texts,
            "input": lambda: state.input_text, "messages": lambda: from_inspect(state.messages),
            "metadata": state.metadata or {}}


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
    scorer = HostScorer(metric, FIELDS, columns, score_key, options)

    async def score(state: Any, target: Any) -> Any:
        try:
            row = scorer.row(sample_record(state, target, scorer),
                             f"sample {state.sample_id}'s metadata")
            result = await asyncio.to_thread(scorer.score, row)
        except (UserInputError, InputError) as error:  # this sample's input: it alone unscored
            said = str(error)
            reason = said if said.startswith("sample ") else f"sample {state.sample_id}: {said}"
            result = RowScore(None, {"unmeasured": reason}, reason)
        return as_inspect_score(result, scorer.key)

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
_NAMESPACED: list[bool] = []  # whether inspect namespaces our scorers itself (asked once)


def scorer_name(metric: str) -> str:
    """The name to give inspect's ``scorer`` decorator so that the scorer is registered as
    ``judge_metrics/<metric>``: inspect prefixes a scorer's name with the installed package
    of its code, which it finds for a wheel and not for an editable install (pip install -e
    .). Asked once, of a probe, through inspect's public ``registry_info``."""
    if not _NAMESPACED:
        from inspect_ai.scorer import scorer
        from inspect_ai.util import registry_info

        def namespace_probe() -> Any:  # never made: only its registered name is read
            raise NotImplementedError

        probe = scorer(metrics=[], name=f"{NAMESPACE}_namespace_probe")(namespace_probe)
        _NAMESPACED.append("/" in registry_info(probe).name)
    return metric if _NAMESPACED[0] else f"{NAMESPACE}/{metric}"


class ScorerOptionError(Exception):
    """A bad option of a scorer inspect makes from its registry (``inspect score --scorer
    judge_metrics/accuracy -S fuzzy=true``). Not a ``ValueError``: inspect's loader reads one
    as "the scorer couldn't be loaded". On inspect's command line (click) it is one line,
    without a traceback; :func:`inspect_scorer` gives Python callers our ``UserInputError``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _option_error(error: UserInputError) -> Exception:
    """``error`` as inspect's command line shows it: one line (click's error, inspect's CLI
    being a click command), else :class:`ScorerOptionError`."""
    message = f"judge-metrics: {error}"
    try:
        import click
    except ImportError:  # inspect without its command line
        return ScorerOptionError(message)

    class ClickScorerOptionError(ScorerOptionError, click.ClickException):
        pass

    return ClickScorerOptionError(message)


def registered(metric: str) -> Any:
    """The scorer factory of ``metric`` in inspect's registry, registered at first use as
    ``judge_metrics/<metric>`` (the name ``inspect score --scorer`` takes)."""
    if metric not in _FACTORIES:
        from inspect_ai.scorer import mean, scorer, stderr

        def factory(columns: dict[str, str] | None = None, score_key: str | None = None,
                    **options: Any) -> Any:
            try:
                return score_function(metric, columns, score_key, **options)
            except UserInputError as error:  # one line, not inspect's "couldn't be loaded"
                raise _option_error(error) from None

        factory.__name__ = factory.__qualname__ = metric
        _FACTORIES[metric] = scorer(metrics=[mean(), stderr()], name=scorer_name(metric))(
            factory)
    return _FACTORIES[metric]


def inspect_scorer(metric: str, *, columns: Mapping[str, str] | None = None,
                   score_key: str | None = None, **options: Any) -> Any:
    """An inspect ``Scorer`` of ``metric`` (metrics ``mean()`` and ``stderr()``), named
    ``judge_metrics/<metric>`` in logs; ``options``: the metric's and the judge's (provider, model,
    judges, use_cache ...), checked now (a ``UserInputError``)."""
    try:
        return registered(metric)(columns=columns, score_key=score_key, **options)
    except ScorerOptionError as error:
        raise UserInputError(error.message.removeprefix("judge-metrics: ")) from None
