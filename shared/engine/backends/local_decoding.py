"""How the local judge decodes: the next-token log-probabilities of a batch (yes/no and label
readings) and greedy, schema-constrained answers (structured). :func:`greedy_answers` runs
each prompt from the longest prefix whose key/value states the model's store holds
(:mod:`.local_kv`), decodes the rows together in one preallocated cache, and answers token for
token what :func:`generate_answers` (transformers' ``generate`` with xgrammar's logits
processor, the reference) answers; bench/README.md says where the time goes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .local_kv import buffer_cache

# Answer positions the batch cache has room for at first; a longer answer doubles it. Judge
# answers are short (24 tokens on average on `make run`), and a row's room is paid by every row.
ANSWER_ROOM = 64

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


def prefill(lm: LoadedModel, ids: list[int]) -> tuple[Any, list[Any], list[Any]]:
    """Run the prompt ``ids`` from the longest prefix the store holds (:mod:`.local_kv`), batch
    of one, so no row pads another: the next-token logits after it and its key/value states
    (per layer ``(heads, tokens, head_dim)``), which the store keeps for later requests."""
    import torch

    entry, shared = lm.kv_store.longest_prefix(ids, len(ids) - 1)
    layers = lm.model.config.num_hidden_layers
    keys = [None] * layers if entry is None else [k[None, :, :shared] for k in entry.keys]
    values = [None] * layers if entry is None else [v[None, :, :shared] for v in entry.values]
    cache = buffer_cache(*grow(lm, keys, values, 1, len(ids)), length=shared)
    logits = forward(lm, cache, input_ids=torch.tensor([ids[shared:]], device=lm.device),
                     position_ids=torch.arange(shared, len(ids), device=lm.device)[None, :],
                     logits_to_keep=1).logits[0, -1, :]
    keys = [layer.keys[0] for layer in cache.layers]
    values = [layer.values[0] for layer in cache.layers]
    lm.kv_store.put(ids, keys, values)
    return logits, keys, values


def grow(lm: LoadedModel, keys: list[Any], values: list[Any], batch: int,
         capacity: int) -> tuple[list[Any], list[Any]]:
    """Per layer, zeroed ``(batch, heads, capacity, head_dim)`` buffers holding ``keys`` and
    ``values`` (``(batch, heads, tokens, head_dim)`` or None) at their start."""
    import torch

    config = lm.model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    shape = (batch, config.num_key_value_heads, capacity, head_dim)
    dtype = next(lm.model.parameters()).dtype
    out_keys, out_values = [], []
    for k, v in zip(keys, values, strict=True):
        key_buffer = torch.zeros(shape, dtype=dtype, device=lm.device)
        value_buffer = torch.zeros(shape, dtype=dtype, device=lm.device)
        if k is not None:
            key_buffer[:, :, :k.shape[-2]] = k
            value_buffer[:, :, :v.shape[-2]] = v
        out_keys.append(key_buffer)
        out_values.append(value_buffer)
    return out_keys, out_values


def greedy_answers(lm: LoadedModel, prompts: list[list[int]], compiled: Any,
                   max_tokens: int) -> list[list[int]]:
    """Greedy decoding of a batch, token for token what :func:`generate_answers` answers.

    Each prompt runs on its own from the longest prefix the store holds (:func:`prefill`); the
    rows are then laid out left-padded in one preallocated cache (``[pad][prompt][answer]``, the
    pads masked) and decoded together: each step fills xgrammar's mask of the rows still going
    and takes the argmax. A finished row's prompt and answer go to the store (a repair re-sends
    both) and the row leaves the batch once a quarter of the rows have finished, so a long
    answer does not make the others run on and the cache is not copied at every finish."""
    import torch

    firsts, row_keys, row_values = zip(*(prefill(lm, ids) for ids in prompts), strict=True)
    batch, width = len(prompts), max(len(ids) for ids in prompts)
    keys, values = grow(lm, [None] * len(row_keys[0]), [None] * len(row_keys[0]), batch,
                        width + min(max_tokens, ANSWER_ROOM))
    mask = torch.zeros((batch, width), dtype=torch.long, device=lm.device)
    for row, ids in enumerate(prompts):
        start = width - len(ids)
        mask[row, start:] = 1
        for layer, (k, v) in enumerate(zip(row_keys[row], row_values[row], strict=True)):
            keys[layer][row, :, start:width] = k
            values[layer][row, :, start:width] = v
    cache = buffer_cache(keys, values, length=width)
    logits = torch.stack(firsts)
    next_position = torch.tensor([[len(ids)] for ids in prompts], device=lm.device)
    matchers = bitmask = None
    if compiled is not None:
        import xgrammar

        matchers = [xgrammar.GrammarMatcher(compiled) for _ in prompts]
        bitmask = xgrammar.allocate_token_bitmask(batch, lm.vocab_size)
    eos = set(lm.eos_ids)
    answers: list[list[int]] = [[] for _ in prompts]
    rows = list(range(batch))  # the prompt of each row of the batch
    going = list(range(batch))  # the positions (in ``rows``) still decoding
    for step in range(max_tokens):
        scores = logits.float()
        if matchers is not None:
            for position in going:
                matchers[rows[position]].fill_next_token_bitmask(bitmask, position)
            xgrammar.apply_token_bitmask_inplace(scores, bitmask[:len(rows)].to(scores.device),
                                                 indices=going)
        tokens = scores.argmax(dim=-1).tolist()
        finished = []
        for position in going:
            row, token = rows[position], tokens[position]
            if token in eos:
                finished.append(position)
                continue
            answers[row].append(token)
            if matchers is not None:
                matchers[row].accept_token(token)
        last = step == max_tokens - 1
        for position in finished:
            keep_row(lm, cache, position, prompts[rows[position]] + answers[rows[position]],
                     width - len(prompts[rows[position]]))
        going = [position for position in going if position not in finished]
        if not going or last:
            break
        if len(rows) - len(going) >= max(1, len(rows) // 4):
            kept = torch.tensor(going, dtype=torch.long, device=lm.device)
            cache.batch_select_indices(kept)
            mask, next_position = mask[kept], next_position[kept]
            rows, going = [rows[position] for position in going], list(range(len(going)))
        mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=1)
        step_ids = torch.tensor([[answers[row][-1] if answers[row] else lm.pad_id]
                                 for row in rows], dtype=torch.long, device=lm.device)
        logits = forward(lm, cache, input_ids=step_ids, attention_mask=mask,
                         position_ids=next_position).logits[:, -1, :]
        next_position = next_position + 1
    return answers


def keep_row(lm: LoadedModel, cache: Any, position: int, ids: list[int], start: int) -> None:
    """Store the finished row at ``position``: its prompt and answer (every answer token has
    run: the row finished on the logits after its last one)."""
    end = start + len(ids)
    lm.kv_store.put(ids, [layer.keys[position, :, start:end].clone() for layer in cache.layers],
                    [layer.values[position, :, start:end].clone() for layer in cache.layers])


def left_pad(prompts: list[list[int]], pad_id: int, device: str) -> tuple[Any, Any]:
    import torch

    width = max(len(ids) for ids in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, ids in enumerate(prompts):
        input_ids[row, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
        attention_mask[row, width - len(ids):] = 1
    return input_ids.to(device), attention_mask.to(device)
