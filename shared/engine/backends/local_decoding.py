"""How the local judge decodes: the next-token log-probabilities of a batch (yes/no and label
readings), the reference decoder of structured answers (:func:`generate_answers`:
transformers' ``generate`` with xgrammar's logits processor) and the pieces of the default one
(:mod:`.local_greedy`): a prompt run from the longest prefix whose key/value states the model's
store holds (:func:`prefill`, :mod:`.local_kv`), and a list of distinct items ended at its first
repeat (:class:`RepeatStop`). bench/README.md says where the time goes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..distinct import closed_at_repeat, declares_unique
from .local_kv import buffer_cache

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


class RepeatStop:
    """Where the schema declares ``uniqueItems`` (which xgrammar does not enforce), an answer
    ends at the first string repeating an earlier item of its array: its tokens become those
    of the text before that item, the open arrays and objects closed
    (:func:`shared.engine.distinct.closed_at_repeat`; not when the closed text would break the
    schema). A weak judge that repeats an item repeats it until ``maxItems``."""

    def __init__(self, lm: LoadedModel, schema: dict[str, Any]) -> None:
        import jsonschema

        self.tokenizer, self.schema = lm.tokenizer, schema
        self.is_valid = jsonschema.validators.validator_for(schema)(schema).is_valid

    @classmethod
    def of(cls, lm: LoadedModel, schema: dict[str, Any]) -> RepeatStop | None:
        return cls(lm, schema) if declares_unique(schema) else None

    def closed(self, answer: list[int]) -> list[int] | None:
        """The tokens of ``answer`` closed at its first repeat, or None. Checked when its last
        token holds a quote (an item can only end there)."""
        if not answer or '"' not in self.tokenizer.convert_ids_to_tokens(answer[-1]):
            return None
        return self.closed_text(self.tokenizer.decode(answer, skip_special_tokens=True))

    def closed_text(self, text: str) -> list[int] | None:
        cut = closed_at_repeat(text, self.schema, self.is_valid)
        return None if cut is None else self.tokenizer.encode(cut, add_special_tokens=False)


def generate_answers(lm: LoadedModel, prompts: list[list[int]], compiled: Any,
                     max_tokens: int, stop: RepeatStop | None = None) -> list[list[int]]:
    """The reference decoder: ``generate`` on the whole left-padded prompts, greedy, with
    xgrammar's transformers logits processor. The answer tokens of each prompt, EOS excluded,
    closed where ``stop`` closes them. (The rows decode on past the repeat: xgrammar's logits
    processor cannot take a row stopped inside its grammar.)"""
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
        generated = _until_end(output[row, input_ids.shape[1]:].tolist(), lm.eos_ids)
        closed = None if stop is None else stop.closed_text(
            lm.tokenizer.decode(generated, skip_special_tokens=True))
        answers.append(generated if closed is None else closed)
    return answers


def _until_end(generated: list[int], eos_ids: Any) -> list[int]:
    for position, token in enumerate(generated):
        if token in eos_ids:
            return generated[:position]
    return generated


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
    (per layer ``(heads, tokens, head_dim)``), which the store keeps for later requests. A
    prompt the store holds with its logits (run before: a call's first prompt warms the store
    for the CPU workers) runs nothing."""
    import torch

    entry, shared = lm.kv_store.longest_prefix(ids, len(ids))
    if entry is not None and shared == len(ids):
        if entry.next_logits is not None and len(entry.ids) == len(ids):
            return entry.next_logits, entry.keys, entry.values
        shared -= 1  # the last token runs, for the logits after it
    layers = lm.model.config.num_hidden_layers
    keys = [None] * layers if entry is None else [k[None, :, :shared] for k in entry.keys]
    values = [None] * layers if entry is None else [v[None, :, :shared] for v in entry.values]
    cache = buffer_cache(*grow(lm, keys, values, 1, len(ids)), length=shared)
    logits = forward(lm, cache, input_ids=torch.tensor([ids[shared:]], device=lm.device),
                     position_ids=torch.arange(shared, len(ids), device=lm.device)[None, :],
                     logits_to_keep=1).logits[0, -1, :]
    keys = [layer.keys[0] for layer in cache.layers]
    values = [layer.values[0] for layer in cache.layers]
    lm.kv_store.put(ids, keys, values, logits)
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


def left_pad(prompts: list[list[int]], pad_id: int, device: str) -> tuple[Any, Any]:
    import torch

    width = max(len(ids) for ids in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, ids in enumerate(prompts):
        input_ids[row, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
        attention_mask[row, width - len(ids):] = 1
    return input_ids.to(device), attention_mask.to(device)
