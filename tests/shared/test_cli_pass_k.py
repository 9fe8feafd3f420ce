"""``score --task COLUMN --pass-k K,K [--success-at X]`` through the real CLI: the table, the
``--json`` summary, the HTML report's block and the gates ``pass^K>=X`` on
examples/trajectory_trials.jsonl (3 tasks, 4 trials each, scored by trajectory_match), the
values checked against pass_hat_k / pass_at_k on the written scores and by hand; the refusals,
each one line and exit 2, before any scoring."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shared import pass_at_k, pass_hat_k
from shared.analysis.pass_k import FewTrialsWarning
from shared.cli.main import main

REPO = Path(__file__).resolve().parents[2]
TRIALS = REPO / "examples" / "trajectory_trials.jsonl"
RUN = ["score", str(TRIALS), "--metric", "trajectory_match", "--option",
       "trajectory_mode=unordered", "--quiet"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "shared", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_table_json_report_and_gates(tmp_path: Path) -> None:
    out, summary, html = tmp_path / "s.jsonl", tmp_path / "s.json", tmp_path / "s.html"
    done = _cli(*RUN, "--task", "task", "--pass-k", "1,2,4", "--out", str(out), "--json",
                str(summary), "--html", str(html), "--gate", "pass^4>=0.3", "--gate",
                "pass@2<=0.5", "--gate-on", "estimate")
    assert done.returncode == 1, done.stderr  # pass@2 is 0.94: its gate fails
    scored = [json.loads(line) for line in out.open(encoding="utf-8")]
    successes: dict[str, list[bool]] = {}
    for row in scored:
        successes.setdefault(row["task"], []).append(row["trajectory_match"] >= 1.0)
    # weather: 4 of 4; refund: 3 of 4 (one call missing); booking: 2 of 4 (wrong people, time)
    assert {t: sum(s) for t, s in successes.items()} == {"weather": 4, "refund": 3, "booking": 2}
    report = json.loads(summary.read_text(encoding="utf-8"))
    assert report["metrics"][0]["metric"] == "trajectory_match"
    found = {(e["estimate"], e["k"]): e for e in report["pass_k"]["estimates"]}
    assert len(found) == 6
    for k in (1, 2, 4):
        assert {key: found[("pass^k", k)][key] for key in ("value", "low", "high", "n_tasks",
                                                            "k")} == pass_hat_k(successes, k)
        assert {key: found[("pass@k", k)][key] for key in ("value", "low", "high", "n_tasks",
                                                            "k")} == pass_at_k(successes, k)
    assert found[("pass^k", 4)]["value"] == pytest.approx(1 / 3)  # only weather: 4 of 4
    assert found[("pass^k", 2)]["value"] == pytest.approx((1 + 3 / 6 + 1 / 6) / 3)
    assert (report["pass_k"]["tasks"], report["pass_k"]["trials"]) == (3, 12)
    lines = done.stdout.splitlines()
    assert any(line.split()[:2] == ["pass^4", "0.3333"] for line in lines), done.stdout
    assert "pass^4>=0.3" in done.stdout and "pass@2<=0.5" in done.stdout
    assert "gate pass@2<=0.5 FAILED (mean 0.9444 > 0.5)" in done.stderr
    page = html.read_text(encoding="utf-8")
    assert 'id="pass-k"' in page and "<td>pass^4</td><td>0.3333</td>" in page


def test_success_at_and_the_interval_end_gated(capsys: Any, tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    # every trial succeeds at score >= 0: pass^4 is 1.0, its lower bound is Wilson's at 3 tasks
    assert main([*RUN, "--task", "task", "--pass-k", "4", "--success-at", "0", "--out",
                 str(out), "--gate", "pass^4>=0.4", "--gate-on", "lower"]) == 0
    printed = capsys.readouterr().out
    assert "pass^4    1.0000  [0.4385, 1.0000]  3" in printed
    assert "lower bound 0.4385" in printed
    # the same estimate, gated at 0.5 on its lower bound: 3 tasks cannot show that
    assert main([*RUN, "--task", "task", "--pass-k", "4", "--success-at", "0", "--out",
                 str(out), "--gate", "pass^4>=0.5", "--gate-on", "lower"]) == 1


def test_a_task_with_fewer_trials_is_left_out_with_a_warning(capsys: Any,
                                                             tmp_path: Path) -> None:
    rows = [json.loads(line) for line in TRIALS.open(encoding="utf-8")]
    short = tmp_path / "short.jsonl"
    short.write_text("".join(json.dumps(r) + "\n" for r in rows if not (
        r["task"] == "booking" and r["trial"] > 2)), encoding="utf-8")
    with pytest.warns(FewTrialsWarning) as warned:  # the CLI prints each as one line
        assert main(["score", str(short), "--metric", "trajectory_match", "--task", "task",
                     "--pass-k", "2,4", "--out", str(tmp_path / "s.jsonl"), "--quiet"]) == 0
    assert [str(w.message) for w in warned] == [
        f"{kind}: 1 of 3 tasks have fewer than 4 trials and are left out ('booking')"
        for kind in ("pass^4", "pass@4")]
    captured = capsys.readouterr()
    assert [line.split()[-1] for line in captured.out.splitlines()
            if line.startswith(("pass^2", "pass^4"))] == ["3", "2"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--pass-k", "1,2"], "--pass-k needs --task COLUMN"),
    (["--task", "task"], "--task applies to --pass-k K,K,...: give it too"),
    (["--success-at", "0.5"], "--success-at applies to --pass-k"),
    (["--task", "task", "--pass-k", "0,2"], "--pass-k '0,2': give whole numbers >= 1"),
    (["--task", "task", "--pass-k", "2,2"], "--pass-k '2,2': a k is repeated"),
    (["--task", "task", "--pass-k", "2", "--success-at", "2"],
     "--success-at 2.0: outside trajectory_match's score range [0, 1]"),
    (["--task", "task", "--pass-k", "2", "--metric", "accuracy"],
     "--pass-k reads one metric's trials: give exactly one --metric"),
    (["--task", "id", "--pass-k", "2"], "--task 'id': INPUT has no such column"),
    (["--task", "task", "--pass-k", "2", "--gate", "pass^4>=0.5"],
     "gate 'pass^4>=0.5': k=4 is not among --pass-k (2)"),
    (["--gate", "pass^4>=0.5"], "gate 'pass^4>=0.5': k=4 is not among --pass-k (not given)"),
    (["--task", "task", "--pass-k", "4", "--gate", "pass^4>=1.5"],
     "gate 'pass^4>=1.5': X must be a plain decimal number in [0, 1]"),
    (["--task", "task", "--pass-k", "4", "--gate", "pass^4>=0.5", "--gate-on", "corrected",
      "--label", "trial"], "--gate-on corrected applies to a metric's mean, not to pass^k"),
    (["--task", "task", "--pass-k", "5"],
     "--pass-k: k=5 is larger than every task's number of trials (at most 4); run more "
     "trials or lower k"),
])
def test_refusals_are_one_line(capsys: Any, tmp_path: Path, extra: list[str],
                               message: str) -> None:
    args = [*RUN, "--out", str(tmp_path / "s.jsonl"), *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert err.count("judge-metrics: error:") == 1


def test_a_dry_run_refuses_pass_k(capsys: Any) -> None:
    assert main([*RUN, "--dry-run", "--task", "task", "--pass-k", "2"]) == 2
    assert "--pass-k needs scores: a dry run computes none" in capsys.readouterr().err
