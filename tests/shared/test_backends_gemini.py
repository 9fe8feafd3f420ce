"""The Gemini backend, through Google's own SDK, against a Gemini API stand-in written from the
public reference (``tests/fakes/gemini.py``) that answers with the real llama.cpp server: the
same metric gives the same numbers through ``gemini`` as through the OpenAI-compatible path to
that server, a second run asks nothing, the key shows nowhere, and ``RESOURCE_EXHAUSTED`` is
asked again after the wait the refusal names."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import evaluate
import pytest
from backend_cases import STATEMENTS, YES_NO, ask, collect
from fakes.gemini import RETRY_DELAY_SECONDS, FakeGemini
from faultproxy import FaultProxy, canonical
from metric_examples import metric_inputs

from shared.base.types import LabelAnswer, YesNoAnswer
from shared.engine.backends.base import LogprobsUnavailable
from shared.engine.backends.gemini import SEED, GeminiBackend
from shared.engine.backends.pool import make_backend
from shared.engine.config import judge_config
from shared.kit import registry

pytestmark = pytest.mark.server

KEY = "AIza-test-DO-NOT-LEAK-7c41e9"
MODEL = "gemini-test-flash"
ROW = {"question": "What is the capital of France?",
       "prediction": "Paris is the capital of France. It is in Europe.",
       "reference": "The capital of France is Paris.",
       "contexts": ["Paris is the capital of France.", "France is in Europe."],
       "source": "Paris is the capital of France. France is in Europe."}
QUESTIONS = ["What is the capital of France?", "How many legs has a spider?"]
PREDICTIONS = ["Paris", "Six"]
REFERENCES = ["Paris is the capital.", "Eight"]


@pytest.fixture()
def gemini(llama_server: str):
    with FakeGemini(llama_server, KEY) as server:
        yield server


def gemini_options(server: FakeGemini, cache_dir: str, **extra: object) -> dict:
    return {"provider": "gemini", "base_url": server.url, "api_key": KEY, "model": MODEL,
            "cache_dir": cache_dir, "show_progress": False, **extra}


def compat_options(llama_server: str, cache_dir: str) -> dict:
    return {"provider": "openai-compatible", "base_url": llama_server, "model": "smollm2",
            "response_format": "json_object", "cache_dir": cache_dir, "show_progress": False}


def gemini_backend(server: FakeGemini, **extra: object) -> GeminiBackend:
    made = make_backend(judge_config(provider="gemini", base_url=server.url, api_key=KEY,
                                     model=MODEL, **extra))
    assert isinstance(made, GeminiBackend)
    return made


def compat_backend(llama_server: str):
    return make_backend(judge_config(provider="openai-compatible", base_url=llama_server,
                                     model="smollm2", response_format="json_object"))


def test_yes_no_sends_the_reference_request_and_reads_the_real_top_logprobs(
        gemini: FakeGemini, llama_server: str) -> None:
    request = ask(f"Is Paris the capital of France? {YES_NO}")
    got = collect(gemini_backend(gemini).yes_no, [request], 5)[0]
    assert got.ok, got.error
    expected = collect(compat_backend(llama_server).yes_no, [request], 5)[0]
    assert isinstance(got.value, YesNoAnswer)
    assert got.value.top == expected.value.top  # the same model's first token, unchanged
    assert (got.usage.prompt_tokens, got.usage.completion_tokens) == (
        expected.usage.prompt_tokens, expected.usage.completion_tokens)

    seen = gemini.seen[-1]
    assert seen.path == f"/v1beta/models/{MODEL}:generateContent"
    assert {k.lower(): v for k, v in seen.headers.items()}["x-goog-api-key"] == KEY
    assert seen.body["contents"] == [{"role": "user", "parts": [{"text": request.messages[0][1]}]}]
    config = seen.body["generationConfig"]
    thinking = config.pop("thinkingConfig")  # a Flash model: minimal thinking
    assert list(thinking.values()) == ["MINIMAL"]  # the SDK names it thinking_level
    assert config == {"temperature": 0, "topP": 1, "seed": SEED, "responseLogprobs": True,
                      "logprobs": 5, "maxOutputTokens": 1}


def test_structured_answers_go_through_response_json_schema(gemini: FakeGemini) -> None:
    judge = gemini_backend(gemini)
    prompt = ("Split into short statements, as JSON with a 'statements' list: Paris is the "
              "capital of France. It has 2 million inhabitants.")
    got = collect(judge.structured, [ask(prompt)], STATEMENTS, 120)[0]
    assert got.ok, got.error
    assert isinstance(json.loads(got.value)["statements"], list)
    config = gemini.seen[-1].body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == STATEMENTS and config["maxOutputTokens"] == 120
    # minLength/maxLength are outside what responseJsonSchema enforces: not taken as enforced
    assert not got.constrained


def test_label_probabilities_read_the_top_20(gemini: FakeGemini, llama_server: str) -> None:
    request = ask("Rate from 1 to 5 how polite 'Thank you so much!' is. Answer with one digit.")
    labels = ["1", "2", "3", "4", "5"]
    got = collect(gemini_backend(gemini).label_probabilities, [request], labels)[0]
    expected = collect(compat_backend(llama_server).label_probabilities, [request], labels)[0]
    assert got.ok and isinstance(got.value, LabelAnswer), got.error
    assert got.value.probabilities == expected.value.probabilities
    assert got.value.method == "logprobs"
    assert gemini.seen[-1].body["generationConfig"]["logprobs"] == 20


def test_l3score_matches_the_openai_compatible_path_and_reruns_send_nothing(
        gemini: FakeGemini, llama_server: str, tmp_path: Path) -> None:
    l3score = evaluate.load(registry.metric_path("l3score"))
    inputs = dict(questions=QUESTIONS, predictions=PREDICTIONS, references=REFERENCES)
    cache = str(tmp_path / "gemini-cache")
    through_gemini = l3score.compute(**inputs, **gemini_options(gemini, cache))
    direct = l3score.compute(**inputs, **compat_options(llama_server, str(tmp_path / "direct")))
    assert through_gemini["unmeasured"] == []
    assert through_gemini["scores"] == pytest.approx(direct["scores"], abs=1e-12)
    assert [d["top_logprobs"] for d in through_gemini["details"]] == [
        d["top_logprobs"] for d in direct["details"]]
    assert gemini.count == len(QUESTIONS)

    again = l3score.compute(**inputs, **gemini_options(gemini, cache))
    assert gemini.count == len(QUESTIONS)  # nothing sent
    assert again["usage"]["calls"] == 0 and again["usage"]["cache_hits"] == len(QUESTIONS)
    assert again["scores"] == through_gemini["scores"]
    _assert_no_key(through_gemini, again, Path(cache))


def test_a_structured_metric_matches_the_openai_compatible_path(
        gemini: FakeGemini, llama_server: str, tmp_path: Path) -> None:
    faithfulness = evaluate.load(registry.metric_path("faithfulness"))
    inputs = metric_inputs("faithfulness", [ROW])
    cache = str(tmp_path / "gemini-cache")
    through_gemini = faithfulness.compute(**inputs, **gemini_options(gemini, cache))
    direct = faithfulness.compute(**inputs,
                                  **compat_options(llama_server, str(tmp_path / "direct")))
    assert through_gemini["scores"] == direct["scores"]
    assert through_gemini["details"] == direct["details"]
    assert through_gemini["usage"]["calls"] == gemini.count > 0
    sent = gemini.count
    again = faithfulness.compute(**inputs, **gemini_options(gemini, cache))
    assert gemini.count == sent and again["usage"]["calls"] == 0
    assert again["scores"] == through_gemini["scores"]
    _assert_no_key(through_gemini, again, Path(cache))


def test_g_eval_samples_match_the_openai_compatible_path(
        llama_server: str, tmp_path: Path) -> None:
    """The Gemini path asks the server exactly what the OpenAI-compatible path asks (same
    prompts, seeds and sampling), and reads the same scores from the same answers. The answers
    are replayed: the server's samples at temperature 1 depend on what it evaluated before (its
    reused KV cache), so two runs of identical requests can sample different scores."""
    g_eval = evaluate.load(registry.metric_path("g_eval"))
    inputs = dict(questions=QUESTIONS, predictions=PREDICTIONS, criteria="Is it correct?",
                  samples=3)
    with FaultProxy(llama_server, replay={}) as proxy, FakeGemini(proxy.url, KEY) as gemini:
        through_gemini = g_eval.compute(**inputs, **gemini_options(gemini, str(tmp_path / "g")))
        asked = len(proxy.seen)
        direct = g_eval.compute(**inputs, **compat_options(proxy.url, str(tmp_path / "d")))
        bodies = [canonical(json.dumps(seen.body).encode()) for seen in proxy.seen]
    assert asked == 6 and len(bodies) == 12
    assert sorted(bodies[:asked]) == sorted(bodies[asked:])  # every direct answer was replayed
    assert through_gemini["details"] == direct["details"]
    assert through_gemini["scores"] == direct["scores"]
    configs = [seen.body["generationConfig"] for seen in gemini.seen]
    assert sorted(c["seed"] for c in configs) == sorted([SEED, SEED + 1, SEED + 2] * 2)
    assert all((c["temperature"], c["topP"], c["maxOutputTokens"]) == (1, 1, 16) and
               "responseLogprobs" not in c for c in configs)


def test_a_model_without_logprobs(llama_server: str, tmp_path: Path) -> None:
    """l3score cannot run on it; g_eval writes its score, or samples it with samples=N."""
    with FakeGemini(llama_server, KEY, no_logprobs=frozenset({MODEL})) as server:
        with pytest.raises(LogprobsUnavailable, match="no log-probabilities"):
            collect(gemini_backend(server).yes_no, [ask(f"Is it? {YES_NO}")], 5)
        g_eval = evaluate.load(registry.metric_path("g_eval"))
        inputs = dict(predictions=PREDICTIONS, criteria="Is it a city?")
        written = g_eval.compute(**inputs, **gemini_options(server, str(tmp_path / "w")))
        sampled = g_eval.compute(**inputs, samples=4,
                                 **gemini_options(server, str(tmp_path / "s")))
    for result, samples in ((written, None), (sampled, 4)):
        measured = [d for d, score in zip(result["details"], result["scores"], strict=True)
                    if score is not None]
        assert measured, result["unmeasured"]
        assert all(d["score_method"] == "sampled" and d.get("samples") == samples
                   for d in measured)


def test_resource_exhausted_is_asked_again_after_the_named_delay(gemini: FakeGemini) -> None:
    judge = gemini_backend(gemini, max_retries=3)
    gemini.fail(2, 429)
    started = time.monotonic()
    got = collect(judge.yes_no, [ask(f"Is water wet? {YES_NO}")], 5)[0]
    assert got.ok, got.error
    assert time.monotonic() - started >= 2 * RETRY_DELAY_SECONDS  # waited as told, twice
    assert [seen.status for seen in gemini.seen] == [429, 429, 200]
    gemini.fail(1, 503)  # an overloaded service: asked again after a back-off
    assert collect(judge.yes_no, [ask(f"Is ice cold? {YES_NO}")], 5)[0].ok
    assert [seen.status for seen in gemini.seen][3:] == [503, 200]


def test_an_unreachable_judge_fails_fast_with_a_reason() -> None:
    from conftest import free_port

    judge = make_backend(judge_config(provider="gemini", base_url=f"http://127.0.0.1:"
                                      f"{free_port()}", api_key=KEY, model=MODEL,
                                      max_retries=1))
    started = time.monotonic()
    got = collect(judge.structured, [ask(f"question {i}") for i in range(6)], STATEMENTS, 50)
    assert time.monotonic() - started < 30
    assert all(not o.ok and KEY not in o.error for o in got.values())
    assert any("connection to 127.0.0.1" in o.error for o in got.values())
    assert any("unreachable" in o.error for o in got.values())  # the rest were not sent


def test_an_exhausted_quota_is_a_fault_never_cached(gemini: FakeGemini, tmp_path: Path) -> None:
    l3score = evaluate.load(registry.metric_path("l3score"))
    inputs = dict(questions=QUESTIONS[:1], predictions=PREDICTIONS[:1],
                  references=REFERENCES[:1])
    options = gemini_options(gemini, str(tmp_path / "cache"), max_retries=1)
    gemini.fail(2, 429)
    refused = l3score.compute(**inputs, **options)
    assert [seen.status for seen in gemini.seen] == [429, 429]
    reason = refused["unmeasured"][0]["reason"]
    assert "429" in reason and "RESOURCE_EXHAUSTED" in reason and KEY not in reason
    answered = l3score.compute(**inputs, **options)  # asked again, not read from the cache
    assert [seen.status for seen in gemini.seen] == [429, 429, 200]
    assert answered["unmeasured"] == [] and answered["usage"]["calls"] == 1


def test_the_key_comes_from_the_environment_and_shows_nowhere(
        gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    config = judge_config(provider="gemini", base_url=gemini.url, model=MODEL)
    judge = make_backend(config)
    assert collect(judge.yes_no, [ask(f"Is fire hot? {YES_NO}")], 5)[0].ok
    assert {k.lower(): v for k, v in gemini.seen[-1].headers.items()}["x-goog-api-key"] == KEY
    assert KEY not in repr(config) and KEY not in repr(judge)
    wrong = make_backend(judge_config(provider="gemini", base_url=gemini.url, model=MODEL,
                                      api_key=KEY + "-wrong"))
    refused = collect(wrong.yes_no, [ask(f"Is ice cold? {YES_NO}")], 5)[0]
    assert "400" in refused.error and KEY not in refused.error


def test_a_missing_sdk_is_one_line_naming_the_extra(gemini: FakeGemini,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    line = "provider='gemini' needs the google.genai SDK: pip install 'judge-metrics[gemini]'"
    config = judge_config(provider="gemini", base_url=gemini.url, api_key=KEY, model=MODEL)
    monkeypatch.setitem(sys.modules, "google.genai", None)  # import google.genai fails
    with pytest.raises(ValueError) as refused:  # at configuration, before any request
        judge_config(provider="gemini", base_url=gemini.url, api_key=KEY, model=MODEL)
    assert str(refused.value) == line
    with pytest.raises(ValueError) as raised:  # and the backend itself, if reached: the same
        GeminiBackend(config)                   # check every SDK-backed provider shares
    assert str(raised.value) == line
    assert gemini.count == 0


def _assert_no_key(*places: object) -> None:
    for place in places:
        if isinstance(place, Path):
            for file in place.rglob("*"):
                if file.is_file():
                    assert KEY.encode() not in file.read_bytes(), file
        else:
            assert KEY not in json.dumps(place, default=str)


def test_only_flash_models_are_asked_for_minimal_thinking(gemini: FakeGemini) -> None:
    flash = gemini_backend(gemini)
    pro = make_backend(judge_config(provider="gemini", base_url=gemini.url, api_key=KEY,
                                    model="gemini-3.1-pro-preview"))
    for operation in ("yes_no", "labels", "structured", "label_samples"):
        assert flash.sampling_params(operation)["thinkingConfig"] == {"thinkingLevel": "MINIMAL"}
        assert "thinkingConfig" not in pro.sampling_params(operation)
