"""How the local judge decodes: the next-token log-probabilities of a batch (yes/no and label
readings) and greedy, schema-constrained answers (structured). :func:`greedy_answers` computes
the prompts' shared prefix once (:class:`PromptPrefix`) and answers token for token what
:func:`generate_answers` (transformers' ``generate`` with xgrammar's logits processor, the
reference) answers; docs/BACKENDS.md says where the time goes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .local_model import LoadedModel


def next_token_logprobs(lm: LoadedModel, prompts: list[list[int]]) -> Any:
    """One batched forward pass (left padding): the log-softmax of the next token after each
    prompt, a ``(len(prompts), vocab_size)`` tensor. The caller holds ``lm.lock`` and
    ``torch.inference_mode()``."""
    import torch

    input_ids, attention_mask = left_pad(prompts, lm.pad_id, lm.device)
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    logits = lm.model(
        input_ids=input_ids, attention_mask=attention_mask,
        position_ids=position_ids, use_cache=False,
    ).logits[:, -1, :]
    return torch.log_softmax(logits.float(), dim=-1)


def generate_answers(lm: LoadedModel, prompts: list[list[int]], compiled: Any,
              max_tokens: int) -> list[list[int]]:
    """The reference decoder: ``generate`` on the whole left-padded prompts, greedy, with
    xgrammar's transformers logits processor. The answer tokens of each prompt, EOS excluded."""
    from transformers import GenerationConfig, LogitsProcessorList

    settings = GenerationConfig(
        max_new_tokens=max_tokens, do_sample=False, num_beams=1,
        eos_token_id=lm.eos_ids, pad_token_id=lm.pad_id,
    )
    processors = LogitsProcessorList()
    if compiled is not None:
        import xgrammar.contrib.hf

        processors.append(xgrammar.contrib.hf.LogitsProcessor(compiled))
    input_ids, attention_mask = left_pad(prompts, lm.pad_id, lm.device)
    output = lm.model.generate(
        input_ids=input_ids, attention_mask=attention_mask,
        generation_config=settings, logits_processor=processors,
    )
    answers = []
    for row in range(len(prompts)):
        generated = output[row, input_ids.shape[1]:].tolist()
        for position, token in enumerate(generated):
            if token in lm.eos_ids:
                generated = generated[:position]
                break
        answers.append(generated)
    return answers


def forward(lm: LoadedModel, cache: Any, **inputs: Any) -> Any:
    """``lm.model(**inputs)`` continuing ``cache``, passed by the keyword this transformers
    version takes (``cache`` from 5.x on; ``past_key_values`` before, deprecated after)."""
    import inspect

    name = "cache" if "cache" in inspect.signature(lm.model.forward).parameters else (
        "past_key_values")
    return lm.model(**inputs, **{name: cache}, use_cache=True)


def common_prefix(prompts: list[list[int]]) -> list[int]:
    """The longest token prefix every prompt shares, leaving each prompt at least one token of
    its own (the last prompt token's logits start the answer)."""
    if not prompts:
        return []
    first, limit = prompts[0], min(len(ids) for ids in prompts) - 1
    length = 0
    while length < limit and all(ids[length] == first[length] for ids in prompts):
        length += 1
    return first[:length]


@dataclass
class PromptPrefix:
    """The key/value states of a prompt prefix (batch of one), per layer."""

    ids: list[int]
    kv: list[tuple[Any, Any]]

    @classmethod
    def build(cls, lm: LoadedModel, ids: list[int]) -> PromptPrefix:
        return cls([], []).extend(lm, ids)

    def extend(self, lm: LoadedModel, ids: list[int]) -> PromptPrefix:
        """The prefix ``ids`` (which starts with this one's tokens): only the new tokens run."""
        import torch

        new = ids[len(self.ids):]
        if not new:
            return self
        cache = self.cache(lm, 1)
        position_ids = torch.arange(len(self.ids), len(ids), device=lm.device)[None, :]
        forward(lm, cache, input_ids=torch.tensor([new], dtype=torch.long, device=lm.device),
                 position_ids=position_ids, logits_to_keep=1)
        return PromptPrefix(list(ids), [(layer.keys, layer.values) for layer in cache.layers])

    def cache(self, lm: LoadedModel, batch: int) -> Any:
        """A fresh ``DynamicCache`` holding this prefix for each of ``batch`` rows."""
        from transformers import DynamicCache

        cache = DynamicCache(config=lm.model.config)
        for layer, (keys, values) in enumerate(self.kv):
            cache.update(keys.expand(batch, -1, -1, -1), values.expand(batch, -1, -1, -1), layer)
        return cache


