"""The local transformers judge backend with the real embedded SmolLM2 model (loaded once per
session), compared with the llama.cpp server running the same GGUF."""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path

import jsonschema
import numpy as np
import openai
import pytest
from backend_cases import STATEMENTS, VERDICTS, YES_NO, ask, collect

from shared.base.defaults import DEFAULT_JUDGE_MODEL, judge_gguf_path
from shared.base.types import JudgeRequest, Outcome, YesNoAnswer
from shared.engine.backends.local import LocalBackend
from shared.engine.backends.local_attention import NAME as GROUPED_ATTENTION
from shared.engine.backends.local_attention import grouped_sdpa
from shared.engine.backends.local_decoding import generate_answers
from shared.engine.backends.local_greedy import GreedyBatch, draft
from shared.engine.backends.local_kv import KVStore
from shared.engine.backends.local_model import dequantized_dir, gguf_parsed_once, load_model
from shared.engine.backends.pool import make_backend
from shared.engine.config import judge_config
from shared.engine.logprobs import NO_TOKENS, YES_TOKENS

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# Largest |local - server| log-prob of a token in both top-5 lists, measured on 10 Yes/No prompts
# (0.27 nats; see docs/BACKENDS.md): the server multiplies Q4_1 weights with 8-bit-quantized
# activations, transformers the dequantized float32 weights with float32 activations.
LOGPROB_TOLERANCE = 0.35

SCORE = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}},
    "required": ["score"],
    "additionalProperties": False,
}


@pytest.fixture(scope="session")
def local() -> LocalBackend:
    backend = make_backend(judge_config(provider="local"))
    assert isinstance(backend, LocalBackend)
    assert backend.loaded.model is not None  # load (or dequantize) once for the session
    return backend


def test_yes_no_gives_top_k_and_exact_yes_no_probabilities(local: LocalBackend) -> None:
    requests = [ask(f"Is Paris the capital of France? {YES_NO}"),
                ask(f"Question: Who wrote Hamlet?\nCandidate answer: Dickens\n"
                    f"Is the candidate answer correct? {YES_NO}")]
    results = collect(local.yes_no, requests, 5)
    assert sorted(results) == [0, 1]
    for outcome in results.values():
        assert outcome.ok, outcome.error
        answer = outcome.value
        assert isinstance(answer, YesNoAnswer)
        assert len(answer.top) == 5
        logprobs = [lp for _, lp in answer.top]
        assert logprobs == sorted(logprobs, reverse=True) and logprobs[0] <= 0.0
        assert 0.0 <= answer.p_yes and 0.0 <= answer.p_no and answer.p_yes + answer.p_no <= 1.0
        others = 0.0
        for token, logprob in answer.top:
            word = token.strip().lower()
            if word in YES_TOKENS:
                assert answer.p_yes >= math.exp(logprob) - 1e-6
            elif word in NO_TOKENS:
                assert answer.p_no >= math.exp(logprob) - 1e-6
            else:
                others += math.exp(logprob)
        assert answer.p_yes + answer.p_no + others <= 1.0 + 1e-5
        assert outcome.usage.prompt_tokens > 0 and outcome.usage.completion_tokens == 1


def test_yes_no_variants_cover_every_spelling(local: LocalBackend) -> None:
    lm = local.loaded
    tokenizer = lm.tokenizer
    yes_ids, no_ids = set(lm.yes_ids.tolist()), set(lm.no_ids.tolist())
    for word, ids in (("Yes", yes_ids), (" Yes", yes_ids), ("yes", yes_ids), (" No", no_ids),
                      ("No", no_ids), (" no", no_ids)):
        encoded = tokenizer.encode(word, add_special_tokens=False)
        assert len(encoded) == 1 and encoded[0] in ids, word
        assert lm.token_texts[encoded[0]] == word  # tokens shown as an API shows them
    assert not yes_ids & no_ids


def assert_same_reading(a: YesNoAnswer, b: YesNoAnswer) -> None:
    """Two readings of one Yes/No prompt agree: the same top tokens, their log-probs within
    1e-3, p_yes and p_no within 1e-4 (float32 sums in another order)."""
    assert [t for t, _ in a.top] == [t for t, _ in b.top]
    assert max(abs(x - y) for (_, x), (_, y) in zip(a.top, b.top, strict=True)) < 1e-3
    assert abs(a.p_yes - b.p_yes) < 1e-4 and abs(a.p_no - b.p_no) < 1e-4


