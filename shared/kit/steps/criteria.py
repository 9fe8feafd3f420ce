"""Judge steps of the metrics that judge by the user's own criteria: G-Eval's rating of a text
(one next-token reading of the scale's score labels and, on request, a short reason) and a
pairwise preference (one A/B reading in each order). Each step returns one
:class:`~shared.base.types.Outcome` per sample; the arithmetic is in :mod:`shared.kit.scoring`, the
option checks here (``Option.check`` functions, raising ``InputError`` naming the option).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...base.types import JudgeRequest, Outcome
from ...base.validation import InputError, InputTypeError
from ...engine.call_batch import INVALID
from ...engine.logprobs import NO_LABEL_WHERE, merged_probability, renormalised
from ..scoring import Preference
from . import grounding, prompts
from .base import JudgeStep, failed_step, is_dry_run, object_schema, token_limit
from .verdicts import as_json_list

REASON_MAX_CHARS = 200
PAIRWISE_LABELS = ("A", "B")


# --- options ----------------------------------------------------------------------------------

def criteria_text(name: str, value: Any) -> str:
    """A required, non-blank criteria text."""
    if value is None:
        raise InputError(name, None, "is required: the criteria the judge rates against, e.g. "
                         "'Is the answer concise and polite?'")
    if not isinstance(value, str):
        raise InputTypeError(name, None, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InputError(name, None, "is empty or whitespace only")
    return value.strip()


def evaluation_steps(name: str, value: Any) -> tuple[str, ...] | None:
    """``None`` or a list of non-blank strings."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InputTypeError(name, None, f"must be a list of strings, got {type(value).__name__}")
    for index, step in enumerate(value):
        if not isinstance(step, str) or not step.strip():
            raise InputError(name, index, f"must be a non-empty string, got {step!r}")
    return tuple(step.strip() for step in value)


def score_range(name: str, value: Any) -> tuple[int, int]:
    """``(low, high)``: integers with 0 <= low < high <= 9. A score is read from one answer
    token, and only the digits are one token in every judge's tokenizer (SmolLM2, Llama 2 and
    Mistral split 10 into two)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence) or len(
            value) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise InputTypeError(name, None, f"must be two integers [low, high], got {value!r}")
    low, high = value
    if not 0 <= low < high <= 9:
        raise InputError(name, None, (
            f"must satisfy 0 <= low < high <= 9, got [{low}, {high}]: the score is read from "
            "one answer token, and only the digits 0-9 are one token in every judge's "
            "tokenizer (10 is two tokens for SmolLM2, Llama 2, Mistral)"))
    return low, high


def rubric(name: str, value: Any) -> dict[int, str] | None:
    """``None`` or a mapping score -> description (JSON keys may be strings: ``{"1": ...}``)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InputTypeError(name, None, f"must be a mapping score -> description, got "
                             f"{type(value).__name__}")
    checked: dict[int, str] = {}
    for key, text in value.items():
        try:
            score = int(key)
        except (TypeError, ValueError):
            raise InputError(name, None, f"key {key!r} is not an integer score") from None
        if isinstance(key, bool) or str(score) != str(key).strip():
            raise InputError(name, None, f"key {key!r} is not an integer score")
        if not isinstance(text, str) or not text.strip():
            raise InputError(name, None, f"the description of {key!r} must be a non-empty "
                             "string")
        if score in checked:
            first = next(k for k in value if str(k).strip() == str(score) or k == score)
            raise InputError(name, None, f"keys {first!r} and {key!r} are both the score "
                             f"{score}: give each score once")
        checked[score] = text.strip()
    return checked


# --- what the judge sees ----------------------------------------------------------------------

@dataclass(frozen=True)
class Criteria:
    """What a G-Eval judge rates against: the criteria, optional steps and rubric, the scale."""

    text: str
    steps: tuple[str, ...] = ()
    rubric: Mapping[int, str] = field(default_factory=dict)
    low: int = 1
    high: int = 5

    def __post_init__(self) -> None:
        outside = sorted(s for s in self.rubric if not self.low <= s <= self.high)
        if outside:
            raise InputError("rubric", None, f"scores {outside} are outside score_range "
                             f"[{self.low}, {self.high}]")

    @property
    def labels(self) -> list[str]:
        return [str(score) for score in range(self.low, self.high + 1)]


def sample_materials(n: int, questions: Sequence[str] | None = None,
                     references: Sequence[Sequence[str]] | None = None,
                     contexts: Sequence[Sequence[str]] | None = None,
                     sources: Sequence[str] | None = None) -> list[dict[str, str | None]]:
    """Per sample, what the judge sees beside the text judged (``None`` where not given): one
    reference as it is, several as a JSON list; the contexts as a JSON list."""

    def reference(texts: Sequence[str]) -> str:
        return texts[0] if len(texts) == 1 else as_json_list(texts)

    return [{
        "question": questions[i] if questions is not None else None,
        "source": sources[i] if sources is not None else None,
        "reference": reference(references[i]) if references is not None else None,
        "contexts": as_json_list(contexts[i]) if contexts is not None else None,
    } for i in range(n)]


