"""Yes/No scoring from a judge's log-probabilities: the L3Score rule of SPIQA, and the exact
probability a local model's full next-token distribution gives.

The SPIQA rule (``score_openai`` in google/spiqa), applied to the first generated token's top-k
list (top-5 in L3Score):

- a token counts as Yes when ``token.strip().lower()`` is ``yes`` or ``yeah``, as No when it is
  ``no``; on each side only the first (highest-ranked) match counts;
- neither side in the list: 0.0;
- both: ``exp(yes) / (exp(yes) + exp(no))``;
- one side only: the missing side's probability is estimated as the smaller of the mass left
  outside the list (``1 - sum(p_top)``) and the lowest-ranked entry's probability, clamped below
  at ``1e-8`` (``1 - sum`` can be slightly negative from rounding); then the same normalisation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..base.types import LabelAnswer

#: top log-probabilities asked of an OpenAI-compatible server to read label probabilities
#: (DeepEval's GEval asks for 20, the most OpenAI returns)
LABEL_TOP_LOGPROBS = 20
YES_TOKENS = frozenset({"yes", "yeah"})
NO_TOKENS = frozenset({"no"})
MIN_MISSING_PROBABILITY = 1e-8
_LOGPROB_TOLERANCE = 1e-4  # servers' float rounding can leave a top log-probability just above 0


@dataclass(frozen=True)
class L3ScoreBreakdown:
    """How one top-k list was scored.

    ``yes_rank``/``no_rank``: 0-based rank of the matching entry (``None``: no match);
    ``estimated``: the side whose log-probability was estimated (``"yes"``, ``"no"`` or ``None``)
    and ``estimated_logprob`` the value used for it.
    """

    score: float
    top: list[tuple[str, float]]
    yes_rank: int | None
    no_rank: int | None
    estimated: str | None = None
    estimated_logprob: float | None = None

    def as_dict(self) -> dict[str, Any]:
        def side(rank: int | None) -> dict[str, Any] | None:
            if rank is None:
                return None
            token, logprob = self.top[rank]
            return {"rank": rank, "token": token, "logprob": logprob}

        return {
            "score": self.score,
            "top_logprobs": [[token, logprob] for token, logprob in self.top],
            "yes": side(self.yes_rank),
            "no": side(self.no_rank),
            "estimated": self.estimated,
            "estimated_logprob": self.estimated_logprob,
        }


def _checked_top(top: Any) -> list[tuple[str, float]]:
    if top is None or isinstance(top, (str, bytes)):
        raise TypeError(f"top must be a list of (token, logprob) pairs, got {type(top).__name__}")
    out: list[tuple[str, float]] = []
    for i, entry in enumerate(top):
        try:
            token, logprob = entry
        except (TypeError, ValueError):
            raise TypeError(f"top[{i}] must be a (token, logprob) pair, got {entry!r}") from None
        if not isinstance(token, str):
            raise TypeError(f"top[{i}] token must be a string, got {type(token).__name__}")
        if isinstance(logprob, bool) or not isinstance(logprob, (int, float)):
            raise TypeError(f"top[{i}] logprob must be a number, got {type(logprob).__name__}")
        if math.isnan(logprob) or logprob > _LOGPROB_TOLERANCE:
            raise ValueError(f"top[{i}] logprob must be <= 0 (a log-probability), got {logprob}")
        out.append((token, float(logprob)))
    return out


def _first_match(top: Sequence[tuple[str, float]], words: frozenset[str]) -> int | None:
    for rank, (token, _) in enumerate(top):
        if token.strip().lower() in words:
            return rank
    return None


def _normalised(log_yes: float, log_no: float) -> float:
    """``exp(log_yes) / (exp(log_yes) + exp(log_no))`` without overflow or underflow."""
    m = max(log_yes, log_no)
    if m == -math.inf:
        return 0.0
    yes, no = math.exp(log_yes - m), math.exp(log_no - m)
    return yes / (yes + no)


def l3score_breakdown(top: Sequence[tuple[str, float]]) -> L3ScoreBreakdown:
    """Score one answer's top-k list with the SPIQA rule, saying which entries matched."""
    entries = _checked_top(top)
    yes_rank = _first_match(entries, YES_TOKENS)
    no_rank = _first_match(entries, NO_TOKENS)
    if yes_rank is None and no_rank is None:
        return L3ScoreBreakdown(0.0, entries, None, None)
    if yes_rank is not None and no_rank is not None:
        score = _normalised(entries[yes_rank][1], entries[no_rank][1])
        return L3ScoreBreakdown(score, entries, yes_rank, no_rank)
    probabilities = [math.exp(logprob) for _, logprob in entries]
    missing = max(min(probabilities[-1], 1.0 - math.fsum(probabilities)), MIN_MISSING_PROBABILITY)
    log_missing = math.log(missing)
    if yes_rank is not None:
        score = _normalised(entries[yes_rank][1], log_missing)
        return L3ScoreBreakdown(score, entries, yes_rank, None, "no", log_missing)
    score = _normalised(log_missing, entries[no_rank][1])
    return L3ScoreBreakdown(score, entries, None, no_rank, "yes", log_missing)


