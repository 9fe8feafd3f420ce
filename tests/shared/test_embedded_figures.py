"""The CLI's and the demo's note on the embedded judge says what its card says: every judge
metric whose card shows figures measured by `make agreement` (g_eval and pairwise, run with
their criteria, included) has them in shared/analysis/agreement_figures.json, and the note
names the options they were measured with."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

from bench_modules import bench_module

from shared.analysis import embedded_judge
from shared.kit.registry import METRICS, available

REPO = Path(__file__).resolve().parents[2]


def card_rows(metric: str) -> list[str]:
    """The table rows of a metric card's agreement block (written by `make agreement`)."""
    text = (REPO / "metrics" / metric / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- agreement:start -->(.*?)<!-- agreement:end -->", text, re.S)
    rows = [line for line in (block.group(1) if block else "").splitlines()
            if line.startswith("| ") and not line.startswith("| data set")]
    return rows


def test_every_card_figure_of_the_embedded_judge_reaches_the_note() -> None:
    figures = embedded_judge.embedded_judge_figures()
    judged = [m for m in available() if METRICS[m].judge and card_rows(m)]
    assert {"g_eval", "pairwise"} <= set(judged)
    for metric in judged:
        assert metric in figures["metrics"], metric
        note = embedded_judge.embedded_judge_note(metric, figures)
        assert "not measured" not in note, (metric, note)
        entry = figures["metrics"][metric]
        if entry.get("value") is not None:
            shown = f"{entry['value']:.2f}"
            assert shown in note and any(shown in row for row in card_rows(metric)), metric
        if METRICS[metric].options and any(o.required for o in METRICS[metric].options):
            assert entry.get("options") and f"with {entry['options']}" in note, metric


def statistic(value: float) -> SimpleNamespace:
    return SimpleNamespace(value=value, low=value - 0.1, high=value + 0.1)


def test_write_figures_keeps_the_rows_run_with_options(tmp_path: Path) -> None:
    writeup = bench_module("agreement_writeup_figures", "agreement/writeup.py")
    labelled = sys.modules["labelled"]  # imported by writeup from bench/agreement

    def result(name: str, options: dict, title: str | None, value: float) -> dict:
        job = labelled.Job(name, ("x", "SummEval"), "coherence", options=options,
                      options_title=title)
        report = SimpleNamespace(label_kind="numeric", n=60, unmeasured=0, constant_score=None,
                                 statistic=lambda _name: statistic(value))
        return {"job": job, "report": report}

    path = tmp_path / "figures.json"
    path.write_text(json.dumps({"metrics": {"l3score": {"n": 60, "value": 0.5}}}))
    results = [result("g_eval", {"criteria": "c"}, "the coherence criteria", 0.3),
               result("g_eval", {"criteria": "d"}, "the consistency criteria", 0.9),
               result("pairwise", {"criteria": "e"}, None, -0.2),
               result("summary_coherence", {}, None, 0.4)]
    header = {"date": "today", "judge": "embedded"}
    writeup.write_figures(results, header, path, keep=True)
    metrics = json.loads(path.read_text())["metrics"]
    assert metrics["g_eval"]["value"] == 0.3  # the first row of a metric
    assert metrics["g_eval"]["options"] == "the coherence criteria"
    assert metrics["pairwise"]["options"] == "criteria=e"
    assert "options" not in metrics["summary_coherence"]
    assert metrics["l3score"] == {"n": 60, "value": 0.5}  # kept from the file
    writeup.write_figures(results, header, path)
    assert "l3score" not in json.loads(path.read_text())["metrics"]


def test_the_agreement_rows_hold_each_figure_of_the_note() -> None:
    """The reports' and the CLI's table (agreement_rows) shows what the one-line note says."""
    figures = embedded_judge.embedded_judge_figures()
    for metric, entry in figures["metrics"].items():
        row = embedded_judge.agreement_row(metric, figures)
        assert tuple(row) == embedded_judge.AGREEMENT_HEADER and row["metric"] == metric
        if entry.get("value") is not None:
            assert f"{entry['value']:.2f} [{entry['low']:.2f}, {entry['high']:.2f}]" in (
                row["agreement with people"]), metric
            assert row["agreement with people"] in embedded_judge.embedded_judge_note(
                metric, figures)
        if entry.get("constant_score") is not None:
            assert f"every row scored {entry['constant_score']:g}" in row["note"]
        if entry.get("options"):
            assert f"with {entry['options']}" in row["note"]
        assert row["data set"] == entry.get("data_set")
        measured = str(entry["n"]) if not entry.get("unmeasured") else (
            f"{entry['n']} of {entry['n'] + entry['unmeasured']}")
        assert row["rows measured"] == measured
    assert embedded_judge.agreement_row("bias", {"metrics": {}})["note"] == "not measured"
    lost = {"metrics": {"faithfulness": {"data_set": "SummEval", "label": "consistency", "n": 0,
                                         "unmeasured": 6, "value": None}}}
    row = embedded_judge.agreement_row("faithfulness", lost)
    assert row["rows measured"] == "0 of 6" and "every row unmeasured" in row["note"]
    none = {"metrics": {"faithfulness": {"data_set": "SummEval", "statistic": "spearman",
                                         "n": 4, "unmeasured": 56, "value": None}}}
    assert embedded_judge.agreement_row("faithfulness", none)["note"] == (
        "no Spearman defined on the rows measured")
