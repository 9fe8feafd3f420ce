"""The inspect_ai and MLflow scorers under a hostile tester: one bad sample (no target, an empty
completion, a string where a list belongs, a tool call inspect could not parse) is left
unscored with its reason and the rest scored, through inspect's own ``score`` and its CLI; an
option typo is our one-line error on inspect's command line; a key given to the scorer (in
Python or as ``-S api_key=``) is nowhere in inspect's log, nor one given to an MLflow scorer in
anything MLflow records.

Runs in .venv-integrations with test_integrations_scorers.py (tests/conftest.py leaves both out
of a venv without inspect_ai and MLflow)."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

KEY = "sk-inspectlog-0123456789abcdefQRS"
DEAD_JUDGE = {"provider": "openai-compatible", "base_url": "http://127.0.0.1:9/v1", "model": "m",
              "max_retries": 0, "timeout": 2.0, "use_cache": False}


def _output(text: str):
    from inspect_ai.model import ModelOutput, ModelUsage

    output = ModelOutput.from_content("mockllm/model", text)
    output.usage = ModelUsage(input_tokens=5, output_tokens=2, total_tokens=7)
    return output


def _state(answer: str, sample_id: object = 1, messages: list | None = None,
           metadata: dict | None = None):
    from inspect_ai.model import ChatMessageUser, ModelName
    from inspect_ai.solver import TaskState

    return TaskState(ModelName("mockllm/model"), sample_id, 1, "Capital of France?",
                     messages or [ChatMessageUser(content="Capital of France?")],
                     output=_output(answer), metadata=metadata or {})


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real inspect eval (mockllm) of three samples, the second without a target."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    samples = [Sample(input="Capital of France?", target="Paris", id="a"),
               Sample(input="Capital of Italy?", id="b"),  # no target
               Sample(input="Capital of Spain?", target="Madrid", id="c")]
    task = Task(dataset=samples, solver=generate(), scorer=match(), name="capitals")
    model = get_model("mockllm/model", custom_outputs=[_output(a) for a in
                                                       ("Paris", "Rome", "Lisbon")])
    [log] = eval(task, model=model, log_dir=str(tmp_path_factory.mktemp("logs")),
                 display="none", max_samples=1)
    assert log.status == "success"
    return Path(log.location)


def _inspect(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    inspect = Path(sys.executable).with_name("inspect")
    return subprocess.run([str(inspect), *args, "--display", "none"], capture_output=True,
                          text=True, timeout=600, cwd=cwd,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _log_text(path: Path) -> str:
    """Every member of an .eval log (a zip of JSON files), as text."""
    with zipfile.ZipFile(path) as archive:
        return "\n".join(archive.read(name).decode("utf-8", "replace")
                         for name in archive.namelist())


def test_a_sample_without_a_target_is_unscored_and_the_rest_scored(eval_log: Path,
                                                                   tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    scored = tmp_path / "scored.eval"
    done = _inspect("score", str(eval_log), "--scorer", "judge_metrics/accuracy", "--action",
                    "overwrite", "--output-file", str(scored), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    samples = {s.id: s.scores["accuracy"] for s in read_eval_log(str(scored)).samples}
    assert samples["a"].value == 1.0 and samples["c"].value == 0.0
    assert math.isnan(samples["b"].value)
    assert samples["b"].explanation == "sample b has no target (accuracy reads its reference " \
                                       "from it)"


def test_bad_samples_are_unscored_with_their_reason() -> None:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser
    from inspect_ai.scorer import Target
    from inspect_ai.tool import ToolCall

    from shared.integrations import inspect_scorer

    l3score = inspect_scorer("l3score", **DEAD_JUDGE)
    empty = asyncio.run(l3score(_state("", sample_id=7), Target("Paris")))
    assert math.isnan(empty.value) and empty.explanation.startswith("sample 7: ")
    assert "empty" in empty.explanation
    faithfulness = inspect_scorer("faithfulness", **DEAD_JUDGE)
    shaped = asyncio.run(faithfulness(_state("Paris", sample_id=8,
                                             metadata={"contexts": {"a": 1}}), Target("Paris")))
    assert math.isnan(shaped.value) and shaped.explanation.startswith("sample 8: ")
    # a call inspect could not parse keeps {} as its arguments: refused, never a pass
    call = ToolCall(id="c1", function="get_weather", arguments={},
                    parse_error="Expecting value: line 1 column 9 (char 8)")
    messages = [ChatMessageUser(content="Weather?"),
                ChatMessageAssistant(content="", tool_calls=[call])]
    tools = inspect_scorer("tool_call_correctness")
    parsed = asyncio.run(tools(_state("", sample_id=9, messages=messages, metadata={
        "expected_tool_calls": [{"get_weather": {"city": ["", "Paris"]}}]}), Target("")))
    assert math.isnan(parsed.value) and "could not be parsed" in parsed.explanation
    # a text where the list of expected calls belongs
    text = asyncio.run(tools(_state("", sample_id=10, messages=messages[:1], metadata={
        "expected_tool_calls": "get_weather"}), Target("")))
    assert math.isnan(text.value) and text.explanation.startswith("sample 10: ")


def test_an_option_typo_is_our_one_line_error(eval_log: Path, tmp_path: Path) -> None:
    done = _inspect("score", str(eval_log), "--scorer", "judge_metrics/accuracy", "-S",
                    "fuzzy=true", "--action", "overwrite", "--output-file",
                    str(tmp_path / "x.eval"), cwd=tmp_path)
    assert done.returncode != 0
    said = " ".join((done.stdout + done.stderr).split())  # inspect prints it wrapped
    assert "judge-metrics: accuracy has no option 'fuzzy' (did you mean 'fuzzy_match'?)" in said
    assert "couldn't be loaded" not in said and "Traceback" not in said


def test_no_key_in_the_inspect_log(eval_log: Path, tmp_path: Path) -> None:
    from inspect_ai import score
    from inspect_ai.log import read_eval_log, write_eval_log

    from shared.integrations import inspect_scorer

    options = [f"{k}={v}" for k, v in DEAD_JUDGE.items()]
    scored = tmp_path / "cli.eval"
    done = _inspect("score", str(eval_log), "--scorer", "judge_metrics/l3score", "-S",
                    f"api_key={KEY}", *[a for o in options for a in ("-S", o)], "--action",
                    "overwrite", "--output-file", str(scored), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    text = _log_text(scored)
    assert KEY not in text and KEY not in done.stdout + done.stderr
    log = read_eval_log(str(scored))
    assert log.results.scores[0].params["api_key"] == "***"
    assert log.results.scores[0].params["model"] == "m"  # the rest as given

    python = score(read_eval_log(str(eval_log)), inspect_scorer(
        "l3score", api_key=KEY, judges=[{"provider": "openai-compatible", "api_key": KEY,
                                         "base_url": DEAD_JUDGE["base_url"], "model": model}
                                        for model in ("m", "n")],
        **{k: v for k, v in DEAD_JUDGE.items() if k not in ("base_url", "model", "provider")}),
        display="none")
    written = tmp_path / "python.eval"
    write_eval_log(python, str(written))
    assert KEY not in _log_text(written) and KEY not in json.dumps(python.model_dump(),
                                                                   default=str)


def test_no_key_in_what_mlflow_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mlflow

    from shared.integrations import mlflow_scorer

    monkeypatch.chdir(tmp_path)  # MLflow's artifacts land beside the store
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    data = [{"inputs": {"question": "Capital of France?"}, "outputs": "Paris",
             "expectations": {"expected_response": "Paris"}}]
    result = mlflow.genai.evaluate(data=data, scorers=[mlflow_scorer("l3score", api_key=KEY,
                                                                     **DEAD_JUDGE)])
    assert KEY not in result.result_df.to_json(default_handler=str)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
