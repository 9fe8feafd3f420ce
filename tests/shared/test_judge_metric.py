"""JudgeMetric and its glue: split_judge_options, mean_measured, build_output with a judge,
first_failure."""

from __future__ import annotations

import math
from typing import Any

import pytest

from shared import (
    JUDGE_OPTION_NAMES,
    About,
    Input,
    JudgeConfig,
    JudgeMetric,
    JudgeRequest,
    Option,
    Outcome,
    SampleResult,
    first_failure,
    get_judge,
    judge_config,
    judge_fault,
    mean_measured,
    results_of,
    split_judge_options,
)
from shared.engine.pricing import estimate_cost
from shared.kit.results import build_output


def test_split_takes_every_judge_option_and_leaves_the_rest():
    options = {"provider": "openai-compatible", "base_url": "http://127.0.0.1:1/v1",
               "model": "m", "use_cache": False, "max_concurrency": 2, "top_n": 3,
               "embedding_model": "x"}
    config, rest = split_judge_options(options)
    assert isinstance(config, JudgeConfig)
    assert (config.provider, config.model, config.use_cache, config.max_concurrency) == (
        "openai-compatible", "m", False, 2)
    assert rest == {"top_n": 3, "embedding_model": "x"}
    assert "provider" in options  # the caller's dict is untouched
    assert not set(rest) & set(JUDGE_OPTION_NAMES)


def test_split_defaults_and_bad_options():
    config, rest = split_judge_options({})
    assert config == judge_config() and rest == {}
    with pytest.raises(ValueError, match="max_concurrency"):
        split_judge_options({"max_concurrency": 0})
    with pytest.raises(ValueError, match="provider"):
        split_judge_options({"provider": "nope"})


def test_mean_measured_skips_unmeasured_and_never_returns_nan():
    assert mean_measured([1.0, None, 0.0, float("nan"), 0.5]) == pytest.approx(0.5)
    assert mean_measured([True, False, None]) == pytest.approx(0.5)
    assert mean_measured([]) is None
    assert mean_measured([None, float("nan")]) is None
    assert mean_measured(x for x in [2, 4]) == 3.0


def _judge(**options):
    return get_judge(judge_config(provider="openai-compatible", base_url="http://127.0.0.1:9/v1",
                                  model="gpt-4o-mini", **options))


def test_a_judge_output_has_exactly_the_documented_keys():
    judge = _judge()
    output = build_output({"Metric": float("nan")},
                          [SampleResult(1.0, {"v": 1}), SampleResult(None, {}, "r"),
                           SampleResult(float("nan"))], judge)
    assert list(output) == ["Metric", "scores", "details", "unmeasured", "invalid_answers",
                            "usage", "Cost"]
    assert output["Metric"] is None and output["scores"] == [1.0, None, None]
    assert sum(output["invalid_answers"].values()) == 0  # reason "r" is no invalid judge answer
    assert output["usage"] == {"calls": 0, "cache_hits": 0, "prompt_tokens": 0,
                               "completion_tokens": 0, "cached_prompt_tokens": 0}
    assert output["Cost"] == 0.0  # priced model, nothing sent


def test_a_judge_output_in_a_dry_run_adds_the_plan():
    judge = _judge(dry_run=True)
    requests = [JudgeRequest(messages=(("user", f"question {i}"),), prompt_id="q@1")
                for i in (1, 2, 2)]
    outcomes = judge.yes_no(requests, desc="dry")
    assert [o.error for o in outcomes] == ["dry run: not sent"] * 3
    output = build_output({"Metric": None}, [SampleResult(None)] * 3, judge)
    expected = estimate_cost(requests[:2], "openai-compatible", "gpt-4o-mini", 1)
    assert output["dry_run"] == expected
    assert output["usage"]["calls"] == 0
    assert math.isfinite(output["dry_run"]["cost"])


class _Echo(JudgeMetric):
    """A judge metric whose formula needs no judge call: the prediction's length."""

    ABOUT = About("the prediction's length", "", "")
    HEADLINE = ("echo",)
    INPUTS = (Input("predictions"),)
    OPTIONS = (Option("scale", float, 1.0, nullable=True, doc="multiplies the length"),)

    def score(self, judge: Any, predictions: list[str], scale: float = 1.0
              ) -> list[SampleResult]:
        return [SampleResult.measured(len(p) * scale, text=p) if p != "boom"
                else judge_fault("judge: invalid judge answer: copied the prompt's example")
                for p in predictions]


def test_judge_metric_builds_the_output_from_the_results() -> None:
    output = _Echo().compute(predictions=["ab", "boom", "abcd"], scale=0.5,
                             provider="openai-compatible", model="gpt-4o-mini",
                             base_url="http://127.0.0.1:9/v1")
    assert output["echo"] == 1.5 and output["scores"] == [1.0, None, 2.0]
    assert output["unmeasured"] == [{"index": 1, "reason": output["details"][1]["error"]}]
    assert output["details"][1]["invalid_answer"] == "copied_example"
    assert output["invalid_answers"]["copied_example"] == 1
    assert [r.score for r in results_of(output)] == [1.0, None, 2.0]


def test_judge_metric_rejects_options_it_does_not_declare() -> None:
    with pytest.raises(TypeError, match="test_judge_metric has no option 'colour'"):
        _Echo().compute(predictions=["a"], colour="red")
    with pytest.raises(TypeError, match="has no option 'judge' \\(did you mean 'judges'\\?\\)"):
        _Echo().compute(predictions=["a"], judge="mine")


def test_judge_metric_lets_programming_errors_raise() -> None:
    with pytest.raises(TypeError):
        _Echo().compute(predictions=["a"], scale=None)  # len * None: a bug, not a fault


def test_first_failure_and_judge_fault() -> None:
    assert first_failure(Outcome(1), None) is None
    failed = first_failure(Outcome(1), Outcome(error="verdicts: timed out"))
    assert failed == SampleResult(None, {"error": "verdicts: timed out"}, "verdicts: timed out")