def test_left_padded_batches_match_single_requests(local: LocalBackend) -> None:
    requests = [ask(f"Is ice cold? {YES_NO}"),
                ask(f"Read this carefully. The Eiffel Tower is in Paris, which is in France. "
                    f"Is the Eiffel Tower in Europe? {YES_NO}")]
    batched = collect(local.yes_no, requests, 5)
    single_backend = make_backend(judge_config(provider="local", batch_size=1))
    assert single_backend is not local and single_backend.loaded is local.loaded
    single = collect(single_backend.yes_no, requests, 5)
    for index in range(2):
        assert_same_reading(batched[index].value, single[index].value)


@pytest.mark.parametrize("workers", [1, 2])
def test_yes_no_from_stored_prefixes_matches_one_padded_batch(local: LocalBackend,
                                                              workers: int) -> None:
    """The default path (each prompt from the longest stored prefix, on 1 or 2 workers) reads
    the same distribution as one left-padded forward pass of the whole prompts."""
    requests = [ask(f"Is {thing} cold? {YES_NO}") for thing in ("ice", "fire", "snow")]
    local.loaded.kv_store.clear()
    one = collect(LocalBackend(decoder="generate", workers=1).yes_no, requests, 5)
    two = collect(LocalBackend(workers=workers).yes_no, requests, 5)
    _, shared = local.loaded.kv_store.longest_prefix(local.loaded.prompt_ids(requests[2]), 10**6)
    assert shared == len(local.loaded.prompt_ids(requests[2]))  # kept for the next prompts
    for index in range(3):
        assert_same_reading(one[index].value, two[index].value)
        assert one[index].usage == two[index].usage


@pytest.mark.server
def test_top_logprobs_agree_with_the_llama_server(local: LocalBackend, llama_server: str) -> None:
    questions = ["Is Paris the capital of France?", "Do cats bark?", "Can fish fly?"]
    local_answers = collect(local.yes_no, [ask(f"{q} {YES_NO}") for q in questions], 5)
    client = openai.OpenAI(base_url=llama_server, api_key="none")
    try:
        for index, question in enumerate(questions):
            response = client.chat.completions.create(
                model="smollm2", messages=[{"role": "user", "content": f"{question} {YES_NO}"}],
                temperature=0, top_p=1, max_tokens=1, logprobs=True, top_logprobs=5,
            )
            server = {e.token: e.logprob
                      for e in response.choices[0].logprobs.content[0].top_logprobs}
            mine = local_answers[index].value.top
            assert mine[0][0] == max(server, key=server.get), (question, mine, server)
            shared_tokens = [token for token, _ in mine if token in server]
            assert len(shared_tokens) >= 3, (question, mine, server)
            for token, logprob in mine:
                if token in server:
                    assert abs(logprob - server[token]) <= LOGPROB_TOLERANCE, (token, question)
    finally:
        client.close()


@pytest.mark.parametrize(
    ("schema", "prompts", "max_tokens"),
    [
        (STATEMENTS, ["Split into short statements, as JSON with a 'statements' list: Paris is "
                      "the capital of France. It has 2 million inhabitants."], 64),
        (VERDICTS, ["For each of the 3 statements say yes if it is true, else no: 1. Water is "
                    "wet. 2. Fire is cold. 3. Ice is cold.",
                    "Say yes or no for each: 1. Dogs bark. 2. Cats fly. 3. Snow is white."], 24),
        (SCORE, ["Rate from 1 to 5 how well 'Paris' answers 'What is the capital of France?'."],
         12),
    ],
    ids=["statements", "verdicts-batch", "score"],
)
def test_structured_answers_are_schema_valid(local: LocalBackend, schema: dict,
                                             prompts: list[str], max_tokens: int) -> None:
    results = collect(local.structured, [ask(p) for p in prompts], schema, max_tokens)
    assert sorted(results) == list(range(len(prompts)))
    for outcome in results.values():
        assert outcome.ok, outcome.error
        assert outcome.constrained  # xgrammar compiled this schema
        jsonschema.validate(json.loads(outcome.value), schema)
        assert 0 < outcome.usage.completion_tokens <= max_tokens


