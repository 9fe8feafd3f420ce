"""Label probabilities on the local judge: exact, from the full next-token distribution.

A label's probability is the sum over every token of the vocabulary whose stripped text is the
label (as ``p_yes`` sums the Yes-variants), so ``" 4"`` and ``"4"`` both count as the score 4.
A label that is no token of the vocabulary cannot be read from one next token: refused before
any forward pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...base.text import short_reason
from ...base.types import LabelAnswer, Outcome, TokenUsage
from .base import ResultCallback


def label_token_ids(token_texts: Sequence[str], labels: Sequence[str]) -> dict[str, list[int]]:
    """Each label's token ids (every id whose decoded text, stripped, is the label); a
    ``ValueError`` naming the labels that are no single token."""
    ids: dict[str, list[int]] = {label: [] for label in labels}
    for token_id, text in enumerate(token_texts):
        found = ids.get(text.strip())
        if found is not None:
            found.append(token_id)
    missing = [label for label, found in ids.items() if not found]
    if missing:
        raise ValueError(
            f"label(s) {', '.join(map(repr, missing))} are not one token of the judge model's "
            "vocabulary; a label is read from the judge's next token")
    return ids


def label_probabilities(lm: Any, chunks: list[tuple[list[int], list[list[int]]]],
                        labels: Sequence[str], on_result: ResultCallback,
                        forward: Callable[[list[list[int]]], Any]) -> None:
    """For each prompt of ``chunks`` (``LocalBackend._chunks``), every label's exact
    next-token probability (``Outcome.value``: :class:`LabelAnswer`). ``lm``: the backend's
    ``LoadedModel``; ``forward(prompts)``: its next-token log-softmax
    (``local.next_token_logprobs``)."""
    import torch

    ids: dict[str, Any] = {
        label: torch.tensor(found, dtype=torch.long, device=lm.device)
        for label, found in label_token_ids(lm.token_texts, labels).items()}
    for chunk, prompts in chunks:
        try:
            with lm.lock, torch.inference_mode():
                probabilities = forward(prompts).exp()
                mass = {label: probabilities[:, token_ids].sum(-1).clamp(0.0, 1.0).tolist()
                        for label, token_ids in ids.items()}
        except Exception as exc:
            for index in chunk:
                on_result(index, Outcome(error=short_reason(
                    f"local judge model failed: {type(exc).__name__}: {exc}")))
            continue
        for row, (index, prompt) in enumerate(zip(chunk, prompts, strict=True)):
            answer = LabelAnswer({label: float(mass[label][row]) for label in labels})
            on_result(index, Outcome(value=answer, usage=TokenUsage(len(prompt), 1)))
