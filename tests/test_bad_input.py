"""Bad input: every metric validates before any work, with errors that name the argument and,
per sample, the index; very long and unusual Unicode inputs do not crash the string and
embedding metrics.

Judge metrics get judge options pointing at a :class:`FaultProxy` that counts requests: after
each rejected input the count must still be 0 ("before any call").
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import evaluate
import pytest
from faultproxy import FaultProxy

from shared.base.validation import InputError
from shared.kit.registry import METRICS, available, metric_path

# evaluate's temporary files are shared by every process using the same experiment id; a
# private id keeps other processes' locks from delaying these tests
EXPERIMENT = f"{Path(__file__).stem}-{os.getpid()}"

NAMES = available()
JUDGE = [n for n in NAMES if METRICS[n].judge]
NON_JUDGE = [n for n in NAMES if not METRICS[n].judge]

# metric -> option -> bad values (thresholds in [0, 1]; weights non-negative, finite, sum > 0)
THRESHOLDS: dict[str, tuple[str, ...]] = {
    "accuracy": ("fuzzy_threshold", "threshold"),
    "semantic_list_contains": ("similarity_threshold",),
    "answer_correctness": ("threshold",),
    "g_eval": ("threshold",),
}
WEIGHTS: dict[str, list[Any]] = {
    "bleu": [[-0.5, 1.5], [math.nan, 1.0], [0.0, 0.0], ["a", "b"], [math.inf], []],
    "answer_correctness": [[-0.5, 1.5], [math.nan, 1.0], [0.0, 0.0], [1.0], [1, 2, 3],
                           ["a", "b"]],
}
BAD_PROBABILITIES = [1.5, -0.1, math.nan, math.inf, "0.5"]
# documented exceptions: context_precision takes an empty reference list (Valor's edge case: no
# references scores 0.0)
ALLOWED = {("context_precision", "references", "empty-list")}


@functools.cache
def load(name: str) -> evaluate.EvaluationModule:
    return evaluate.load(metric_path(name), experiment_id=EXPERIMENT)


@functools.cache
def inputs_of(name: str) -> tuple[Any, ...]:
    """The metric's declared inputs (``INPUTS``), read from its script without evaluate.load, so
    collecting this module stays fast and one broken script fails only its own tests."""
    path = Path(metric_path(name)) / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_bad_input_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception:
        return ()
    for value in vars(module).values():
        if isinstance(value, type) and value.__module__ == module.__name__ and getattr(
                value, "INPUTS", None):
            return value.INPUTS
    return ()


def sample_value(name: str, spec: Any, i: int) -> Any:
    """A valid value of one sample; a JSON input's is the metric's example's first row."""
    if spec.kind == "json":
        return METRICS[name].example.inputs[spec.name][0]
    return {
        "text": f"Paris is the capital of France ({i}).",
        "texts": f"Paris is in France ({i}).",
        "list": [f"Paris is the capital and largest city of France ({i})."],
        "phrases": ["Paris", "France"],
        "messages": [{"role": "user", "content": f"Where is Paris ({i})?"},
                     {"role": "assistant", "content": "In France."}],
    }[spec.kind]


def valid_inputs(name: str, n: int = 2) -> dict[str, list[Any]]:
    return {spec.name: [sample_value(name, spec, i) for i in range(n)]
            for spec in inputs_of(name)}


def holding(spec: Any, value: Any, example: Any) -> Any:
    """A sample of a conversation or JSON input whose item 1 holds ``value`` (a string)."""
    if spec.kind == "messages":
        return [{"role": "user", "content": "fine"}, {"role": "user", "content": value}]
    return [example[0] if example else {}, value]


@pytest.fixture(scope="module")
def counter() -> Iterator[FaultProxy]:
    """Counts requests; answers every one with a 500 (nothing should arrive)."""
    with FaultProxy(None, default="status:500") as proxy:
        yield proxy


