"""The inspect_ai and MLflow scorers (shared/integrations/): each sample's value equals the
metric's own compute() per-sample score on the same texts, for a string metric (accuracy) and a
judge metric (l3score, the embedded judge); an unmeasured sample is unscored / an error, never 0;
`inspect score LOG --scorer judge_metrics/<metric> -S option=value` through inspect's real CLI on
a log of a real `inspect eval` run with mockllm; mlflow.genai.evaluate on a local SQLite store.

inspect_ai and MLflow live in their own venv (`make test` builds .venv-integrations and runs
this file there; tests/conftest.py leaves it out of a venv without them)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, load_metrics

from shared.kit.registry import METRICS

ANSWERS = ["Paris", "It is Bonn", "Jupyter"]  # what mockllm answers (a fuzzy match last)


def _example():
    """examples/lighteval_task.py, the LightEval task file (its samples and its scorer)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("lighteval_task",
                                                  REPO / "examples" / "lighteval_task.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXAMPLE = _example()
QUESTIONS = [r["question"] for r in EXAMPLE.RECORDS]
TARGETS = [r["answer"] for r in EXAMPLE.RECORDS]


def _output(text: str):
    from inspect_ai.model import ModelOutput, ModelUsage

    output = ModelOutput.from_content("mockllm/model", text)
    # mockllm would count tokens with a tiktoken file it cannot download: give the usage
    output.usage = ModelUsage(input_tokens=5, output_tokens=2, total_tokens=7)
    return output


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real inspect eval run (mockllm answering ANSWERS) of the LightEval example's samples,
    scored by its scorer; its log file."""
    from inspect_ai import Task, eval
    from inspect_ai.model import get_model
    from inspect_ai.solver import generate

    folder = tmp_path_factory.mktemp("inspect-logs")
    task = Task(dataset=[EXAMPLE.record_to_sample(r) for r in EXAMPLE.RECORDS],
                solver=generate(), scorer=EXAMPLE.SCORER, name="capitals")
    model = get_model("mockllm/model", custom_outputs=[_output(a) for a in ANSWERS])
    [log] = eval(task, model=model, log_dir=str(folder), display="none", max_samples=1)
    assert log.status == "success"
    return Path(log.location)


def _by_input(log) -> dict[str, object]:
    return {sample.input: sample for sample in log.samples}


def _accuracy(fuzzy_match: bool) -> list[float]:
    return load_metrics(__file__, ["accuracy"])["accuracy"].compute(
        predictions=ANSWERS, references=TARGETS, fuzzy_match=fuzzy_match)["scores"]


def test_the_lighteval_example_scores_an_inspect_eval_as_compute(eval_log: Path) -> None:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(eval_log))
    samples = _by_input(log)
    assert [samples[q].scores["accuracy"].value for q in QUESTIONS] == _accuracy(True)
    assert log.results.scores[0].metrics["stderr"].value > 0


def test_inspect_score_cli_matches_compute(eval_log: Path, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    inspect = Path(sys.executable).with_name("inspect")
    scored = tmp_path / "scored.eval"
    done = subprocess.run(
        [str(inspect), "score", str(eval_log), "--scorer", "judge_metrics/accuracy",
         "-S", "fuzzy_match=false", "--action", "overwrite", "--output-file", str(scored),
         "--display", "none"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    log = read_eval_log(str(scored))
    reference = _accuracy(False)
    samples = _by_input(log)
    values = [samples[q].scores["accuracy"].value for q in QUESTIONS]
    assert values == reference and reference != _accuracy(True)  # rescored, -S obeyed
    assert 0 < sum(reference) < len(reference)  # a right and a wrong answer
    [scores] = log.results.scores
    assert scores.name == "accuracy" and scores.scorer == "accuracy"
    assert scores.metrics["mean"].value == pytest.approx(sum(reference) / len(reference))
    assert scores.params == {"fuzzy_match": False}


def test_judge_metric_in_inspect_and_mlflow_matches_compute(eval_log: Path,
                                                            cache_dir: str,
                                                            tmp_path: Path) -> None:
    import mlflow
    from inspect_ai import score
    from inspect_ai.log import read_eval_log

    from shared.integrations import inspect_scorer, mlflow_scorer

    rows = 2  # the embedded judge on a shared machine: two rows
    options = {"cache_dir": cache_dir, "use_cache": False}
    reference = load_metrics(__file__, ["l3score"])["l3score"].compute(
        questions=QUESTIONS[:rows], predictions=ANSWERS[:rows], references=TARGETS[:rows],
        show_progress=False, **options)["scores"]
    log = read_eval_log(str(eval_log))
    log.samples = log.samples[:rows]
    scored = score(log, inspect_scorer("l3score", **options), display="none")
    samples = _by_input(scored)
    inspected = [samples[q].scores["l3score"].value for q in QUESTIONS[:rows]]
    assert inspected == pytest.approx(reference, abs=1e-6)
    assert samples[QUESTIONS[0]].scores["l3score"].metadata["score_key"] == (
        METRICS["l3score"].headline[0])

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    data = [{"inputs": {"question": q}, "outputs": a, "expectations": {"expected_response": t}}
            for q, a, t in zip(QUESTIONS[:rows], ANSWERS[:rows], TARGETS[:rows], strict=True)]
    result = mlflow.genai.evaluate(data=data, scorers=[mlflow_scorer("l3score", **options)])
    frame = result.result_df
    by_question = {str(r): v for r, v in zip(frame["request"], frame["l3score/value"],
                                             strict=True)}
    values = [next(v for r, v in by_question.items() if q in r) for q in QUESTIONS[:rows]]
    assert values == pytest.approx(reference, abs=1e-6)


def test_mlflow_string_metric_matches_compute(tmp_path: Path) -> None:
    import mlflow

    from shared.integrations import mlflow_scorer

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    data = [{"inputs": {"question": q}, "outputs": a, "expectations": {"expected_response": t}}
            for q, a, t in zip(QUESTIONS, ANSWERS, TARGETS, strict=True)]
    result = mlflow.genai.evaluate(data=data, scorers=[mlflow_scorer("accuracy")])
    reference = load_metrics(__file__, ["accuracy"])["accuracy"].compute(
        predictions=ANSWERS, references=TARGETS)["scores"]
    frame = result.result_df
    values = [next(v for r, v in zip(frame["request"], frame["accuracy/value"], strict=True)
                   if q in str(r)) for q in QUESTIONS]
    assert values == reference
    assert result.metrics["accuracy/mean"] == pytest.approx(sum(reference) / 3)


def test_unmeasured_is_unscored_or_an_error_never_zero() -> None:
    """A judge that cannot be reached leaves each row unmeasured: inspect's Score is unscored
    (NaN, excluded from mean()), MLflow's Feedback carries an error and no value."""
    import asyncio

    from inspect_ai.model import ChatMessageUser, ModelName
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState

    from shared.integrations import inspect_scorer, mlflow_scorer

    options = {"provider": "openai-compatible", "base_url": "http://127.0.0.1:9/v1",
               "model": "m", "api_key": "x", "max_retries": 0, "timeout": 2.0,
               "use_cache": False}
    state = TaskState(ModelName("mockllm/model"), "s", 1, "Capital of France?",
                      [ChatMessageUser(content="Capital of France?")], output=_output("Paris"))
    result = asyncio.run(inspect_scorer("l3score", **options)(state, Target("Paris")))
    assert math.isnan(result.value) and "127.0.0.1:9" in result.reason
    feedback = mlflow_scorer("l3score", **options)(
        inputs={"question": "Capital of France?"}, outputs="Paris",
        expectations={"expected_response": "Paris"})
    assert feedback.value is None and feedback.error.error_code == "UNMEASURED"


def test_a_bad_option_or_column_is_refused_when_the_scorer_is_made() -> None:
    from shared import UserInputError
    from shared.integrations import inspect_scorer, mlflow_scorer

    with pytest.raises(UserInputError, match="no option"):
        inspect_scorer("accuracy", fuzzy=True)
    with pytest.raises(UserInputError, match="no input 'documents'"):
        mlflow_scorer("faithfulness", columns={"documents": "docs"})
    with pytest.raises(UserInputError, match="no such score"):
        inspect_scorer("rouge", score_key="rouge9")


def test_the_entry_point_names_every_metric() -> None:
    from importlib.metadata import entry_points

    from shared.kit.registry import available

    [point] = entry_points(group="inspect_ai", name="judge_metrics")
    module = point.load()
    assert sorted(module.SCORERS) == sorted(available())
    assert REPO.joinpath("pyproject.toml").read_text().count(point.value) == 1


def test_a_conversation_metric_reads_state_messages() -> None:
    """tool_call_correctness in inspect: the calls made come from ``state.messages`` (inspect's
    own ChatMessage objects, converted by shared.kit.conversations.from_inspect) and the
    expected calls from the metadata; the value equals compute()'s on the same conversation."""
    import asyncio
    import json

    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser, ModelName
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState
    from inspect_ai.tool import ToolCall

    from shared.integrations import inspect_scorer
    from shared.kit.conversations import from_inspect

    call = ToolCall(id="c1", function="get_weather", arguments={"city": "Paris"})
    messages = [ChatMessageUser(content="Weather in Paris?"),
                ChatMessageAssistant(content="", tool_calls=[call]),
                ChatMessageTool(content="sunny", tool_call_id="c1", function="get_weather"),
                ChatMessageAssistant(content="Sunny.")]
    metric = load_metrics(__file__, ["tool_call_correctness"])["tool_call_correctness"]
    scorer = inspect_scorer("tool_call_correctness")
    for expected in ([{"name": "get_weather", "arguments": {"city": "Paris"}}],
                     [{"name": "get_weather", "arguments": {"city": "Rome"}}]):
        state = TaskState(ModelName("mockllm/model"), "s", 1, "Weather in Paris?", messages,
                          output=_output("Sunny."), metadata={"expected_tool_calls": expected})
        result = asyncio.run(scorer(state, Target("")))
        [want] = metric.compute(messages=[json.dumps(from_inspect(messages))],
                                expected_tool_calls=[json.dumps(expected)])["scores"]
        assert result.value == want
    assert want == 0.0  # the second expectation (Rome) is not what was called: the test bites


def test_entry_points_resolve_from_the_installed_wheel() -> None:
    """`make test` installs this package's wheel in this venv: inspect's and pytest's entry points
    load judge_metrics from site-packages, not from the checkout's sources."""
    from importlib.metadata import entry_points

    import judge_metrics

    package = Path(judge_metrics.__file__).resolve().parent
    assert "site-packages" in package.parts and package != REPO / "shared"
    registry = entry_points(group="inspect_ai")["judge_metrics"].load()
    assert Path(registry.__file__).resolve().parent.parent == package
    assert set(registry.SCORERS) == set(judge_metrics.metric_names())
    plugin = entry_points(group="pytest11")["judge_metrics"].load()
    assert Path(plugin.__file__).resolve().parent.parent == package


def _trajectory(city: str) -> list[dict]:
    return [{"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "get_weather", "arguments": f'{{"city": "{city}"}}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."}]


def test_trajectory_match_in_inspect_and_mlflow_matches_compute(tmp_path: Path) -> None:
    """trajectory_match in inspect: the agent's trajectory from ``state.messages``, the
    reference from the metadata; in MLflow: both from the row's inputs and expectations; each
    value equals compute()'s, with the options given to the scorer."""
    import asyncio
    import json

    import mlflow
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser, ModelName
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState
    from inspect_ai.tool import ToolCall

    from shared.integrations import inspect_scorer, mlflow_scorer
    from shared.kit.conversations import from_inspect

    messages = [ChatMessageUser(content="Weather in Paris?"),
                ChatMessageAssistant(content="", tool_calls=[
                    ToolCall(id="c1", function="get_weather", arguments={"city": "Paris"})]),
                ChatMessageTool(content="sunny", tool_call_id="c1", function="get_weather"),
                ChatMessageAssistant(content="Sunny.")]
    metric = load_metrics(__file__, ["trajectory_match"])["trajectory_match"]
    scorer = inspect_scorer("trajectory_match", trajectory_mode="superset")
    wants = []
    for city in ("Paris", "Rome"):
        state = TaskState(ModelName("mockllm/model"), "s", 1, "Weather in Paris?", messages,
                          output=_output("Sunny."),
                          metadata={"reference_messages": _trajectory(city)})
        result = asyncio.run(scorer(state, Target("")))
        [want] = metric.compute(messages=[json.dumps(from_inspect(messages))],
                                reference_messages=[_trajectory(city)],
                                trajectory_mode="superset")["scores"]
        assert result.value == want
        wants.append(want)
    assert wants == [1.0, 0.0]  # Rome is not what was called: the test bites

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    data = [{"inputs": {"messages": _trajectory("Paris"), "question": city},
             "outputs": "Sunny.", "expectations": {"reference_messages": _trajectory(city)}}
            for city in ("Paris", "Rome")]
    evaluated = mlflow.genai.evaluate(data=data, scorers=[mlflow_scorer("trajectory_match")])
    frame = evaluated.result_df
    values = {city: next(v for r, v in zip(frame["request"], frame["trajectory_match/value"],
                                           strict=True) if city in str(r))
              for city in ("Paris", "Rome")}
    assert values == {"Paris": 1.0, "Rome": 0.0}
