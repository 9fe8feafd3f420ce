"""Judge backend for a local Hugging Face causal LM through ``transformers``.

The model is a folder, a hub id already in the local Hugging Face cache (nothing is
downloaded), or a ``.gguf`` file; ``model=None`` is the embedded SmolLM2-135M-Instruct GGUF
(:func:`shared.base.defaults.judge_gguf_path`). A GGUF file is dequantized once and the float
weights are saved under the user cache folder (:func:`.local_model.model_cache_dir`), keyed by
the file's name and content, so later processes (a fresh clone's too) load them in a fraction of
a second.
A loaded model is kept for the life of the process and shared by every backend that names it.

- ``yes_no``: each prompt run from the longest stored prefix (``decoder="generate"``: one
  left-padded forward pass); the last position's full log-softmax gives the top-k list (tokens
  decoded as an API shows them, e.g. ``" Yes"``) and the exact ``p_yes``/``p_no`` (summed over
  every token whose stripped, lower-cased text is a Yes/No word).
- ``structured``: greedy decoding constrained to the JSON schema by ``xgrammar``; a schema that
  xgrammar cannot compile is decoded unconstrained (each answer of that call says so:
  ``Outcome.constrained`` is False) and the runner validates and repairs. A list whose schema
  says ``uniqueItems`` (which xgrammar does not enforce) ends at its first repeated item
  (:class:`.local_decoding.RepeatStop`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...base.defaults import DEFAULT_JUDGE_MODEL
from ...base.text import short_reason
from ...base.types import JudgeRequest, Outcome, TokenUsage, YesNoAnswer
from .base import Backend, ResultCallback
from .local_decoding import RepeatStop, generate_answers, next_token_logprobs, prefill
from .local_greedy import greedy_answers
from .local_model import LoadedModel, load_model, resolve_device, weights_identity
from .local_workers import in_groups, worker_count
from .registry import LOCAL

if TYPE_CHECKING:
    from ..config import JudgeConfig

# How structured answers are decoded: "greedy" (local_decoding's loop, the shared prompt prefix
# computed once) or "generate" (transformers' generate with xgrammar's logits processor, the
# reference the loop is checked against token for token).
DECODERS = ("greedy", "generate")


# ---------------------------------------------------------------- loading


# ---------------------------------------------------------------- the backend


class LocalBackend(Backend):
    """A judge model running in this process (CPU or GPU)."""

    kind = LOCAL
    host = ""
    provider = LOCAL
    constrained = True  # per answer: Outcome.constrained (False where xgrammar cannot compile)

    def __init__(self, model: str | None = None, device: str | None = None,
                 batch_size: int = 32, decoder: str = "greedy",
                 workers: int | None = None) -> None:
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                    or workers < 1):
            raise ValueError(f"workers must be an int >= 1 or None, got {workers!r}")
        self.spec = model
        self.device = resolve_device(device)
        self.model = model or DEFAULT_JUDGE_MODEL
        self.batch_size = batch_size
        self.decoder = decoder
        self.workers = workers  # None: local_workers.WORKERS on a CPU

    @classmethod
    def from_config(cls, config: JudgeConfig) -> LocalBackend:
        return cls(model=config.model, device=config.device, batch_size=config.batch_size)

    def __repr__(self) -> str:
        return f"LocalBackend(model={self.model!r}, device={self.device!r})"

    @property
    def loaded(self) -> LoadedModel:
        return load_model(self.spec, self.device)

    def sampling_params(self, operation: str) -> dict[str, Any]:
        weights = weights_identity(self.spec)
        if operation in ("yes_no", "labels"):
            return {"decoding": "next-token distribution", "weights": weights}
        if operation == "structured":
            return {"decoding": "greedy", "grammar": "xgrammar json_schema", "weights": weights}
        raise ValueError(f"unknown operation {operation!r}")

    # -- operations

    def yes_no(
        self, requests: Sequence[JudgeRequest], top_k: int, on_result: ResultCallback
    ) -> None:
        import torch

        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be an int >= 1, got {top_k!r}")
        lm = self.loaded
        k = min(top_k, lm.vocab_size)
        for chunk, prompts in self._chunks(lm, requests, on_result):
            try:
                with lm.lock, torch.inference_mode():
                    logprobs = self._next_token_logprobs(lm, prompts)
                    top = torch.topk(logprobs, k, dim=-1)
                    p_yes = logprobs[:, lm.yes_ids].exp().sum(-1).clamp(0.0, 1.0)
                    p_no = logprobs[:, lm.no_ids].exp().sum(-1).clamp(0.0, 1.0)
            except Exception as exc:
                _fail(chunk, f"local judge model failed: {type(exc).__name__}: {exc}", on_result)
                continue
            for row, (index, prompt) in enumerate(zip(chunk, prompts, strict=True)):
                pairs = [
                    (lm.token_texts[int(i)], float(v))
                    for i, v in zip(top.indices[row].tolist(), top.values[row].tolist(),
                                    strict=True)
                ]
                answer = YesNoAnswer(top=pairs, p_yes=float(p_yes[row]), p_no=float(p_no[row]))
                on_result(index, Outcome(value=answer, usage=TokenUsage(len(prompt), 1)))

    def label_probabilities(self, requests: Sequence[JudgeRequest], labels: Sequence[str],
                            on_result: ResultCallback) -> None:
        """Exact: each label's probability in the full next-token distribution."""
        from .local_labels import label_probabilities

        lm = self.loaded
        label_probabilities(lm, self._chunks(lm, requests, on_result), labels, on_result,
                            lambda prompts: self._next_token_logprobs(lm, prompts))

    def structured(self, requests: Sequence[JudgeRequest], json_schema: dict[str, Any],
                   max_tokens: int, on_result: ResultCallback) -> None:
        import torch

        lm = self.loaded
        compiled, _ = lm.grammar(json_schema)
        stop = RepeatStop.of(lm, json_schema)
        for chunk, prompts in self._chunks(lm, requests, on_result, reserve=max_tokens):
            try:
                with lm.lock, torch.inference_mode():
                    if self.decoder == "generate":
                        answers = generate_answers(lm, prompts, compiled, max_tokens, stop)
                    else:
                        answers = self._in_workers(lm, prompts, lambda group: greedy_answers(
                            lm, group, compiled, max_tokens, stop), warm_store=True)
            except Exception as exc:
                _fail(chunk, f"local judge model failed: {type(exc).__name__}: {exc}", on_result)
                continue
            for index, prompt, generated in zip(chunk, prompts, answers, strict=True):
                text = lm.tokenizer.decode(generated, skip_special_tokens=True)
                usage = TokenUsage(len(prompt), len(generated))
                on_result(index, Outcome(value=text, usage=usage,
                                         constrained=compiled is not None))

    # -- plumbing

    def _in_workers(self, lm: LoadedModel, prompts: list[list[int]],
                    task: Callable[[list[list[int]]], list[Any]],
                    warm_store: bool = False) -> list[Any]:
        """``task`` on the prompts split over the CPU workers (:mod:`.local_workers`). With
        ``warm_store`` and several groups, the first prompt runs alone first: the key/value
        store then holds the prefix the call's prompts share (one template's), and every group
        starts from it instead of each computing it."""
        count = worker_count(self.device, len(prompts), self.workers)
        if warm_store and count > 1:
            prefill(lm, prompts[0])
        return in_groups(prompts, count, task)

    def _next_token_logprobs(self, lm: LoadedModel, prompts: list[list[int]]) -> Any:
        """The log-softmax of the next token after each prompt (a row each), on the CPU
        workers. The default decoder runs each prompt from the longest prefix the store holds
        (:func:`.local_decoding.prefill`): a template's prompts (a G-Eval criterion and its
        steps, L3Score's instructions) share their beginning, and no row pads another.
        ``decoder="generate"`` keeps one left-padded forward pass per worker's share
        (:func:`.local_decoding.next_token_logprobs`). The two agree to float32 rounding."""
        import torch

        if self.decoder == "generate":
            return torch.stack(self._in_workers(
                lm, prompts, lambda group: list(next_token_logprobs(lm, group))))
        logits = self._in_workers(lm, prompts, lambda group: [prefill(lm, ids)[0]
                                                               for ids in group],
                                  warm_store=True)
        return torch.log_softmax(torch.stack(logits).float(), dim=-1)

    def _chunks(
        self,
        lm: LoadedModel,
        requests: Sequence[JudgeRequest],
        on_result: ResultCallback,
        reserve: int = 1,
    ) -> list[tuple[list[int], list[list[int]]]]:
        """Batches of ``(request indices, prompt token ids)``, similar lengths together. A
        request whose prompt cannot be built or does not fit is reported failed here."""
        prompts: dict[int, list[int]] = {}
        for index, request in enumerate(requests):
            try:
                ids = lm.prompt_ids(request)
            except Exception as exc:
                on_result(index, Outcome(error=short_reason(
                    f"cannot build the prompt for the local judge: {type(exc).__name__}: {exc}")))
                continue
            if lm.max_positions and len(ids) + reserve > lm.max_positions:
                on_result(index, Outcome(error=(
                    f"the prompt has {len(ids)} tokens; with {reserve} answer token(s) it exceeds "
                    f"the local judge's context of {lm.max_positions} tokens")))
                continue
            prompts[index] = ids
        order = sorted(prompts, key=lambda i: len(prompts[i]))
        size = max(1, self.batch_size)
        return [
            (order[start:start + size], [prompts[i] for i in order[start:start + size]])
            for start in range(0, len(order), size)
        ]


# ---------------------------------------------------------------- structured decoding


def _fail(indices: list[int], reason: str, on_result: ResultCallback) -> None:
    for index in indices:
        on_result(index, Outcome(error=short_reason(reason)))