@pytest.fixture()
def options(counter: FaultProxy, cache_dir: str) -> Iterator[Any]:
    """Per metric, judge options aimed at the counting proxy (none for non-judge metrics) and
    the options it requires; the test checks afterwards that nothing was sent."""
    before = counter.count

    def make(name: str) -> dict[str, Any]:
        spec = METRICS[name]  # an option without a default (g_eval's criteria): the example's
        required = {o.name: spec.example.options[o.name] for o in spec.options if o.required}
        if not spec.judge:
            return required
        return {**required, "provider": "openai-compatible", "base_url": counter.url,
                "model": "smollm2", "cache_dir": cache_dir, "max_retries": 0, "timeout": 2.0,
                "show_progress": False}

    yield make
    assert counter.count == before, "a request reached the judge before the input was rejected"


def rejects(name: str, kwargs: dict[str, Any], *needles: str) -> Exception:
    """compute must raise ValueError/TypeError whose message names every needle."""
    with pytest.raises((ValueError, TypeError)) as info:
        load(name).compute(**kwargs)
    message = str(info.value)
    for needle in needles:
        assert needle in message, f"{name}: {message!r} does not name {needle!r}"
    return info.value


def per_sample_cases(name: str) -> list[tuple[str, str, Any, type]]:
    """(case id, input name, bad value for sample 1, expected error) for each declared input."""
    cases: list[tuple[str, str, Any, type]] = []
    if not inputs_of(name):
        return [("unreadable-script", "-", None, ValueError)]
    for spec in inputs_of(name):
        if spec.required or spec.kind not in ("messages", "json"):  # else None: not given
            cases.append(("none", spec.name, None, ValueError))
        cases += [("int", spec.name, 42, TypeError), ("dict", spec.name, {"a": "b"}, TypeError)]
        if spec.kind in ("messages", "json"):
            cases.append(("bad-json", spec.name, '[{"role": ', ValueError))
        if spec.kind == "messages":
            cases += [("bad-role", spec.name, [{"role": "robot", "content": "hi"}], ValueError),
                      ("stray-tool-result", spec.name,
                       [{"role": "tool", "tool_call_id": "x", "content": "1"}], ValueError)]
        if spec.kind == "text":
            cases.append(("list-for-str", spec.name, ["a", "b"], TypeError))
            if not spec.allow_empty:
                cases += [("empty", spec.name, "", ValueError),
                          ("blank", spec.name, " \t\n ", ValueError)]
        elif spec.kind == "texts":
            cases += [("empty", spec.name, "", ValueError), ("blank", spec.name, "  ", ValueError),
                      ("empty-list", spec.name, [], ValueError),
                      ("non-str-item", spec.name, ["ok", 7], TypeError),
                      ("none-item", spec.name, ["ok", None], ValueError)]
        elif spec.kind == "list":
            cases += [("str-for-list", spec.name, "a context", TypeError),
                      ("non-str-item", spec.name, ["ok", 7], TypeError),
                      ("empty-item", spec.name, ["ok", " "], ValueError),
                      ("none-item", spec.name, ["ok", None], ValueError)]
        elif spec.kind == "phrases":
            cases += [("non-str-item", spec.name, ["ok", 7], TypeError)]
    return cases


ALL_SAMPLE_CASES = [
    pytest.param(name, input_name, value, error, id=f"{name}-{input_name}-{case}")
    for name in NAMES for case, input_name, value, error in per_sample_cases(name)
    if (name, input_name, case) not in ALLOWED
]


@pytest.mark.parametrize(("name", "input_name", "value", "error"), ALL_SAMPLE_CASES)
def test_bad_sample_names_argument_and_index(name: str, input_name: str, value: Any,
                                             error: type, options: Any) -> None:
    assert inputs_of(name), f"metrics/{name}/{name}.py declares no INPUTS or does not import"
    kwargs = valid_inputs(name, 3)
    kwargs[input_name][1] = value
    raised = rejects(name, {**kwargs, **options(name)}, f"{input_name}[1]")
    assert isinstance(raised, error), f"{name}: expected {error.__name__}, got {raised!r}"


# lone surrogates (not valid Unicode), as a whole text and inside a list; the error names the
# argument, the index (with the item's index inside a list) and the character position
SURROGATES = ["a\ud800b", "\udfff", "ok \ud83d\ude00 (a surrogate pair is not an emoji in a str)"]


