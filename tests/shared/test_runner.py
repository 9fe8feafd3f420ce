"""The judge runner against the real llama.cpp server: cache, de-dup, resume, usage, dry run.

Requests go through ``tests/faultproxy.py`` (a loopback proxy in front of the real server) where
the test needs to count what the server was sent or to hand the runner one broken answer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jsonschema
import pytest
from faultproxy import FaultProxy
from judgeserver import JudgeServer, is_repair

from shared import JudgeRequest, YesNoAnswer, get_judge, judge_config
from shared.engine.cache import CACHE_FILE, CallCache, call_key
from shared.engine.config import endpoint_of
from shared.engine.pricing import estimate_cost
from shared.engine.runner import DRY_RUN_ERROR

REPO = Path(__file__).resolve().parents[2]
FAKE_KEY = "sk-FAKE-judge-metrics-test-key-7f3a9c"
UNCONSTRAINED = "none"  # no response_format: the answer is free text

VERDICT = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]},
                   "reason": {"type": "string", "maxLength": 200}},
    "required": ["verdict"],
}


def ask(question: str, version: str = "1") -> JudgeRequest:
    return JudgeRequest(
        messages=(("user", f"{question}\nAnswer in one word - Yes or No."),),
        prompt_id=f"runner-test@{version}",
    )


def verdict_request(statement: str) -> JudgeRequest:
    text = (f"Is this statement true? {statement}\n"
            'Reply with JSON: {"verdict": "yes" or "no", "reason": "<one short sentence>"}')
    return JudgeRequest(messages=(("user", text),), prompt_id="runner-verdict@1")


def config(base_url: str, cache_dir: str, **options):
    options = {"model": "smollm2", "response_format": "json_object", "show_progress": False,
               "max_concurrency": 2, "api_key": FAKE_KEY, **options}
    return judge_config(provider="openai-compatible", base_url=base_url, cache_dir=cache_dir,
                        **options)


def assert_no_api_key_in(cache_dir: str) -> None:
    """The API key appears in no byte of the cache folder (database, WAL and shared memory)."""
    files = [p for p in Path(cache_dir).iterdir() if p.is_file()]
    assert any(p.name == CACHE_FILE for p in files)
    for path in files:
        data = path.read_bytes()
        assert FAKE_KEY.encode() not in data, path
        assert b"FAKE-judge-metrics" not in data, path


# ------------------------------------------------------------------ pure parts


def test_bad_arguments_name_themselves(cache_dir):
    judge = get_judge(config("http://127.0.0.1:9/v1", cache_dir, dry_run=True))
    with pytest.raises(TypeError, match=r"requests\[1\]"):
        judge.yes_no([ask("a"), "b"])
    with pytest.raises(ValueError, match="top_k"):
        judge.yes_no([ask("a")], top_k=0)
    with pytest.raises(ValueError, match="schemas has 1 entries for 2 requests"):
        judge.structured([ask("a"), ask("b")], [VERDICT])
    with pytest.raises(ValueError, match=r"schemas\[0\] is not a valid JSON schema"):
        judge.structured([ask("a")], [{"type": "no-such-type"}])
    assert judge.yes_no([]) == [] and judge.structured([], VERDICT) == []


def test_structured_cache_keys_are_the_documented_parts(cache_dir):
    """Each answer is stored raw under call_key of (operation, backend kind, endpoint, model,
    messages, sampling, prompt id, {schema, max_tokens}) of the request that got it, refused
    answers too, a repair under the key of the repair request: a change here would orphan every
    user's cached structured answers. The checks are not in the key: a run with checks reuses
    the answers of a run without them and asks only what the checks now refuse."""
    yes, no = '{"verdict": "yes"}', '{"verdict": "no"}'
    scripted = {"plain": (yes, None), "repaired": ("not JSON", yes), "checked": (no, yes),
                "never": ("not JSON", "still not")}

    def answer(body):
        first, repair = scripted[body["messages"][0]["content"]]
        return repair if is_repair(body) else first

    def key(judge, request):
        return call_key(operation="structured", kind="openai-compatible",
                        endpoint=endpoint_of(server.url), model="smollm2",
                        messages=request.messages,
                        sampling=judge.backend.sampling_params("structured"),
                        prompt_id=request.prompt_id, extra={"schema": VERDICT, "max_tokens": 32})

    requests = [JudgeRequest(messages=(("user", name),), prompt_id="keys@1") for name in scripted]
    said_no = [lambda value: None if value["verdict"] == "yes" else "said no"] * 4
    with JudgeServer(answer) as server:
        judge = get_judge(config(server.url, cache_dir, response_format=UNCONSTRAINED))
        outcomes = judge.structured(requests, VERDICT, max_tokens=32)
        assert [o.value for o in outcomes] == [{"verdict": "yes"}, {"verdict": "yes"},
                                               {"verdict": "no"}, None]
        assert judge.usage.calls == 6  # four first answers, two repairs
        sent = {json.dumps(body["messages"]): body for body in server.seen}
        expected = {}
        for body in server.seen:
            messages = tuple((m["role"], m["content"]) for m in body["messages"])
            request = JudgeRequest(messages=messages, prompt_id="keys@1")
            expected[key(judge, request)] = {"answer": answer(body), "constrained": False,
                                             "usage": [50, 1]}
        assert len(sent) == len(expected) == 6
        assert CallCache(cache_dir).get_many(expected) == expected

        checked = get_judge(config(server.url, cache_dir, response_format=UNCONSTRAINED))
        again = checked.structured(requests, VERDICT, max_tokens=32, checks=said_no)
        assert [o.value for o in again] == [{"verdict": "yes"}] * 3 + [None]
        assert again[3].error == outcomes[3].error
        # only "checked" is asked: the repair of its cached "no", with the check's reason
        assert checked.usage.calls == 1 and checked.usage.cache_hits == 6
        assert "said no" in server.seen[-1]["messages"][-1]["content"]
    assert len(CallCache(cache_dir)) == 7


def test_a_refused_answer_is_cached_and_not_sent_again(cache_dir):
    """A constrained answer that fails its schema (no repair) and a free-text answer whose
    repair fails its check too are each refused once, cached, and served from the cache on the
    next run with the same reason and no request; retry_unmeasured asks them again."""
    said = {"constrained": '{"verdict": "maybe"}', "free": '{"verdict": "no"}'}
    fixed = False

    def answer(body):
        if fixed:
            return '{"verdict": "yes"}'
        return said[body["messages"][0]["content"]]

    yes_only = [None, lambda value: None if value["verdict"] == "yes" else "said no"]
    constrained = JudgeRequest(messages=(("user", "constrained"),), prompt_id="refused@1")
    free = JudgeRequest(messages=(("user", "free"),), prompt_id="refused@1")
    formats = ("json_object", UNCONSTRAINED)

    def run(**options):
        judges = [get_judge(config(server.url, cache_dir, response_format=style, **options))
                  for style in formats]
        outcomes = [judge.structured([request], VERDICT, max_tokens=32, checks=[check])[0]
                    for judge, request, check in zip(judges, (constrained, free), yes_only,
                                                     strict=True)]
        return outcomes, [judge.usage.calls for judge in judges], judges

    with JudgeServer(answer) as server:
        first, calls, _ = run()
        assert calls == [1, 2]  # the free-text answer got its repair
        assert first[0].error.startswith("invalid judge answer: 'maybe' is not one of")
        assert first[1].error == "invalid judge answer: said no"
        assert len(CallCache(cache_dir)) == 3

        again, calls, judges = run()
        assert calls == [0, 0] and [j.usage.cache_hits for j in judges] == [1, 2]
        assert [o.error for o in again] == [o.error for o in first]
        assert all(o.cached for o in again) and len(server.seen) == 3

        fixed = True  # a judge that now answers otherwise: only retry_unmeasured asks it
        retried, calls, _ = run(retry_unmeasured=True)
        assert calls == [1, 1]  # the constrained first request; the free text's repair
        assert [o.value for o in retried] == [{"verdict": "yes"}] * 2
        after, calls, _ = run()
        assert calls == [0, 0] and [o.value for o in after] == [{"verdict": "yes"}] * 2


def test_retry_unmeasured_asks_a_refused_answer_again_once_per_process(cache_dir):
    """The metrics of one run share their first steps through the cache: a refused answer is
    asked again once per process, not once per metric that meets it."""
    request = JudgeRequest(messages=(("user", "q"),), prompt_id="retry-once@1")
    with JudgeServer(lambda body: '{"verdict": "maybe"}') as server:
        for retry, calls in ((False, 1), (True, 1), (True, 0), (False, 0)):
            judge = get_judge(config(server.url, cache_dir, retry_unmeasured=retry))
            outcome = judge.structured([request], VERDICT, max_tokens=32)[0]
            assert outcome.error.startswith("invalid judge answer: 'maybe' is not one of")
            assert judge.usage.calls == calls, retry
        assert len(server.seen) == 2


def test_a_check_change_rejudges_the_cached_answer_without_a_call(cache_dir):
    strict = [lambda value: "too strict"]
    request = JudgeRequest(messages=(("user", "q"),), prompt_id="check-change@1")
    with JudgeServer(lambda body: '{"verdict": "no"}') as server:
        judge = get_judge(config(server.url, cache_dir))
        refused = judge.structured([request], VERDICT, max_tokens=32, checks=strict)[0]
        assert refused.error == "invalid judge answer: too strict" and judge.usage.calls == 2
        relaxed = get_judge(config(server.url, cache_dir))
        accepted = relaxed.structured([request], VERDICT, max_tokens=32,
                                      checks=[lambda value: None])[0]
        assert accepted.value == {"verdict": "no"} and accepted.cached
        assert relaxed.usage.calls == 0 and len(server.seen) == 2


@pytest.mark.parametrize("fault", ["status:503", "hang", "reset"])
def test_a_judge_fault_is_not_cached_and_is_asked_again(cache_dir, fault):
    """A 5xx, a time-out or a lost connection is no answer: nothing is cached, the next run
    asks again (and caches the answer it then gets)."""
    request = JudgeRequest(messages=(("user", "q"),), prompt_id="fault@1")
    with JudgeServer(lambda body: '{"verdict": "yes"}') as server, \
            FaultProxy(server.url, schedule=[fault]) as proxy:
        judge = get_judge(config(proxy.url, cache_dir, max_retries=0, timeout=1.0))
        failed = judge.structured([request], VERDICT, max_tokens=32)[0]
        assert not failed.ok and not failed.error.startswith("invalid judge answer")
        assert len(CallCache(cache_dir)) == 0
        again = get_judge(config(proxy.url, cache_dir, max_retries=0, timeout=1.0))
        answered = again.structured([request], VERDICT, max_tokens=32)[0]
        assert answered.value == {"verdict": "yes"} and again.usage.calls == 1
        assert proxy.count == 2 and len(CallCache(cache_dir)) == 1


# ------------------------------------------------------------------ against the server

@pytest.mark.server
def test_second_run_is_all_cache_hits_with_identical_outcomes(llama_server, cache_dir):
    requests = [ask("Is Paris in France?"), ask("Is 2 + 2 = 5?"), ask("Is water wet?")]
    first = get_judge(config(llama_server, cache_dir))
    outcomes = first.yes_no(requests, top_k=5, desc="first")
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    assert all(isinstance(o.value, YesNoAnswer) and len(o.value.top) == 5 for o in outcomes)
    assert first.usage.calls == 3 and first.usage.cache_hits == 0
    assert first.usage.prompt_tokens == sum(o.usage.prompt_tokens for o in outcomes) > 0
    assert first.usage.completion_tokens == sum(o.usage.completion_tokens for o in outcomes) > 0
    assert first.cost is None  # "smollm2" has no price

    again = get_judge(config(llama_server, cache_dir))
    repeated = again.yes_no(requests, top_k=5, desc="again")
    assert again.usage.as_dict() == {"calls": 0, "cache_hits": 3, "prompt_tokens": 0,
                                     "completion_tokens": 0, "cached_prompt_tokens": 0}
    assert [o.value for o in repeated] == [o.value for o in outcomes]
    assert all(o.cached for o in repeated)

    # every part of the key makes a new call: model name, top_k, prompt version
    for judge_options, top_k, version in ((dict(model="smollm2-other"), 5, "1"),
                                          ({}, 3, "1"), ({}, 5, "2")):
        judge = get_judge(config(llama_server, cache_dir, **judge_options))
        changed = judge.yes_no([ask("Is Paris in France?", version)], top_k=top_k)
        assert changed[0].ok, changed[0].error
        assert judge.usage.calls == 1 and judge.usage.cache_hits == 0, (judge_options, top_k,
                                                                        version)
        assert len(changed[0].value.top) == top_k

    # use_cache=False neither reads nor writes the cache
    stored = len(CallCache(cache_dir))
    uncached = get_judge(config(llama_server, cache_dir, use_cache=False))
    assert [o.value for o in uncached.yes_no(requests[:1])] == [outcomes[0].value]
    assert uncached.usage.calls == 1 and len(CallCache(cache_dir)) == stored
    assert_no_api_key_in(cache_dir)


@pytest.mark.server
def test_identical_requests_are_sent_once(llama_server, cache_dir):
    with FaultProxy(llama_server) as proxy:
        judge = get_judge(config(proxy.url, cache_dir, use_cache=False))
        a, b = ask("Is the sky blue?"), ask("Is fire cold?")
        outcomes = judge.yes_no([a, b, a, a, b], desc="dedup")
        assert proxy.count == 2
    assert len(CallCache(cache_dir)) == 0  # use_cache=False writes nothing
    assert judge.usage.calls == 2
    assert all(o.ok for o in outcomes)
    assert outcomes[0].value == outcomes[2].value == outcomes[3].value
    assert outcomes[1].value == outcomes[4].value
    # the tokens are counted once, on the first of the identical requests
    assert sum(o.usage.prompt_tokens for o in outcomes) == judge.usage.prompt_tokens


@pytest.mark.server
def test_structured_answers_validate_and_are_cached(llama_server, cache_dir):
    statements = ["The Earth orbits the Sun.", "Cats are reptiles.", "The Earth orbits the Sun."]
    judge = get_judge(config(llama_server, cache_dir))
    outcomes = judge.structured([verdict_request(s) for s in statements], VERDICT,
                                max_tokens=48, desc="verdicts")
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    for outcome in outcomes:
        jsonschema.validate(outcome.value, VERDICT)
    assert judge.usage.calls == 2
    assert judge.usage.completion_tokens > 0

    again = get_judge(config(llama_server, cache_dir))
    repeated = again.structured([verdict_request(s) for s in statements], VERDICT, max_tokens=48)
    assert [o.value for o in repeated] == [o.value for o in outcomes]
    assert again.usage.calls == 0 and again.usage.cache_hits == 2

    # max_tokens is part of the key
    other = get_judge(config(llama_server, cache_dir))
    other.structured([verdict_request(statements[0])], VERDICT, max_tokens=40)
    assert other.usage.calls == 1
    assert_no_api_key_in(cache_dir)


@pytest.mark.server
def test_answers_that_never_validate_are_unmeasured_and_cached(llama_server, cache_dir):
    impossible = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 10**9}},
                  "required": ["n"], "additionalProperties": False}
    request = JudgeRequest(messages=(("user", 'Reply with JSON {"n": 1}.'),), prompt_id="n@1")
    judge = get_judge(config(llama_server, cache_dir))
    outcome = judge.structured([request], impossible, max_tokens=16)[0]
    assert outcome.value is None
    assert outcome.error.startswith("invalid judge answer: ")
    assert judge.usage.calls == 1  # the backend is constrained: no repair retry
    assert len(CallCache(cache_dir)) == 1  # cached: a rerun reads it, not the judge
    again = get_judge(config(llama_server, cache_dir))
    assert again.structured([request], impossible, max_tokens=16)[0].error == outcome.error
    assert again.usage.calls == 0 and again.usage.cache_hits == 1


@pytest.mark.server
def test_unreachable_server_gives_errors_not_exceptions(cache_dir):
    from conftest import free_port

    judge = get_judge(config(f"http://127.0.0.1:{free_port()}/v1", cache_dir, max_retries=0,
                             timeout=5.0))
    outcomes = judge.yes_no([ask("a"), ask("b")])
    assert len(outcomes) == 2 and all(not o.ok and o.error for o in outcomes)
    structured = judge.structured([verdict_request("x")], VERDICT, max_tokens=16)
    assert not structured[0].ok
    assert len(CallCache(cache_dir)) == 0


@pytest.mark.server
def test_dry_run_sends_nothing_and_plans(llama_server, cache_dir):
    requests = [ask("Is Paris in France?"), ask("Is 2 + 2 = 5?"), ask("Is Paris in France?")]
    with FaultProxy(llama_server) as proxy:
        real = get_judge(config(proxy.url, cache_dir, use_cache=False))
        real.yes_no(requests[:1])
        assert proxy.count == 1  # the proxy does see real calls

        for model, priced in (("smollm2", False), ("gpt-4o-mini", True)):
            judge = get_judge(config(proxy.url, cache_dir, model=model, dry_run=True))
            yes_no = judge.yes_no(requests, desc="dry")
            structured = judge.structured([verdict_request("x")], VERDICT, max_tokens=64)
            assert [o.error for o in yes_no + structured] == [DRY_RUN_ERROR] * 4
            assert judge.usage.calls == 0
            assert (judge.cost is not None) == priced
            plan = judge.plan()
            expected_prompt = (estimate_cost(requests[:2], "openai-compatible", model)
                               ["prompt_tokens"]
                               + estimate_cost([verdict_request("x")], "openai-compatible", model)
                               ["prompt_tokens"])
            assert plan["requests"] == 3
            assert plan["prompt_tokens"] == expected_prompt
            assert plan["completion_tokens"] == 2 * 1 + 64
            assert (plan["cost"] is not None) == priced
        assert proxy.count == 1
    assert len(CallCache(cache_dir)) == 0


@pytest.mark.server
def test_an_unconstrained_backend_gets_one_repair_retry(llama_server, cache_dir):
    # The first answer is broken on purpose (the proxy answers '{"verdicts": "not a list", ...}');
    # the repair request carries it and the validation error, and goes to the real server.
    with FaultProxy(llama_server, schedule=["bad_schema"]) as proxy:
        judge = get_judge(config(proxy.url, cache_dir, response_format=UNCONSTRAINED))
        assert not judge.backend.constrained
        outcome = judge.structured([verdict_request("Water boils at 100 C at sea level.")],
                                   VERDICT, max_tokens=48)[0]
        assert proxy.count == 2 and judge.usage.calls == 2
        repair = proxy.seen[1].body["messages"]
        assert repair[-2] == {"role": "assistant", "content": '{"verdicts": "not a list", "x": 1}'}
        assert "verdict" in repair[-1]["content"] and "JSON" in repair[-1]["content"]
    assert len(CallCache(cache_dir)) == 2  # the broken answer and the repair's, each raw
    if outcome.ok:
        jsonschema.validate(outcome.value, VERDICT)
    else:
        assert outcome.error.startswith("invalid judge answer: ")


@pytest.mark.server
def test_a_model_without_logprobs_raises_a_configuration_error(llama_server, cache_dir):
    from shared.engine.backends.base import LogprobsUnavailable

    with FaultProxy(llama_server, default="no_logprobs") as proxy:
        judge = get_judge(config(proxy.url, cache_dir))
        with pytest.raises(LogprobsUnavailable, match="log-probabilities"):
            judge.yes_no([ask("Is snow white?"), ask("Is coal white?")])
        assert proxy.count == 1  # stopped before the further calls
    assert len(CallCache(cache_dir)) == 0


KILLED_RUN = textwrap.dedent("""
    import sys
    from shared import JudgeRequest, get_judge, judge_config
    base_url, cache_dir, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    config = judge_config(provider="openai-compatible", base_url=base_url, model="smollm2",
                          cache_dir=cache_dir, show_progress=False, max_concurrency=1)
    requests = [JudgeRequest(messages=(("user", f"Is {i} an even number? Yes or No."),),
                             prompt_id="resume@1") for i in range(count)]
    print("start", flush=True)
    get_judge(config).yes_no(requests)
    print("finished", flush=True)