def l3score_from_top_logprobs(top: Sequence[tuple[str, float]]) -> float:
    """The SPIQA L3Score of one answer.

    ``top``: the first generated token's ``(token, logprob)`` pairs in rank order, as an
    OpenAI-compatible API returns them (top-5 in L3Score). See the module docstring for the rule.
    """
    return l3score_breakdown(top).score


def exact_yes_probability(p_yes: float, p_no: float) -> float:
    """``P(Yes) / (P(Yes) + P(No))`` from a full next-token distribution (local models), where
    ``p_yes``/``p_no`` sum the probabilities of the Yes-variants and No-variants.

    Both zero gives 0.0, as the top-k rule does when neither side appears."""
    for name, value in (("p_yes", p_yes), ("p_no", p_no)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}")
        if math.isnan(value) or not 0.0 <= value <= 1.0 + 1e-6:
            raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
    total = p_yes + p_no
    return 0.0 if total <= 0 else float(p_yes) / total


# ---------------------------------------------------------------- label probabilities


def label_mass(top: Sequence[tuple[str, float]], labels: Sequence[str]) -> dict[str, float]:
    """Each label's probability in a top-k list: the sum of ``exp(logprob)`` over the entries
    whose stripped text is the label (``" 4"`` and ``"4"`` are both the score 4), at most 1.0
    (the local judge sums and clamps its full distribution the same way, so a server listing
    ``"4"`` and ``" 4"`` both near certain reads as the score 4 with probability 1); 0.0 for a
    label the list does not hold. A malformed list (a token that is no string, a
    log-probability that is no number or above 0) raises ``TypeError``/``ValueError``."""
    mass = dict.fromkeys(labels, 0.0)
    for token, logprob in _checked_top(top):
        label = token.strip()
        if label in mass:
            mass[label] += math.exp(logprob)
    return {label: merged_probability(value) for label, value in mass.items()}


def merged_probability(total: float) -> float:
    """A label's probability summed over its token variants, clamped to [0, 1] (float rounding
    of a true distribution, or a server listing one label twice, can pass 1)."""
    return min(1.0, max(0.0, float(total)))


def label_answer_problem(probabilities: Any, labels: Sequence[str],
                         written: str | None = None) -> str | None:
    """Why a label answer (``LabelAnswer.probabilities``, fresh or read back from the cache)
    cannot be read, or ``None`` when it can: it must map every label to a number in [0, 1]
    (float rounding up to ``1e-4`` either side is clamped), and give at least one label a
    probability above 0. ``written``: the text of a written answer (``method`` "sampled"),
    quoted in the reason when it names no label."""
    if not isinstance(probabilities, Mapping):
        return f"label probabilities must be a mapping, got {type(probabilities).__name__}"
    for label in labels:
        if label not in probabilities:
            return f"no probability for the label {label!r}"
        value = probabilities[label]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(
                value) or not -_LOGPROB_TOLERANCE <= value <= 1.0 + _LOGPROB_TOLERANCE:
            return f"the probability of {label!r} is {value!r}, not a number in [0, 1]"
    if not any(probabilities[label] > 0 for label in labels):
        if written is not None:
            return f"no label: the judge wrote none of {', '.join(labels)}: {written[:80]!r}"
        return f"no label: none of {', '.join(labels)} {NO_LABEL_WHERE}"
    return None