@pytest.mark.parametrize("bad", SURROGATES, ids=["lone-high", "lone-low", "pair"])
@pytest.mark.parametrize("name", NAMES)
def test_invalid_unicode_names_argument_and_index(name: str, bad: str, options: Any) -> None:
    """Every metric, every declared input: one ``ValueError`` before any work (the judge proxy
    sees no request), naming the argument, the sample's index and the character position."""
    position = next(i for i, c in enumerate(bad) if 0xD800 <= ord(c) <= 0xDFFF)
    for spec in inputs_of(name):
        kwargs = valid_inputs(name, 3)
        if spec.kind in ("text", "texts"):
            kwargs[spec.name][1], where = bad, f"{spec.name}[1] "
        elif spec.kind in ("messages", "json"):
            kwargs[spec.name][1] = holding(spec, bad, kwargs[spec.name][0])
            where = f"{spec.name}[1][1] "
        else:
            kwargs[spec.name][1], where = ["fine", bad], f"{spec.name}[1][1] "
        error = rejects(name, {**kwargs, **options(name)}, where, "not valid Unicode",
                        f"at character {position}")
        # a ValueError (an InputError naming the place), never a UnicodeError or TypeError
        assert isinstance(error, InputError), (name, spec.name, error)
        assert not isinstance(error, (TypeError, UnicodeError)), (name, spec.name, error)
        assert (error.argument, error.sample) == (spec.name, 1)


@pytest.mark.parametrize(
    "name", [n for n in NAMES if len([s for s in inputs_of(n) if s.required]) >= 2]
)
def test_mismatched_lengths(name: str, options: Any) -> None:
    kwargs = valid_inputs(name, 3)
    required = [spec.name for spec in inputs_of(name) if spec.required]
    shorter = required[-1]
    kwargs[shorter] = kwargs[shorter][:2]
    error = rejects(name, {**kwargs, **options(name)}, shorter)
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("name", NAMES)
def test_none_and_missing_column(name: str, options: Any) -> None:
    for spec in inputs_of(name):
        if not spec.required:
            continue
        kwargs = valid_inputs(name)
        kwargs[spec.name] = None
        rejects(name, {**kwargs, **options(name)}, spec.name)
        del kwargs[spec.name]
        rejects(name, {**kwargs, **options(name)}, spec.name)


@pytest.mark.parametrize("name", NAMES)
def test_column_of_wrong_type(name: str, options: Any) -> None:
    """A string, a number or a dict where a list of samples is required."""
    for spec in inputs_of(name):
        for bad in ("Paris", 3, {"0": "Paris"}):
            kwargs = valid_inputs(name)
            kwargs[spec.name] = bad
            error = rejects(name, {**kwargs, **options(name)}, spec.name)
            assert isinstance(error, TypeError)


@pytest.mark.parametrize("name", NAMES)
def test_empty_lists(name: str, options: Any) -> None:
    kwargs = {spec.name: [] for spec in inputs_of(name) if spec.required}
    error = rejects(name, {**kwargs, **options(name)})
    assert isinstance(error, ValueError)
    assert re.search(r"empty|at least one", str(error))


def test_threshold_table_covers_every_threshold_option() -> None:
    """Every declared ``*threshold`` option of every metric is exercised below."""
    for name in NAMES:
        declared = {option.name for option in METRICS[name].options}
        found = {option for option in declared if option.endswith("threshold")}
        expected = set(THRESHOLDS.get(name, ()))
        assert found == expected, f"{name}: declared thresholds {found}, tested {expected}"
        weights = {option for option in declared if option.endswith("weights")}
        assert weights == ({"weights"} if name in WEIGHTS else set()), (name, weights)


@pytest.mark.parametrize("bad", BAD_PROBABILITIES, ids=repr)
@pytest.mark.parametrize(
    ("name", "option"), [(n, o) for n in THRESHOLDS if n in NAMES for o in THRESHOLDS[n]]
)
def test_threshold_outside_unit_interval(name: str, option: str, bad: Any, options: Any) -> None:
    rejects(name, {**valid_inputs(name), **options(name), option: bad}, option)


@pytest.mark.parametrize(
    ("name", "bad"),
    [pytest.param(n, w, id=f"{n}-{w!r}") for n in WEIGHTS if n in NAMES for w in WEIGHTS[n]],
)
def test_bad_weights(name: str, bad: Any, options: Any) -> None:
    rejects(name, {**valid_inputs(name), **options(name), "weights": bad}, "weights")


