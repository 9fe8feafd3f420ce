"""The shipped examples run: ``examples/test_gates_example.py`` (docs/GATES.md) passes under
pytest in its own process, as a user's CI would run it, and its gates bite when raised; ``make
run`` on the sample selects every metric."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "test_gates_example.py"


def _pytest(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(path.parent), str(path)], cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)})


def test_gates_example_passes_and_fails_when_its_gates_are_raised(tmp_path: Path) -> None:
    done = _pytest(EXAMPLE)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr
    raised = tmp_path / "test_raised_gates.py"
    text = EXAMPLE.read_text(encoding="utf-8")
    for old, new in (('"rouge.rougeL>=0.3"', '"rouge.rougeL>=0.9"'),
                     ('"bleu>=0.15"', '"bleu>=0.9"'),
                     ("Path(__file__).resolve().parents[1]", f"Path({str(REPO)!r})")):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    raised.write_text(text, encoding="utf-8")
    failed = _pytest(raised)
    assert failed.returncode == 1 and "2 failed" in failed.stdout, failed.stdout
    assert "AssertionError: 1 of 2 gates failed:" in failed.stdout
    assert "rouge.rougeL>=0.9 FAILED (lower bound" in failed.stdout
    assert "bleu>=0.9 FAILED (mean" in failed.stdout


def test_ci_recipe_is_the_documented_one_and_its_commands_parse() -> None:
    """examples/ci/judge-metrics-gates.yml: the YAML of docs/GATES.md, valid YAML, its cache
    restored by the prefix of the key it is saved under, and its judge-metrics commands
    accepted by the real parser with gates that parse."""
    import shlex

    import yaml

    from shared.analysis.gates import parse_gates
    from shared.cli.main import build_parser

    text = (REPO / "examples" / "ci" / "judge-metrics-gates.yml").read_text(encoding="utf-8")
    assert f"```yaml\n{text}```" in (REPO / "docs" / "GATES.md").read_text(encoding="utf-8")
    job = yaml.safe_load(text)["jobs"]["gates"]
    steps = {step.get("name"): step for step in job["steps"]}
    restore = steps["Restore the judge call cache"]["with"]
    save = steps["Save the judge call cache"]["with"]
    assert restore["key"] == save["key"] and restore["path"] == save["path"] == ".judge-cache"
    assert save["key"].startswith(restore["restore-keys"].splitlines()[0])
    assert job["env"]["JUDGE_METRICS_CACHE_DIR"].endswith("/" + save["path"])
    assert steps["Save the judge call cache"]["if"] == "always()"
    uploaded = steps["Upload the reports"]["with"]["path"].split()
    commands = []
    for step in job["steps"]:
        script = step.get("run", "").replace("\\\n", " ")
        for line in script.splitlines():
            words = shlex.split(line.replace('"$SAMPLE"', job["env"]["SAMPLE"]).replace(
                '"$BASELINE"', job["env"]["BASELINE"]))
            if words[:1] == [".venv/bin/judge-metrics"]:
                commands.append(build_parser().parse_args(words[1:]))
    score, compare = commands
    assert score.command == "score" and compare.command == "compare"
    assert [g.text for g in parse_gates(score.gate)] == [
        "faithfulness>=0.8", "answer_relevance>=0.7", "rouge.rougeL>=0.3"]
    assert {score.html, score.junit_xml, compare.html, compare.junit_xml} <= set(uploaded)
    assert compare.fail_on_regression and compare.b == score.out


def _make_run_words() -> list[str]:
    """The words of the Makefile's ``run`` recipe: ``$(PY) -m judge_metrics ...``, continuation
    lines joined."""
    import shlex

    lines = (REPO / "Makefile").read_text(encoding="utf-8").splitlines()
    start = lines.index("run: $(RUNTIME_STAMP)") + 1
    recipe = []
    for line in lines[start:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip().removesuffix("\\"))
    words = shlex.split(" ".join(recipe))
    assert words[:3] == ["$(PY)", "-m", "judge_metrics"], words
    return words[3:]


def test_make_run_selects_every_metric_on_the_sample() -> None:
    """``make run``'s command, read by the real parser: ``--metric all`` with its ``--option``s
    selects all the metrics on the sample's columns, g_eval (criteria given) and pairwise (a
    baseline per row) included, and skips none; no judge is called."""
    import json

    from shared.cli.common import parse_metric_options
    from shared.cli.main import build_parser
    from shared.kit.registry import METRICS, NAMES
    from shared.runs.batch import select_metrics
    from shared.runs.records import JSON_COLUMNS

    args = build_parser().parse_args(_make_run_words())
    assert args.command == "score" and args.metric == ["all"]
    assert args.input == "examples/rag_sample.jsonl"
    options = parse_metric_options(args.option, args.metric)
    assert set(options) == {"g_eval"} and options["g_eval"]["criteria"].strip()
    rows = [json.loads(line) for line in (REPO / args.input).open(encoding="utf-8")]
    columns = set().union(*rows)
    assert all(set(row) == columns for row in rows), "every row has every column"
    selected, skipped = select_metrics(args.metric, columns, options)
    # the metrics over conversations and tool calls need their columns, which a RAG sample has
    # not: skipped, saying which; every other metric runs, and they do once their columns are
    # there
    over_calls = {name for name in NAMES if set(METRICS[name].columns.values()) & set(JSON_COLUMNS)}
    assert over_calls == {"tool_call_correctness", "trajectory_match", "task_completion",
                          "conversation_completeness", "knowledge_retention"}
    assert not over_calls & columns
    assert skipped == {name: "needs column(s) " + ", ".join(METRICS[name].columns.values())
                       for name in over_calls}
    assert selected == [n for n in NAMES if n not in over_calls]
    folders = {p.parent.name for p in (REPO / "metrics").glob("*/*.py") if p.stem == p.parent.name}
    assert set(NAMES) == folders
    assert select_metrics(args.metric, columns | set(JSON_COLUMNS), options) == (list(NAMES), {})
    # without the criteria or the baselines, g_eval and pairwise are skipped: the test bites
    assert set(select_metrics(args.metric, columns, {})[1]) == {"g_eval", *over_calls}
    assert set(select_metrics(args.metric, columns - {"baseline_prediction"}, options)[1]) == {
        "pairwise", *over_calls}
    for row in rows:
        baseline = row["baseline_prediction"]
        assert isinstance(baseline, str) and baseline.strip(), row["id"]
        assert baseline != row["prediction"], f"{row['id']}: a baseline is another answer"


def test_agent_sample_selects_the_metrics_over_conversations(tmp_path: Path) -> None:
    """``examples/agent_sample.jsonl`` (docs/CONVERSATIONS.md): ``--metric all`` selects exactly
    the four metrics over conversations and tool calls; through the CLI, tool_call_correctness
    gives each row the verdict the sample was written to show (the Rome question answered with
    Paris's weather is the one wrong call; the booking whose tool failed made the right call)."""
    import json

    from shared.kit.registry import METRICS, NAMES
    from shared.runs.batch import select_metrics
    from shared.runs.records import JSON_COLUMNS

    sample = REPO / "examples" / "agent_sample.jsonl"
    rows = [json.loads(line) for line in sample.open(encoding="utf-8")]
    selected, _ = select_metrics(["all"], set().union(*rows), {})
    # every metric over conversations and tool calls but trajectory_match, whose reference
    # trajectories the sample has not (examples/trajectory_trials.jsonl has them)
    assert set(selected) == {name for name in NAMES
                             if set(METRICS[name].columns.values()) & set(JSON_COLUMNS)
                             } - {"trajectory_match"}
    out = tmp_path / "agent.jsonl"
    done = subprocess.run([sys.executable, "-m", "judge_metrics", "score", str(sample), "--metric",
                           "tool_call_correctness", "--out", str(out), "--quiet"], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    scored = {r["id"]: r["tool_call_correctness"]
              for r in map(json.loads, out.open(encoding="utf-8"))}
    assert scored == {"weather-ok": 1.0, "weather-wrong-city": 0.0, "booking-after-error": 1.0,
                      "booking-forgets": 1.0}