def test_schema_xgrammar_cannot_compile_falls_back_to_free_text(local: LocalBackend) -> None:
    unsupported = {"type": "object", "properties": {"word": {"type": "string",
                                                             "pattern": "\\p{L}+"}}}
    results = collect(local.structured, [ask("Name a fruit, as JSON.")], unsupported, 6)
    assert results[0].ok and isinstance(results[0].value, str)
    assert not results[0].constrained
    assert results[0].usage.completion_tokens <= 6
    assert collect(local.structured, [ask("Rate 'ok' from 1 to 5.")], SCORE, 8)[0].constrained


def test_constrained_is_a_fact_of_each_call_not_of_the_shared_backend(
        local: LocalBackend) -> None:
    """Two threads (two metrics) share the one process-wide backend: a schema xgrammar cannot
    compile in one call leaves the other call's answers constrained, and the reverse."""
    unsupported = {"type": "object", "properties": {"word": {"type": "string",
                                                             "pattern": "\\p{L}+"}}}
    calls = {"free": (unsupported, "Name a fruit, as JSON."), "constrained": (SCORE, "Rate 'ok'.")}
    results: dict[str, dict[int, Outcome]] = {}
    start = threading.Barrier(len(calls))

    def run(name: str) -> None:
        schema, prompt = calls[name]
        start.wait()
        results[name] = collect(local.structured, [ask(prompt), ask(prompt + " Now.")], schema, 6)

    threads = [threading.Thread(target=run, args=(name,)) for name in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert [o.constrained for o in results["free"].values()] == [False, False]
    assert [o.constrained for o in results["constrained"].values()] == [True, True]
    assert all(o.ok for answers in results.values() for o in answers.values())
    assert local.constrained  # the backend's own setting: constrained where xgrammar can


# ---------------------------------------------------------------- greedy loop vs generate

_FACTS = ["Paris is the capital of France.",
          "Water boils at 100 degrees Celsius at sea level, and it freezes at zero degrees.",
          "The cat sat.",
          "Jane Austen wrote Pride and Prejudice in 1813. It follows Elizabeth Bennet as she "
          "deals with manners, upbringing and marriage in the English gentry.",
          "Canberra, not Sydney, is the capital of Australia."]
_SAME_TEMPLATE = [f"Split the text into short statements, as JSON with a 'statements' list.\n"
                  f"Text: {fact}" for fact in _FACTS]  # a long shared prefix, own tails
_UNRELATED = [  # the chat template's system prompt replaced: no prefix beyond its first tokens
    JudgeRequest(messages=(("system", "You grade statements."),
                           ("user", f"For each of the 3 statements say yes or no: {facts}")),
                 prompt_id="test@1")
    for facts in ("1. Water is wet. 2. Fire is cold. 3. Ice is cold.",
                  "1. Dogs bark. 2. Cats fly. 3. Snow is white.")
] + [JudgeRequest(messages=(("system", "Be strict."), ("user", "1. Grass is blue. 2. The sun "
                                                               "is hot. 3. Two is even.")),
                  prompt_id="test@1")]
_UNSUPPORTED = {"type": "object", "properties": {"word": {"type": "string",
                                                          "pattern": "\\p{L}+"}}}


def _answers(backend: LocalBackend, requests: list, schema: dict, max_tokens: int) -> list:
    results = collect(backend.structured, requests, schema, max_tokens)
    assert sorted(results) == list(range(len(requests)))
    return [(o.value, o.error, o.usage, o.constrained) for _, o in sorted(results.items())]


# transformers' ``generate`` answers per case: the reference does not depend on the greedy
# decoder's worker count, so each case runs it once for both counts
_GENERATED: dict[str, list] = {}


def _generated(requests: list, schema: dict, max_tokens: int, batch_size: int) -> list:
    key = repr((requests, schema, max_tokens, batch_size))
    if key not in _GENERATED:
        reference = LocalBackend(batch_size=batch_size, decoder="generate")
        _GENERATED[key] = _answers(reference, requests, schema, max_tokens)
    return _GENERATED[key]


@pytest.mark.parametrize(
    ("requests", "schema", "max_tokens", "batch_size"),
    [
        ([ask(p) for p in _SAME_TEMPLATE], STATEMENTS, 48, 2),  # shared prefix, mixed lengths
        ([ask(p) for p in _SAME_TEMPLATE[:3]], STATEMENTS, 48, 8),  # one batch, rows finish apart
        (_UNRELATED, VERDICTS, 24, 8),  # prefix not shared (system prompts differ)
        ([ask(f"Rate from 1 to 5 how true this is: {fact}") for fact in _FACTS[:4]], SCORE, 10,
         3),
        ([ask(p) for p in _SAME_TEMPLATE[:2]], _UNSUPPORTED, 8, 2),  # unconstrained decoding
        ([ask(_SAME_TEMPLATE[1])], STATEMENTS, 48, 8),  # a single request: nothing to share
    ],
    ids=["shared-prefix-batches", "one-batch", "no-shared-prefix", "score", "unconstrained",
         "single"],
)
@pytest.mark.parametrize("workers", [1, 2])
def test_greedy_loop_answers_token_for_token_as_generate(
        local: LocalBackend, requests: list, schema: dict, max_tokens: int,
        batch_size: int, workers: int) -> None:
    """The default decoder (prompts run from the stored prefixes, one preallocated batch cache,
    finished rows dropped), in one group or split over two worker threads, gives the same
    answers, token counts and ``constrained`` as transformers' ``generate``."""
    greedy = LocalBackend(batch_size=batch_size, workers=workers)
    assert greedy.decoder == "greedy" and greedy.loaded is local.loaded
    assert LocalBackend(decoder="generate").loaded is local.loaded
    mine = _answers(greedy, requests, schema, max_tokens)
    assert mine == _generated(requests, schema, max_tokens, batch_size)
    assert all(error is None for _, error, _, _ in mine)
    assert all(usage.completion_tokens <= max_tokens for _, _, usage, _ in mine)


def test_a_repair_runs_from_its_first_conversation_and_answers_as_generate(
        local: LocalBackend) -> None:
    """A repair re-sends the first conversation and the answer: the store holds both after the
    first pass, so the repair's prompt starts from them (from the first prompt at least: the
    answer's text, tokenized again, may split into other tokens than the grammar chose), and
    still answers as ``generate``."""
    greedy, reference = LocalBackend(), LocalBackend(decoder="generate")
    first = [ask(p) for p in _SAME_TEMPLATE[:3]]
    answers = _answers(greedy, first, STATEMENTS, 48)
    repairs = [JudgeRequest(messages=(*request.messages, ("assistant", text),
                                      ("user", "Your answer is not valid. Reply with JSON.")),
                            prompt_id=request.prompt_id)
               for request, (text, *_) in zip(first, answers, strict=True)]
    lm = greedy.loaded
    for request, repair in zip(first, repairs, strict=True):
        _, shared = lm.kv_store.longest_prefix(lm.prompt_ids(repair), 10**6)
        assert shared >= len(lm.prompt_ids(request))
    assert _answers(greedy, repairs, STATEMENTS, 48) == _answers(reference, repairs, STATEMENTS,
                                                                 48)


def test_prompt_lookup_saves_steps_and_answers_as_generate(local: LocalBackend) -> None:
    """An answer that copies its prompt is checked several tokens a step, and is still what
    ``generate`` answers."""
    import torch

    lm = local.loaded
    ids = lm.prompt_ids(ask("Copy the text word for word into a JSON 'statements' list.\n"
                            f"Text: {_FACTS[3]}"))
    compiled, _ = lm.grammar(STATEMENTS)
    with lm.lock, torch.inference_mode():
        batch, steps = GreedyBatch(lm, [ids], compiled, 64), 0
        while batch.going:
            batch.step()
            steps += 1
        assert batch.answers == generate_answers(lm, [ids], compiled, 64)
    assert steps <= 0.75 * len(batch.answers[0])  # one step a token without proposals


def test_a_stored_prompt_runs_nothing_and_gives_the_logits_of_its_first_run(
        local: LocalBackend) -> None:
    """A call's first prompt warms the store before the workers start; when its group reaches it
    again, no forward pass runs and the logits are those of the first run. A longer prompt
    still runs its own last tokens."""
    import torch

    from shared.engine.backends.local_decoding import prefill

    lm = local.loaded
    lm.kv_store.clear()
    ids = lm.prompt_ids(ask("Is ice cold? " + YES_NO))
    passes = []
    hook = lm.model.register_forward_hook(lambda *_: passes.append(1))
    try:
        with lm.lock, torch.inference_mode():
            first, _, _ = prefill(lm, ids)
            again, keys, _ = prefill(lm, ids)
            assert len(passes) == 1 and torch.equal(first, again)
            assert keys[0].shape[-2] == len(ids)
            longer, _, _ = prefill(lm, ids + ids[-3:])
            lm.kv_store.clear()
            alone, _, _ = prefill(lm, ids + ids[-3:])
    finally:
        hook.remove()
    assert len(passes) == 3
    assert torch.allclose(longer, alone, atol=1e-3)  # from the stored prompt as from nothing


def test_draft_proposes_what_followed_the_latest_occurrence_of_the_last_tokens() -> None:
    assert draft([5, 6, 7, 8, 5, 6], 3, set()) == [7, 8, 5]  # [8, 5, 6] not seen: [5, 6] is
    assert draft([1, 2, 9, 1, 2, 8, 1, 2], 1, set()) == [8]  # the latest occurrence
    assert draft([1, 2, 3, 4, 1, 2], 4, {4}) == [3]  # cut before an end token
    assert draft([1, 2, 3], 4, set()) == [] == draft([1, 2, 1], 0, set())


def _states(tokens: int) -> tuple[list, list]:
    import torch

    return [torch.zeros((1, tokens, 2))], [torch.zeros((1, tokens, 2))]  # 16 bytes a token


def test_kv_store_finds_the_longest_shared_prefix_within_the_limit() -> None:
    store = KVStore()
    store.put([1, 2, 3, 4], *_states(4))
    store.put([1, 2, 9], *_states(3))
    entry, shared = store.longest_prefix([1, 2, 3, 5], 10)
    assert shared == 3 and list(entry.ids) == [1, 2, 3, 4]
    assert store.longest_prefix([1, 2, 3, 4, 5], 2)[1] == 2  # the caller leaves a token to run
    assert store.longest_prefix([7, 1, 2], 10) == (None, 0)


def test_kv_store_drops_prefixes_of_a_new_entry_and_evicts_the_oldest() -> None:
    store = KVStore(max_bytes=16 * 10)
    store.put([1, 2], *_states(2))
    store.put([1, 2, 3], *_states(3))  # holds [1, 2]'s states
    assert [list(e.ids) for e in store.entries.values()] == [[1, 2, 3]] and store.bytes == 48
    store.put([5, 6, 7, 8], *_states(4))
    store.longest_prefix([1, 2, 3, 4], 10)  # used: now the newest
    store.put([9, 9, 9, 9], *_states(4))  # 11 tokens > 160 bytes: the least recently used goes
    assert [list(e.ids) for e in store.entries.values()] == [[1, 2, 3], [9, 9, 9, 9]]
    store.put(list(range(11)), *_states(11))  # larger than the store: not kept
    assert store.bytes == 112
    store.clear()
    assert store.longest_prefix([1, 2, 3], 3) == (None, 0) and store.bytes == 0


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_bad_worker_counts_are_refused(workers: object) -> None:
    with pytest.raises(ValueError, match="workers"):
        LocalBackend(workers=workers)  # type: ignore[arg-type]


def test_unknown_decoder_is_refused() -> None:
    with pytest.raises(ValueError, match="decoder"):
        LocalBackend(decoder="beam")


def test_model_is_loaded_once_and_its_dequantized_copy_cached(local: LocalBackend) -> None:
    assert make_backend(judge_config(provider="local")) is local
    assert load_model(None, local.device) is local.loaded
    assert local.model == DEFAULT_JUDGE_MODEL and local.kind == "local" and local.host == ""
    assert (dequantized_dir(judge_gguf_path()) / "config.json").is_file()


def test_the_dequantized_copy_is_keyed_by_content_not_time(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh venv unpacks the embedded GGUF with a new modification time: the same bytes find
    the same copy; other bytes of the same size do not."""
    monkeypatch.setenv("JUDGE_METRICS_MODEL_CACHE", str(tmp_path / "models"))
    first, second, other = (tmp_path / name / "m.gguf" for name in ("a", "b", "c"))
    for path, content in ((first, b"GGUF one"), (second, b"GGUF one"), (other, b"GGUF two")):
        path.parent.mkdir()
        path.write_bytes(content)
    os.utime(second, ns=(10**18, 10**18))
    assert dequantized_dir(first) == dequantized_dir(second)
    assert dequantized_dir(first) != dequantized_dir(other)
    assert dequantized_dir(first).parent == tmp_path / "models"


@pytest.mark.parametrize("positions", [1, 2, 5])
def test_grouped_attention_is_transformers_sdpa_to_the_bit(local: LocalBackend,
                                                          positions: int) -> None:
    """The judge's attention (keys and values read in place for the 3 query heads of each)
    gives exactly what transformers' SDPA attention (which copies them) gives, on the masks the
    decoder makes: left padding, and several positions over a cache."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    assert local.loaded.model.config._attn_implementation == GROUPED_ATTENTION
    layer = local.loaded.model.model.layers[0].self_attn
    generator = torch.Generator().manual_seed(positions)
    query = torch.randn(3, 9, positions, 64, generator=generator)
    key, value = (torch.randn(3, 3, 40, 64, generator=generator) for _ in range(2))
    mask = torch.ones(3, 1, positions, 40, dtype=torch.bool)
    mask[0, :, :, :7] = False  # a left-padded row
    mask[:, :, :, 40 - positions:] = torch.ones(positions, positions, dtype=torch.bool).tril()
    with torch.inference_mode():
        mine, _ = grouped_sdpa(layer, query, key, value, mask, scaling=0.125)
        theirs, _ = sdpa_attention_forward(layer, query, key, value, mask, scaling=0.125)
    assert layer.num_key_value_groups == 3 and torch.equal(mine, theirs)


def test_a_gguf_is_parsed_once_while_loading_and_gguf_is_restored_after() -> None:
    import gguf

    path = judge_gguf_path()
    reader_type, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with gguf_parsed_once():
        reader = gguf.GGUFReader(path)
        assert gguf.GGUFReader(str(path)) is reader  # the same file, by any path type
        assert isinstance(reader, reader_type) and len(reader.tensors) == 272
        arch = gguf.MODEL_ARCH.LLAMA
        assert gguf.get_tensor_name_map(arch, 30) is gguf.get_tensor_name_map(arch, 30)
        assert gguf.get_tensor_name_map(arch, 2) is not gguf.get_tensor_name_map(arch, 30)
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader_type, name_map)
    # parsed from a plain array: gguf's own reader finds the same fields and tensors
    mapped = gguf.GGUFReader(path)
    assert list(reader.fields) == list(mapped.fields)
    for name, field in mapped.fields.items():
        ours = reader.fields[name]
        assert (ours.types, ours.data, ours.offset) == (field.types, field.data, field.offset)
        assert all(np.array_equal(a, b) for a, b in zip(ours.parts, field.parts, strict=True))
    for ours, tensor in zip(reader.tensors, mapped.tensors, strict=True):
        assert (ours.name, ours.tensor_type, list(ours.shape)) == (
            tensor.name, tensor.tensor_type, list(tensor.shape))
        assert np.array_equal(ours.data, tensor.data)
    with pytest.raises(RuntimeError), gguf_parsed_once():
        raise RuntimeError
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader_type, name_map)


def test_missing_models_are_named(tmp_path: object) -> None:
    with pytest.raises(FileNotFoundError, match="no-such.gguf"):
        load_model("/nonexistent/no-such.gguf", "cpu")
    with pytest.raises(FileNotFoundError, match="nobody/no-such-model.*local cache"):
        load_model("nobody/no-such-model", "cpu")