# --- label readings ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Reading:
    """One label reading: ``probabilities`` renormalised over the labels (summing to 1),
    ``method`` ("logprobs" or "sampled"), ``mass`` the labels' probability before that."""

    probabilities: dict[str, float]
    method: str
    mass: float
    samples: tuple[str | None, ...] | None = None  # samples=N: the label of each answer


def read_labels(outcome: Outcome, desc: str) -> Outcome:
    """A :class:`Reading` of a ``Judge.label_probabilities`` outcome, or the failed step."""
    if not outcome.ok:
        return failed_step(desc, outcome.error)
    answer = outcome.value
    try:
        distribution = renormalised(answer.probabilities)
    except ValueError as exc:  # the judge runner refuses these first; never raised out
        return failed_step(desc, f"{INVALID}: {exc}")
    if distribution is None:
        return failed_step(desc, f"{INVALID}: no label: none of "
                           f"{', '.join(answer.probabilities)} {NO_LABEL_WHERE}")
    mass = min(1.0, math.fsum(merged_probability(p) for p in answer.probabilities.values()))
    return Outcome(Reading(distribution, answer.method, mass))


def read_samples(outcomes: Sequence[Outcome], desc: str) -> Outcome:
    """A :class:`Reading` of one sample's ``Judge.label_samples`` answers: the share of the
    answers naming each label, over the answers that name one (``method`` "sampled",
    ``samples`` each answer's label, ``None`` where it names none); the failed step when no
    answer names a label."""
    labels: list[str | None] = []
    for outcome in outcomes:
        if not outcome.ok:
            return failed_step(desc, outcome.error)
        named = [k for k, p in outcome.value.probabilities.items() if p > 0]
        labels.append(named[0] if named else None)
    counted = [label for label in labels if label is not None]
    if not counted:
        written = "; ".join(repr((o.value.text or "")[:40]) for o in outcomes[:3])
        return failed_step(desc, f"none of the {len(outcomes)} sampled answers names a score "
                           f"(e.g. {written})")
    scale = list(outcomes[0].value.probabilities)
    distribution = {k: counted.count(k) / len(counted) for k in scale}
    return Outcome(Reading(distribution, "sampled", 1.0, tuple(labels)))


def rate(judge: Any, criteria: Criteria, predictions: Sequence[str],
         materials: Sequence[Mapping[str, str | None]],
         samples: int | None = None) -> list[Outcome]:
    """G-Eval: per sample, the :class:`Reading` of the scale's score labels: from the first
    answer token's probabilities, or with ``samples`` the empirical distribution of that many
    answers sampled at temperature 1 (:func:`read_samples`)."""
    requests = [prompts.g_eval_request(criteria.text, criteria.steps, criteria.rubric,
                                       criteria.low, criteria.high, prediction, **shown)
                for prediction, shown in zip(predictions, materials, strict=True)]
    if samples:
        if not judge.can_sample():
            raise InputError("samples", None, "needs a judge that samples its answers at "
                             f"temperature 1; provider={judge.config.provider!r} does not (a "
                             "judge with log-probabilities needs no samples: leave it unset)")
        answers = judge.label_samples(requests, criteria.labels, samples, desc="g_eval")
        return [read_samples(outcomes, "g_eval") for outcomes in answers]
    outcomes = judge.label_probabilities(requests, criteria.labels, desc="g_eval")
    return [read_labels(outcome, "g_eval") for outcome in outcomes]


@dataclass(frozen=True)
class ReasonJob:
    """One G-Eval reason: the sample's score, the criteria it was rated under, the text and the
    materials shown with it."""

    score: float
    criteria: Criteria
    prediction: str
    materials: Mapping[str, str | None]


@dataclass(frozen=True)
class ReasonStep(JudgeStep):
    """G-Eval's reason for a score. A job: :class:`ReasonJob`; value: ``{"reason": str}``, which
    must not copy the prompt's placeholder (:func:`shared.kit.steps.grounding.reasons_check`). Its
    request comes from :func:`shared.kit.steps.prompts.g_eval_reason_request` (the prompt's text
    follows the criteria's shape: steps, rubric, scale), so it holds no template."""

    template: None = None
    desc: str = "g_eval reason"

    def request(self, job: ReasonJob) -> JudgeRequest:
        c = job.criteria
        return prompts.g_eval_reason_request(job.score, c.text, c.steps, c.rubric, c.low, c.high,
                                             job.prediction, **job.materials)

    def schema(self, job: ReasonJob) -> dict[str, Any]:
        return object_schema({"reason": {"type": "string", "minLength": 1,
                                         "maxLength": REASON_MAX_CHARS}})

    def check(self, job: ReasonJob) -> Any:
        return grounding.reasons_check([""], prompts.G_EVAL_REASON_EXAMPLES)

    def max_tokens(self, job: ReasonJob) -> int:
        return token_limit(REASON_MAX_CHARS + 40)

    def read(self, job: ReasonJob, answer: Any) -> Outcome:
        return Outcome(answer)


