"""How the one-token answers (Yes/No log-probabilities, label probabilities) are stored in the
call cache and read back: JSON without NaN or infinities (``repr`` strings), and the check every
label answer passes, fresh or cached."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..base.types import LabelAnswer, YesNoAnswer


def _float_out(x: float | None) -> float | str | None:
    return x if x is None or math.isfinite(x) else repr(float(x))


def _float_in(x: float | str | None) -> float | None:
    return None if x is None else float(x)


def encode_yes_no(answer: YesNoAnswer) -> dict[str, Any]:
    return {
        "top": [[token, _float_out(logprob)] for token, logprob in answer.top],
        "p_yes": _float_out(answer.p_yes),
        "p_no": _float_out(answer.p_no),
    }


def decode_yes_no(payload: dict[str, Any]) -> YesNoAnswer:
    return YesNoAnswer(
        top=[(token, float(logprob)) for token, logprob in payload["top"]],
        p_yes=_float_in(payload.get("p_yes")),
        p_no=_float_in(payload.get("p_no")),
    )


def encode_labels(answer: LabelAnswer) -> dict[str, Any]:
    return {"probabilities": answer.probabilities, "method": answer.method, "text": answer.text}


def decode_labels(payload: dict[str, Any]) -> LabelAnswer:
    """A cached label answer as stored; its probabilities are checked on every read
    (:func:`shared.engine.logprobs.label_answer_problem`), not converted here."""
    text, probabilities = payload.get("text"), payload["probabilities"]
    return LabelAnswer(dict(probabilities) if isinstance(probabilities, dict) else probabilities,
                       str(payload["method"]), text if isinstance(text, str) else None)


def label_check(labels: Sequence[str]) -> Callable[[LabelAnswer], str | None]:
    """Why a label answer, fresh or cached, is refused (``None``: it is readable)."""
    from .logprobs import label_answer_problem

    def check(answer: LabelAnswer) -> str | None:
        written = answer.text if answer.method == "sampled" else None
        return label_answer_problem(answer.probabilities, labels, written)

    return check