""")


@pytest.mark.server
def test_a_killed_run_resumes_with_only_the_missing_calls(llama_server, cache_dir):
    count = 6
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, llama_server, cache_dir, str(count)], cwd=REPO,
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    cache = CallCache(cache_dir)
    try:
        assert process.stdout.readline().strip() == "start"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            if (Path(cache_dir) / CACHE_FILE).exists() and len(cache) >= 2:
                break
            time.sleep(0.02)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    stored = len(cache)
    assert 2 <= stored < count, f"killed after {stored} of {count} answers"

    resumed = get_judge(judge_config(provider="openai-compatible", base_url=llama_server,
                                     model="smollm2", cache_dir=cache_dir, show_progress=False))
    outcomes = resumed.yes_no([
        JudgeRequest(messages=(("user", f"Is {i} an even number? Yes or No."),),
                     prompt_id="resume@1")
        for i in range(count)
    ])
    assert all(o.ok for o in outcomes)
    assert resumed.usage.cache_hits == stored
    assert resumed.usage.calls == count - stored
    assert len(cache) == count


def test_results_are_json_round_trippable():
    # what the cache stores for a yes/no answer survives JSON, -inf log-probabilities included
    from shared.engine.cached_answers import decode_yes_no, encode_yes_no

    answer = YesNoAnswer(top=[("Yes", -0.1), ("No", float("-inf"))], p_yes=0.9, p_no=None)
    assert decode_yes_no(json.loads(json.dumps(encode_yes_no(answer), allow_nan=False))) == answer
