"""Pure arithmetic of the LLM-guided metrics: verdicts in, scores out.

No judge, no I/O: every function takes what the judge decided (booleans, counts, ratings) and
applies the formula of the metric's card (Valor's text-generation metrics, RAGAS's answer
correctness). Keeping the arithmetic here makes each formula testable on verdicts built by hand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Verdicts = Sequence[bool | int]


def _flags(name: str, verdicts: Verdicts) -> list[bool]:
    out: list[bool] = []
    for i, v in enumerate(verdicts):
        if isinstance(v, bool):
            out.append(v)
        elif isinstance(v, int) and v in (0, 1):
            out.append(bool(v))
        else:
            raise TypeError(f"{name}[{i}] must be a bool or 0/1, got {v!r}")
    return out


def proportion(verdicts: Verdicts, *, empty: float = 0.0) -> float:
    """Share of ``True`` verdicts; ``empty`` when there are none.

    The formula of answer relevance, bias, toxicity, context relevance, context recall,
    faithfulness and hallucination (each card says what its ``empty`` value is)."""
    flags = _flags("verdicts", verdicts)
    if not flags:
        return float(empty)
    return sum(flags) / len(flags)


def average_precision(verdicts: Verdicts) -> float:
    """Valor's context precision of one ordered list of verdicts (True: the context is useful).

    ``sum_k precision@k * v_k / sum_k v_k`` with ``precision@k`` the share of useful contexts
    among the first ``k``; 0.0 when no verdict is True (and for an empty list).
    """
    flags = _flags("verdicts", verdicts)
    useful = 0
    total = 0.0
    for k, flag in enumerate(flags, start=1):
        if flag:
            useful += 1
            total += useful / k
    return total / useful if useful else 0.0


def any_verdicts(per_reference: Sequence[Verdicts], n_items: int) -> list[bool]:
    """Item-wise OR over several references' verdict lists (context precision with several
    references: a context is useful if it is useful for any reference)."""
    merged = [False] * n_items
    for r, verdicts in enumerate(per_reference):
        flags = _flags(f"per_reference[{r}]", verdicts)
        if len(flags) != n_items:
            raise ValueError(f"per_reference[{r}] has {len(flags)} verdicts, expected {n_items}")
        merged = [a or b for a, b in zip(merged, flags, strict=True)]
    return merged


def context_precision(
    per_reference: Sequence[Verdicts], n_contexts: int, n_references: int
) -> float:
    """Context precision of one sample, with Valor's edge cases.

    No contexts and no references: 1.0; exactly one of them empty: 0.0; otherwise the average
    precision of the verdicts OR-ed over the references.
    """
    if n_contexts == 0 and n_references == 0:
        return 1.0
    if n_contexts == 0 or n_references == 0:
        return 0.0
    return average_precision(any_verdicts(per_reference, n_contexts))


def f1_from_counts(tp: int, fp: int, fn: int) -> float:
    """RAGAS/Valor statement F1: ``tp / (tp + 0.5 (fp + fn))``; 0.0 when ``tp`` is 0."""
    for name, value in (("tp", tp), ("fp", fp), ("fn", fn)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    if tp == 0:
        return 0.0
    return tp / (tp + 0.5 * (fp + fn))


def weighted_score(f1: float, similarity: float | None, weights: Sequence[float]) -> float:
    """RAGAS answer correctness: the weighted average of the statement F1 and the answer
    similarity (``np.average([f1, similarity], weights=weights)``).

    ``similarity`` may be ``None`` only when its weight is 0 (Valor's F1-only definition). The
    cosine similarity is clipped to [0, 1], so the score stays in [0, 1].
    """
    w_f1, w_sim = (float(w) for w in weights)
    if w_f1 < 0 or w_sim < 0 or not w_f1 + w_sim > 0:
        raise ValueError(f"weights must be >= 0 and sum to more than 0, got {list(weights)}")
    if w_sim == 0:
        return f1
    if similarity is None or math.isnan(similarity):
        raise ValueError("similarity is required when its weight is not 0")
    similarity = min(1.0, max(0.0, similarity))
    # the weights are made to sum to 1 before they multiply: a tiny weight (5e-324) times a
    # score underflows to 0, which would leave the mean outside [min, max] of its two parts
    total = w_f1 + w_sim
    return (w_f1 / total) * f1 + (w_sim / total) * similarity


def binarize(score: float, threshold: float | None) -> float:
    """RAGAS's optional threshold: 1.0 when ``score >= threshold``, else 0.0; unchanged when
    ``threshold`` is None."""
    if threshold is None:
        return score
    return 1.0 if score >= threshold else 0.0


def best(scores: Sequence[float]) -> float:
    """Several references: the best score over them (answer correctness, context recall)."""
    if not scores:
        raise ValueError("best() needs at least one score")
    return max(scores)


# --- G-Eval and pairwise: label probabilities in, scores out ---------------------------------

def expected_score(distribution: Mapping[str, float]) -> float:
    """G-Eval's score: the probability-weighted mean of the integer scores, ``sum(s * p(s))``
    over a distribution renormalised over the scale (``{"1": p1, ..., "5": p5}``)."""
    return math.fsum(int(label) * p for label, p in distribution.items())


def rescaled(raw: float, low: int, high: int) -> float:
    """A score on the scale ``low..high`` mapped onto 0-1 (``low`` -> 0, ``high`` -> 1)."""
    return (raw - low) / (high - low)


@dataclass(frozen=True)
class Preference:
    """One pairwise sample: P(the prediction is better) read in each order.

    ``shown_first``: with the prediction shown as A; ``shown_second``: shown as B."""

    shown_first: float
    shown_second: float

    @property
    def score(self) -> float:
        """P(prediction preferred), the mean over both orders (0.5: no preference)."""
        return (self.shown_first + self.shown_second) / 2

    @property
    def first_wins(self) -> float:
        """P(the answer shown first wins), averaged over the two orders."""
        return (self.shown_first + (1.0 - self.shown_second)) / 2

    @property
    def consistent(self) -> bool:
        """Both orders pick the same answer (an exact 0.5 picks none)."""
        return (self.shown_first - 0.5) * (self.shown_second - 0.5) > 0


#: how far past the tie band's edge a pairwise score may lie and still count as on it: the
#: score is a mean of two probabilities, so (0.8 + 0.4) / 2 is 0.6000000000000001, which is
#: 0.6 on the band's edge, not a win
TIE_BAND_TOLERANCE = 1e-9


def outcome(score: float, tie_band: float) -> str:
    """``"win"``, ``"tie"`` or ``"loss"`` of a pairwise score: a tie within ``tie_band`` of
    0.5, its edges included (up to float rounding, :data:`TIE_BAND_TOLERANCE`)."""
    if abs(score - 0.5) <= tie_band + TIE_BAND_TOLERANCE:
        return "tie"
    return "win" if score > 0.5 else "loss"


def pairwise_summary(preferences: Sequence[Preference], tie_band: float,
                     scores: Sequence[float] | None = None) -> dict[str, Any]:
    """``wins``/``ties``/``losses`` (of ``scores``, default each preference's score),
    ``position_consistency`` (share of samples whose two orders pick the same answer) and
    ``position_bias`` (mean P(first shown wins) - 0.5); ``None`` rates without samples."""
    if scores is None:
        scores = [p.score for p in preferences]
    outcomes = [outcome(score, tie_band) for score in scores]
    n = len(preferences)
    return {
        "wins": outcomes.count("win"),
        "ties": outcomes.count("tie"),
        "losses": outcomes.count("loss"),
        "position_consistency": sum(p.consistent for p in preferences) / n if n else None,
        "position_bias": math.fsum(p.first_wins for p in preferences) / n - 0.5 if n else None,
    }