@pytest.mark.parametrize("name", JUDGE)
def test_unknown_provider(name: str, options: Any) -> None:
    judge = {**options(name), "provider": "gpt-magic"}
    rejects(name, {**valid_inputs(name), **judge}, "provider", "gpt-magic")


@pytest.mark.parametrize("name", JUDGE)
@pytest.mark.parametrize(("provider", "env"), [("openai", "OPENAI_API_KEY"),
                                               ("deepseek", "DEEPSEEK_API_KEY"),
                                               ("xai", "XAI_API_KEY")])
def test_missing_api_key(name: str, provider: str, env: str, options: Any,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(env, raising=False)
    judge = {**options(name), "provider": provider}
    error = rejects(name, {**valid_inputs(name), **judge}, "api_key", env)
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("name", JUDGE)
@pytest.mark.parametrize("url", ["not a url", "127.0.0.1:8080/v1", "ftp://host/v1", "http://",
                                 "file:///etc/passwd"])
def test_base_url_not_a_url(name: str, url: str, options: Any) -> None:
    judge = {**options(name), "base_url": url}
    error = rejects(name, {**valid_inputs(name), **judge}, "base_url")
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("name", JUDGE)
@pytest.mark.parametrize(("option", "bad"), [("max_concurrency", 0), ("max_concurrency", "8"),
                                             ("max_retries", -1), ("timeout", 0),
                                             ("timeout", math.nan), ("use_cache", "yes")])
def test_bad_judge_option(name: str, option: str, bad: Any, options: Any) -> None:
    rejects(name, {**valid_inputs(name), **options(name), option: bad}, option)


# ---------------------------------------------------------------- long and unusual text

UNICODE = [
    "\U0001f600\U0001f44d\U0001f3fd \U0001f1eb\U0001f1f7 "
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 "
    "\u05e9\u05dc\u05d5\u05dd",
    "\u202eevil RTL override\u202c \u200f\u200e",
    "e\u0301\u0302\u0303\u0304 a\u0308 Z\u0351\u0352\u0353\u0354\u0355\u0356",
    "nul \x00 inside \x00\x00",
    "\ufeff\u200b\u2028\u2029 zero width and separators",
    "\u4e2d\u6587 \u65e5\u672c\u8a9e \ud55c\uad6d\uc5b4 \u0e44\u0e17\u0e22",
    "\U0001d54f\U0001d550 math \u2060 \uffff \U0010fffd",
]
MEGABYTE = ("Paris is the capital of France. " * 33_000)[:1_000_000]


def _assert_scores_in_range(name: str, result: dict[str, Any]) -> None:
    for key in METRICS[name].headline:
        value = result[key]
        assert isinstance(value, float) and 0.0 <= value <= 1.0, (name, key, value)


@pytest.mark.parametrize("name", NON_JUDGE)
def test_any_unicode_does_not_crash(name: str) -> None:
    kwargs = valid_inputs(name, len(UNICODE))
    for spec in inputs_of(name):
        if spec.kind == "json":  # the example's valid calls: their text is not read
            continue
        kwargs[spec.name] = [
            text if spec.kind == "text" else [text] if spec.kind in ("list", "phrases") else
            [{"role": "user", "content": text}] if spec.kind == "messages" else text
            for text in UNICODE
        ]
    result = load(name).compute(**kwargs)
    _assert_scores_in_range(name, result)


@pytest.mark.parametrize("name", NON_JUDGE)
def test_megabyte_strings_do_not_crash(name: str) -> None:
    """1 MB prediction against a short reference and the reverse (one long side per sample,
    which keeps ROUGE-L's quadratic LCS small)."""
    kwargs = valid_inputs(name, 2)
    specs = inputs_of(name)
    for position, spec in enumerate(specs):
        long_index = position % 2
        if spec.kind == "json":
            continue
        value = (MEGABYTE if spec.kind in ("text", "texts") else
                 [{"role": "user", "content": MEGABYTE}] if spec.kind == "messages" else
                 [MEGABYTE])
        kwargs[spec.name][long_index] = value
    result = load(name).compute(**kwargs)
    _assert_scores_in_range(name, result)