G_EVAL_REASON = ReasonStep()


def explain(judge: Any, criteria: Criteria, predictions: Sequence[str],
            materials: Sequence[Mapping[str, str | None]],
            raw_scores: Sequence[float | None]) -> list[Outcome | None]:
    """G-Eval's ``explain``: per rated sample, ``{"reason": str}`` for its score (``None`` for
    a sample without one; a dry run counts one request per sample), through
    :data:`G_EVAL_REASON`."""
    if is_dry_run(judge):
        raw_scores = [(criteria.low + criteria.high) / 2] * len(predictions)
    return G_EVAL_REASON.ask(judge, [
        None if raw is None else ReasonJob(raw, criteria, prediction, shown)
        for raw, prediction, shown in zip(raw_scores, predictions, materials, strict=True)])


def prefer(judge: Any, criteria: str, predictions: Sequence[str], baselines: Sequence[str],
           materials: Sequence[Mapping[str, str | None]]) -> list[Outcome]:
    """Pairwise: per sample, ``(Preference, orders)``: the A/B reading with the prediction
    shown first (as A), then with the baseline shown first; ``orders`` the per-order details."""
    requests = []
    for prediction, baseline, shown in zip(predictions, baselines, materials, strict=True):
        requests.append(prompts.pairwise_request(criteria, prediction, baseline, **shown))
        requests.append(prompts.pairwise_request(criteria, baseline, prediction, **shown))
    outcomes = judge.label_probabilities(requests, PAIRWISE_LABELS, desc="pairwise")
    steps = []
    for n in range(len(predictions)):
        first, second = (read_labels(o, "pairwise") for o in outcomes[2 * n:2 * n + 2])
        if not first.ok or not second.ok:
            steps.append(first if not first.ok else second)
            continue
        preference = Preference(first.value.probabilities["A"], second.value.probabilities["B"])
        orders = [_order("prediction", first.value, preference.shown_first),
                  _order("baseline", second.value, preference.shown_second)]
        steps.append(Outcome((preference, orders)))
    return steps


def _order(shown_first: str, reading: Reading, p_prediction: float) -> dict[str, Any]:
    return {"shown_first": shown_first, "probabilities": reading.probabilities,
            "p_prediction": p_prediction, "score_method": reading.method,
            "label_mass": reading.mass}


# --- the prompts these metrics declare (JudgeMetric.sent_prompts) ------------------------------

class _Placeholder(str):
    """A ``{field}`` placeholder that survives a number's format spec (the reason's score)."""

    def __format__(self, spec: str) -> str:
        return str(self)


# every text a request may show, as its ``{field}`` placeholder (fenced as a request fences it)
_SHOWN = {name: "{" + name + "}" for name in prompts.MATERIAL_HEADINGS}


def _declared(request: JudgeRequest) -> prompts.PromptTemplate:
    name, _, version = request.prompt_id.partition("@")
    return prompts.PromptTemplate(name, version, request.messages[0][1], fenced=False)


def g_eval_prompts(criteria: Criteria, explain: bool = False
                   ) -> tuple[prompts.PromptTemplate, ...]:
    """G-Eval's prompts for these criteria, as it sends them: its text with the criteria,
    steps, rubric and scale written in, every text it shows a ``{field}`` placeholder (each
    material under its heading: a row shows those it has); with ``explain`` the reason's too."""
    shown = (criteria.text, criteria.steps, criteria.rubric, criteria.low, criteria.high,
             "{prediction}")
    sent = [prompts.g_eval_request(*shown, **_SHOWN)]
    if explain:
        score: Any = _Placeholder("{score}")
        sent.append(prompts.g_eval_reason_request(score, *shown, **_SHOWN))
    return tuple(_declared(request) for request in sent)


def pairwise_prompts(criteria: str) -> tuple[prompts.PromptTemplate, ...]:
    """The pairwise prompt for these criteria, as :func:`prefer` sends it in either order."""
    shown = {name: _SHOWN[name] for name in ("question", "reference", "contexts")}
    return (_declared(prompts.pairwise_request(criteria, "{answer_a}", "{answer_b}", **shown)),)