def greedy_answers(lm: LoadedModel, prefix: PromptPrefix, prompts: list[list[int]], compiled: Any,
            max_tokens: int) -> list[list[int]]:
    """Greedy decoding of a batch, token for token what :func:`generate_answers` answers.

    The prompts' shared prefix (``prefix``, extended to this batch's own common prefix) is
    computed once and copied into each row's cache; only the rest of each prompt runs, left-padded
    after the prefix (``[prefix][pad][own tokens]``, the pads masked). Each step fills
    xgrammar's mask of the rows still going, takes the argmax and drops the finished rows from
    the batch, so a long answer does not make the others' rows run on."""
    import torch

    prefix = prefix.extend(lm, common_prefix(prompts)) if len(prompts) > 1 else prefix
    shared = len(prefix.ids)
    batch = len(prompts)
    input_ids, mask = left_pad([ids[shared:] for ids in prompts], lm.pad_id, lm.device)
    cache = prefix.cache(lm, batch)
    if shared:
        mask = torch.cat([torch.ones((batch, shared), dtype=mask.dtype, device=mask.device),
                          mask], dim=1)
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)[:, shared:]
    logits = forward(lm, cache, input_ids=input_ids, attention_mask=mask,
                      position_ids=position_ids, logits_to_keep=1).logits[:, -1, :]
    next_position = torch.tensor([[len(ids)] for ids in prompts], device=lm.device)
    matchers = bitmask = None
    if compiled is not None:
        import xgrammar

        matchers = [xgrammar.GrammarMatcher(compiled) for _ in prompts]
        bitmask = xgrammar.allocate_token_bitmask(batch, lm.vocab_size)
    eos = set(lm.eos_ids)
    answers: list[list[int]] = [[] for _ in prompts]
    rows = list(range(batch))  # the prompt of each row still in the batch
    for step in range(max_tokens):
        scores = logits.float()
        if matchers is not None:
            for position, row in enumerate(rows):
                matchers[row].fill_next_token_bitmask(bitmask, position)
            xgrammar.apply_token_bitmask_inplace(scores, bitmask[:len(rows)].to(scores.device))
        tokens = scores.argmax(dim=-1).tolist()
        keep = []
        for position, (row, token) in enumerate(zip(rows, tokens, strict=True)):
            if token in eos:
                continue
            answers[row].append(token)
            if matchers is not None:
                matchers[row].accept_token(token)
            keep.append(position)
        if not keep or step == max_tokens - 1:
            break
        if len(keep) < len(rows):
            kept = torch.tensor(keep, dtype=torch.long, device=lm.device)
            cache.batch_select_indices(kept)
            mask, next_position = mask[kept], next_position[kept]
            rows = [rows[position] for position in keep]
        mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=1)
        step_ids = torch.tensor([[answers[row][-1]] for row in rows], dtype=torch.long,
                                device=lm.device)
        logits = forward(lm, cache, input_ids=step_ids, attention_mask=mask,
                          position_ids=next_position).logits[:, -1, :]
        next_position = next_position + 1
    return answers


def left_pad(prompts: list[list[int]], pad_id: int, device: str) -> tuple[Any, Any]:
    import torch

    width = max(len(ids) for ids in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, ids in enumerate(prompts):
        input_ids[row, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
        attention_mask[row, width - len(ids):] = 1
    return input_ids.to(device), attention_mask.to(device)
