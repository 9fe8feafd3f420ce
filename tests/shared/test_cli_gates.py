"""Gates for CI through the real CLI: ``score --gate``, ``compare --fail-on-regression``,
``--junit-xml``, exit codes 0/1/2 (docs/GATES.md). The main cases run
``judge-metrics`` in a subprocess; their variants call the same ``main`` in this process
(each new process pays evaluate's import). Non-judge metrics keep the runs fast; compare reads
scored files written here. Expected values come from the project's own bootstrap
(``shared.kit.stats``) on the written scores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shared.cli.main import main
from shared.kit import stats

REPO = Path(__file__).resolve().parents[2]
PREDICTIONS = ["Paris", "London", "Tokyo", "Rome", "Madrid", "Oslo", "Lima", "Cairo", "Bern",
               "Vienna"]
REFERENCES = ["Paris", "London", "Berlin", "Rome", "Lisbon", "Oslo", "Quito", "Cairo", "Bern",
              "Prague"]


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "judge_metrics", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


class Done:
    """What a run of ``main`` in this process did, as ``subprocess.run`` reports it."""

    def __init__(self, capsys: pytest.CaptureFixture, *args: str) -> None:
        self.returncode = main(list(args))
        captured = capsys.readouterr()
        self.stdout, self.stderr = captured.out, captured.err


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def rows(tmp_path: Path) -> Path:
    return _write(tmp_path / "in.jsonl", [
        {"id": i, "question": f"capital {i}?", "prediction": p, "reference": r}
        for i, (p, r) in enumerate(zip(PREDICTIONS, REFERENCES, strict=True))])


def _junit(path: Path) -> list[tuple[str, str | None]]:
    """(testcase name, failure message or None) per testcase."""
    suite = ET.parse(path).getroot().find("testsuite")
    return [(case.get("name"), None if case.find("failure") is None
             else case.find("failure").get("message")) for case in suite.iter("testcase")]


def test_failing_gate_exits_1_and_writes_every_output(rows: Path, tmp_path: Path) -> None:
    out, junit, html = tmp_path / "scored.jsonl", tmp_path / "gates.xml", tmp_path / "run.html"
    done = _cli("score", str(rows), "-m", "accuracy", "-m", "rouge", "-o", str(out), "-q",
                "--gate", "accuracy>=0.9", "--gate", "rouge.rougeL>=0.2", "--gate-on", "lower",
                "--junit-xml", str(junit), "--html", str(html))
    assert done.returncode == 1, done.stderr
    scored = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(scored) == 10
    accuracy = np.asarray([r["accuracy"] for r in scored], dtype=float)
    low, high = stats.t_wilson_interval(accuracy)
    table = {line.split()[0]: line.split() for line in done.stdout.splitlines() if ">=" in line}
    assert table["accuracy>=0.9"] == ["accuracy>=0.9", f"{accuracy.mean():.4f}",
                                      f"[{low:.4f},", f"{high:.4f}]", "lower", "bound",
                                      f"{low:.4f}", "0/10", "(0.0%)", "FAIL"]
    assert table["rouge.rougeL>=0.2"][-1] == "pass"
    cases = _junit(junit)
    assert [name for name, _ in cases] == ["accuracy>=0.9", "rouge.rougeL>=0.2"]
    assert cases[0][1].startswith(f"accuracy>=0.9 FAILED (lower bound {low:.4f} < 0.9)")
    assert cases[1][1] is None
    assert "gate accuracy>=0.9 FAILED" in done.stderr
    page = html.read_text(encoding="utf-8")
    assert "1 of 2 failed" in page and "<td>accuracy&gt;=0.9</td>" in page


def test_holding_gates_exit_0(rows: Path, tmp_path: Path) -> None:
    out, junit = tmp_path / "scored.jsonl", tmp_path / "gates.xml"
    done = _cli("score", str(rows), "-m", "bleu", "-m", "accuracy", "-o", str(out), "-q",
                "--gate", "accuracy>=0.5", "--gate", "bleu<=1", "--max-unmeasured", "0",
                "--junit-xml", str(junit))
    assert done.returncode == 0, done.stderr
    assert [failure for _, failure in _junit(junit)] == [None, None]
    assert out.is_file()


@pytest.mark.parametrize("arguments, message", [
    (["--gate", "faithfulness>=abc"], "X must be a finite number"),
    (["--gate", ">=0.5"], "expected METRIC[.KEY]>=X"),
    (["--gate", "rouge.rougeX>=0.3"], "rouge has no score 'rougeX'"),
    (["--gate", "faithfulness>=0.5"], "this run does not compute faithfulness"),
    (["--gate", "accuracy>=0.5", "--max-unmeasured", "2"], "fraction in [0, 1]"),
    (["--max-unmeasured", "0.1"], "--max-unmeasured applies to gates"),
    (["--junit-xml", "x.xml"], "--junit-xml applies to gates"),
    (["--gate", "accuracy>=0.5", "--dry-run"], "a dry run computes none"),
])
def test_score_bad_gate_input_exits_2_before_scoring(
        rows: Path, tmp_path: Path, capsys: pytest.CaptureFixture, arguments: list[str],
        message: str) -> None:
    out = tmp_path / "scored.jsonl"
    done = Done(capsys, "score", str(rows), "-m", "accuracy", "-o", str(out), "-q", *arguments)
    assert done.returncode == 2 and message in done.stderr and not done.stdout
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not out.exists()


def test_malformed_gate_exits_2_in_one_line(rows: Path, tmp_path: Path) -> None:
    done = _cli("score", str(rows), "-m", "accuracy", "-o", str(tmp_path / "o.jsonl"),
                "--gate", "faithfulness>0.8")
    assert done.returncode == 2 and not (tmp_path / "o.jsonl").exists()
    assert done.stderr.splitlines() == [
        "judge-metrics: error: gate 'faithfulness>0.8': expected METRIC[.KEY]>=X or "
        "METRIC[.KEY]<=X, e.g. faithfulness>=0.8 or rouge.rougeL>=0.3"]


def test_gate_on_a_metric_all_skips_exits_2_before_scoring(
        rows: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    done = Done(capsys, "score", str(rows), "-m", "all", "-o", str(tmp_path / "o.jsonl"), "-q",
                "--gate", "faithfulness>=0.5")
    assert done.returncode == 2 and "needs column(s) contexts" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not done.stdout


def _scored(path: Path, column: str, scores: list[float | None]) -> Path:
    return _write(path, [{"id": f"q{i}", "question": f"question {i}", column: s}
                         for i, s in enumerate(scores)])


def _compare(tmp_path: Path, column: str, a: list, b: list, *flags: str,
             capsys: pytest.CaptureFixture | None = None) -> tuple[Any, list | None]:
    """compare A B (scores of ``column``) with --junit-xml: in a subprocess, or in this process
    with ``capsys``; returns the run and the JUnit testcases."""
    junit = tmp_path / "compare.xml"
    junit.unlink(missing_ok=True)
    args = ("compare", str(_scored(tmp_path / "a.jsonl", column, a)),
            str(_scored(tmp_path / "b.jsonl", column, b)), "--junit-xml", str(junit),
            "--resamples", "500", *flags)
    done = _cli(*args) if capsys is None else Done(capsys, *args)
    return done, _junit(junit) if junit.exists() else None


def test_compare_significant_regression_fails(tmp_path: Path,
                                              capsys: pytest.CaptureFixture) -> None:
    a, b = [1.0] * 50, [0.0 if i % 2 else 1.0 for i in range(50)]
    done, cases = _compare(tmp_path, "accuracy", a, b, "--fail-on-regression", "--json",
                           str(tmp_path / "r.json"))
    assert done.returncode == 1, done.stderr
    assert "REGRESSION accuracy: B is worse than A" in done.stdout
    assert len(cases) == 1 and cases[0][0] == "accuracy" and "p (Holm)" in cases[0][1]
    # --json carries the decision with its numbers, as the table and the JUnit file do
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    (check,) = report["regressions"]
    (column,) = report["columns"]
    assert check["column"] == "accuracy" and check["regressed"] and check["worse"]
    assert check["delta"] == column["delta"] == pytest.approx(-0.5)
    assert check["p_holm"] == column["p_holm"] < check["alpha"] == 0.05
    # without --fail-on-regression the regression is reported, and the exit status stays 0
    done, cases = _compare(tmp_path, "accuracy", a, b, capsys=capsys)
    assert done.returncode == 0 and "REGRESSION accuracy" in done.stdout and cases[0][1]
    # a regression smaller than --min-delta does not fail
    done, cases = _compare(tmp_path, "accuracy", a, b, "--fail-on-regression", "--min-delta",
                           "0.6", capsys=capsys)
    assert done.returncode == 0 and "): none" in done.stdout and cases[0][1] is None


def test_compare_noise_and_improvement_pass(tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    rng = np.random.default_rng(3)
    base = rng.uniform(0, 1, 60).round(3)
    noise = (base + rng.normal(0, 0.02, 60)).clip(0, 1).round(3)
    done, cases = _compare(tmp_path, "faithfulness", base.tolist(), noise.tolist(),
                           "--fail-on-regression")
    assert done.returncode == 0 and cases == [("faithfulness", None)], done.stdout
    done, cases = _compare(tmp_path, "faithfulness", (base * 0.3).tolist(), base.tolist(),
                           "--fail-on-regression", capsys=capsys)
    assert done.returncode == 0 and cases == [("faithfulness", None)], done.stdout


def test_compare_hallucination_is_lower_is_better(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    low = [round(0.05 * (i % 4), 2) for i in range(40)]
    high = [v + 0.5 for v in low]
    done, cases = _compare(tmp_path, "hallucination", low, high, "--fail-on-regression")
    assert done.returncode == 1 and "hallucination (lower is better)" in cases[0][1]
    done, cases = _compare(tmp_path, "hallucination", high, low, "--fail-on-regression",
                           capsys=capsys)
    assert done.returncode == 0 and cases == [("hallucination", None)]


def test_compare_junit_has_one_testcase_per_score(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    a = [{"id": i, "accuracy": 1.0, "hallucination": 0.1, "rouge1": 0.5} for i in range(30)]
    b = [{"id": i, "accuracy": 0.0, "hallucination": 0.1, "rouge1": 0.6} for i in range(30)]
    junit, html = tmp_path / "c.xml", tmp_path / "c.html"
    done = Done(capsys, "compare", str(_write(tmp_path / "a.jsonl", a)),
                str(_write(tmp_path / "b.jsonl", b)), "--fail-on-regression", "--junit-xml",
                str(junit), "--html", str(html), "--resamples", "200")
    assert done.returncode == 1
    assert [(n, f is not None) for n, f in _junit(junit)] == [
        ("accuracy", True), ("hallucination", False), ("rouge1", False)]
    assert "Regressions" in html.read_text(encoding="utf-8")


@pytest.mark.parametrize("flags, message", [
    (["--alpha", "0"], "--alpha must be in (0, 1)"),
    (["--alpha", "1.5"], "--alpha must be in (0, 1)"),
    (["--min-delta", "-0.1"], "--min-delta must be a number >= 0"),
])
def test_compare_bad_regression_options_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture,
                                               flags: list[str], message: str) -> None:
    done, cases = _compare(tmp_path, "accuracy", [1.0] * 5, [0.0] * 5, "--fail-on-regression",
                           *flags, capsys=capsys)
    assert done.returncode == 2 and message in done.stderr and cases is None
    assert len(done.stderr.strip().splitlines()) == 1 and not done.stdout


def test_fail_on_regression_without_a_shared_score_exits_2(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    a = _write(tmp_path / "a.jsonl", [{"id": i, "accuracy": 1.0} for i in range(5)])
    b = _write(tmp_path / "b.jsonl", [{"id": i, "rouge1": 1.0} for i in range(5)])
    done = Done(capsys, "compare", str(a), str(b), "--fail-on-regression")
    assert done.returncode == 2 and "no score column in both runs" in done.stderr
    # scored first (--metric all): no metric has its columns in both inputs, said before
    # scoring either of them
    a = _write(tmp_path / "a_in.jsonl", [{"id": i, "prediction": "p", "reference": "r"}
                                         for i in range(5)])
    b = _write(tmp_path / "b_in.jsonl", [{"id": i, "question": "q", "source": "s"}
                                         for i in range(5)])
    done = Done(capsys, "compare", str(a), str(b), "--metric", "all", "--fail-on-regression")
    assert done.returncode == 2 and "share no score to compare" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not done.stdout