#: where a label was looked for, in a no-label reason
NO_LABEL_WHERE = "among the judge's most likely next tokens"


def renormalised(probabilities: Mapping[str, float]) -> dict[str, float] | None:
    """The probabilities (each clamped to [0, 1]) divided by their sum, so that they sum to 1
    over the labels; ``None`` when every label has probability 0 (none of them was among the
    tokens read). ``ValueError`` for a value that is no probability (see
    :func:`label_answer_problem`, which the judge runner applies to every answer first)."""
    problem = label_answer_problem(probabilities, list(probabilities))
    if problem is not None and not problem.startswith("no label"):
        raise ValueError(problem)
    clamped = {label: merged_probability(value) for label, value in probabilities.items()}
    total = math.fsum(clamped.values())
    if total <= 0:
        return None
    return {label: value / total for label, value in clamped.items()}


_MARKUP = " \t\r\n*_`#\"'()[]{}<>.,;:!?"
_ANSWER_PREFIX = re.compile(
    r"^(?:final\s+)?(?:answer|score|rating|verdict|choice|grade|label)\s*[:=-]\s*", re.I)
_CUE = (r"(?i:\b(?:answer|response|option|choice|score|rating|verdict|winner|grade|is|be|"
        r"choose|pick|prefer|select|rate\s+it|give\s+it|gave\s+it|rated)\b(?:\s+(?:a|an|as))?"
        r"|[:=])")


def _label_pattern(labels: Collection[str]) -> str:
    alternatives = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    return rf"(?<![A-Za-z0-9])({alternatives})(?![A-Za-z0-9])"


def sampled_label(text: str, labels: Collection[str]) -> str | None:
    """The label a judge's written answer gives, read the way the prompt asks for it ("Answer
    with the score only: one number", "Answer with one letter: A or B"), or ``None``:

    1. the whole answer, markup, quotes and an ``Answer:``/``Score:`` prefix removed, is a label;
    2. else, with the scale's own mentions dropped (``1 to 5``, ``A or B``, ``between A and
       B``; ``4/5`` and ``4 out of 5`` keep the 4), the last label given after a cue (``is``,
       ``:``, ``score``, ``answer``, ``I give it a``, ``choose``, ...): "On a scale of 1 to 5, I
       give it a 4." -> ``"4"``; "A better answer is B." -> ``"B"``;
    3. else a label followed by "is better", "wins" or "is preferred": "B is better than A."
       -> ``"B"``;
    4. else the last label written (a sentence-initial article "A" before a lower-case word is
       no label).

    Labels are matched as whole words, case-sensitively ("a" is no "A")."""
    labels = set(labels)
    whole = text.strip(_MARKUP)
    whole = _ANSWER_PREFIX.sub("", whole).strip(_MARKUP)
    if whole in labels:
        return whole
    label = _label_pattern(labels)
    rest = re.sub(rf"{label}\s*(?:/|out\s+of)\s*[0-9]+", r"\1", text)
    rest = re.sub(rf"(?:between\s+)?{label}\s*(?:-|–|to|and|or)\s*{label}", " ", rest)
    cued = re.findall(rf"{_CUE}[\s*_`\"'(\[]*{label}", rest)
    if cued:
        return cued[-1]
    better = re.search(rf"{label}[\s*_`\"')\]]*(?i:is\s+(?:the\s+)?(?:better|preferred|"
                       r"preferable|superior)|wins)\b", rest)
    if better:
        return better.group(1)
    found = [m for m in re.finditer(label, rest)
             if not re.match(r"A\s+[a-z]", rest[m.start():m.start() + 4])]
    return found[-1].group(1) if found else None


def sampled_answer(text: str, labels: Sequence[str]) -> LabelAnswer:
    """A written answer as a :class:`LabelAnswer` (``method`` "sampled", ``text`` the answer):
    1.0 for the label it names (:func:`sampled_label`), 0.0 for the others; all 0.0 when it
    names none."""
    label = sampled_label(text, labels)
    return LabelAnswer({k: float(k == label) for k in labels}, "sampled", text)
