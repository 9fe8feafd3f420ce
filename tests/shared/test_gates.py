"""shared.analysis.gates, .regressions and .junit: gates on real metric results and scored runs,
the regression decision on real comparisons, the JUnit XML read back by a parser. Intervals are
checked against ``shared.kit.stats.t_wilson_interval`` on the same scores."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import datasets
import evaluate
import numpy as np
import pytest

from shared import UserInputError, assert_gates, evaluate_gates, score_dataset
from shared.analysis.comparison import compare
from shared.analysis.gates import Gate, checks_table, parse_gate
from shared.analysis.junit import junit_xml
from shared.analysis.regressions import regression_checks, regressions_text, shared_scores
from shared.analysis.report import write_compare_html, write_score_html
from shared.kit import registry, stats

PREDICTIONS = ["Paris", "London", "Tokyo", "Rome", "Madrid", "Oslo", "Lima", "Cairo"]
REFERENCES = ["Paris", "London", "Berlin", "Rome", "Lisbon", "Oslo", "Quito", "Cairo"]


def _accuracy() -> dict:
    metric = evaluate.load(registry.metric_path("accuracy"))
    return metric.compute(predictions=PREDICTIONS, references=REFERENCES)


def _interval(values: list[float]) -> tuple[float, float]:
    return stats.t_wilson_interval(np.asarray(values, dtype=float))


@pytest.mark.parametrize("text", ["faithfulness>0.8", "faithfulness>=abc", ">=0.5",
                                  "faithfulness=>0.8", "faithfulness>=nan", "faithfulness>=",
                                  "rouge>=0.3", "rouge.rougeX>=0.3", "accuracy.accuracyy<=1",
                                  "nosuch>=0.5"])
def test_bad_gates_are_one_line_errors(text: str) -> None:
    with pytest.raises(UserInputError) as error:
        parse_gate(text)
    assert "\n" not in str(error.value) and repr(text) in str(error.value)


def test_gate_forms() -> None:
    gate = parse_gate(" rouge.rougeL >= 0.3 ")
    assert (gate.metric, gate.key, gate.op, gate.threshold, gate.text) == (
        "rouge", "rougeL", ">=", 0.3, "rouge.rougeL>=0.3")
    assert gate.column() == "rougeL" and gate.holds(0.3) and not gate.holds(0.29)
    low = parse_gate("hallucination<=0.1")
    assert low.column() == "hallucination" and low.holds(0.1) and not low.holds(0.11)
    # a one-score metric: its score by the metric name, or by its output key
    assert parse_gate("l3score>=0.5").output_key() == "L3Score"
    assert parse_gate("l3score.L3Score>=0.5").column() == "l3score"


def test_metric_result_mean_interval_and_gated_bounds() -> None:
    result = _accuracy()
    per_sample = [float(p == r) for p, r in zip(PREDICTIONS, REFERENCES, strict=True)]
    low, high = _interval(per_sample)
    assert low < high
    for gate_on, gated in (("estimate", float(np.mean(per_sample))), ("lower", low),
                           ("upper", high)):
        [outcome] = evaluate_gates(result, ["accuracy>=0.5"], gate_on=gate_on)
        assert outcome.mean == pytest.approx(result["accuracy"]) == float(np.mean(per_sample))
        assert (outcome.low, outcome.high) == (low, high)
        assert outcome.gated == gated and outcome.passed == (gated >= 0.5)
        assert (outcome.rows, outcome.unmeasured) == (8, 0)
    # a <= gate is the mirror: the upper bound is its conservative value
    [upper] = evaluate_gates(result, [f"accuracy<={high - 0.01}"], gate_on="upper")
    [estimate] = evaluate_gates(result, [f"accuracy<={high - 0.01}"])
    assert not upper.passed and estimate.passed


def test_rouge_key_gates_its_own_scores() -> None:
    rouge = evaluate.load(registry.metric_path("rouge"))
    result = rouge.compute(predictions=PREDICTIONS, references=REFERENCES, use_aggregator=False)
    for key in ("rouge1", "rougeL"):
        [outcome] = evaluate_gates(result, [f"rouge.{key}>=0.5"])
        assert outcome.mean == pytest.approx(float(np.mean(result[key])))
        assert (outcome.low, outcome.high) == _interval(result[key])
    with pytest.raises(UserInputError, match="has no 'accuracy'"):
        evaluate_gates(result, ["accuracy>=0.5"])


def test_unmeasured_share_and_max_unmeasured(tmp_path: Path) -> None:
    scores = [1.0, None, 0.5, None, 1.0, 0.75, 1.0, 0.25, 1.0, 0.5]
    rows = [{"id": i, "faithfulness": s, "faithfulness_details": json.dumps(
        {"unmeasured": "judge error"} if s is None else {})} for i, s in enumerate(scores)]
    path = tmp_path / "scored.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    measured = [s for s in scores if s is not None]
    for source in (rows, path, str(path)):
        [held, below] = evaluate_gates(source, ["faithfulness>=0.5", "faithfulness<=0.5"],
                                       max_unmeasured=0.25)
        assert held.unmeasured == 2 and held.unmeasured_share == 0.2 and held.passed
        assert (held.low, held.high) == (below.low, below.high) == _interval(measured)
        assert held.mean == float(np.mean(measured)) and not below.passed
    [capped] = evaluate_gates(rows, ["faithfulness>=0.5"], max_unmeasured=0.1)
    assert not capped.passed and capped.reasons() == ["unmeasured 20.0% > max 10.0%"]
    assert "2/10 (20.0%)" in checks_table(["gate", "value", "interval", "gated", "unmeasured",
                                           "result"], [capped])
    nothing = [{"id": 0, "faithfulness": None}, {"id": 1, "faithfulness": None}]
    [empty] = evaluate_gates(nothing, ["faithfulness<=1"])
    assert empty.mean is None and not empty.passed
    assert empty.reasons() == ["no measured row", "unmeasured 100.0% > max 10.0%"]
    with pytest.raises(UserInputError, match="fraction"):
        evaluate_gates(rows, ["faithfulness>=0.5"], max_unmeasured=1.5)
    with pytest.raises(UserInputError, match="no score column 'rougeL'"):
        evaluate_gates(rows, ["rouge.rougeL>=0.5"])


def test_assert_gates_lists_every_failed_gate_with_value_and_interval() -> None:
    result = _accuracy()
    per_sample = [float(p == r) for p, r in zip(PREDICTIONS, REFERENCES, strict=True)]
    low, high = _interval(per_sample)
    with pytest.deprecated_call(match="assert_metric"):  # honest verdicts: docs/INTEGRATIONS.md
        assert [o.passed for o in assert_gates(result, ["accuracy>=0.5"])] == [True]
    with pytest.raises(AssertionError) as error:
        assert_gates(result, ["accuracy>=0.9", "accuracy>=0.5", "accuracy<=0.2"])
    lines = str(error.value).splitlines()
    assert lines[0] == "2 of 3 gates failed:"
    mean = float(np.mean(per_sample))
    interval = f"95% interval [{low:.4f}, {high:.4f}]"
    assert lines[1] == (f"  accuracy>=0.9 FAILED (mean {mean:.4f} < 0.9): mean {mean:.4f}, "
                        f"{interval}, unmeasured 0/8 (0.0%)")
    assert lines[2].startswith(f"  accuracy<=0.2 FAILED (mean {mean:.4f} > 0.2)")
    assert interval in lines[2]


def test_a_scored_run_pair_and_what_it_does_not_compute() -> None:
    rows = [{"prediction": p, "reference": r} for p, r in zip(PREDICTIONS, REFERENCES,
                                                              strict=True)]
    run = score_dataset(datasets.Dataset.from_list(rows), ["accuracy", "bleu"],
                        show_progress=False)
    [accuracy, bleu] = evaluate_gates(run, ["accuracy>=0.5", "bleu>=0.5"], gate_on="lower")
    assert accuracy.mean == 5 / 8 and accuracy.gated == accuracy.low
    bleu_rows = run[0]["bleu"]
    assert (bleu.low, bleu.high) == _interval(bleu_rows)
    with pytest.raises(UserInputError, match="does not compute rouge"):
        evaluate_gates(run, ["rouge.rougeL>=0.5"])
    with pytest.raises(TypeError, match="no per-row scores"):
        evaluate_gates(run[1], ["accuracy>=0.5"])


def _runs(a_scores: list[float], b_scores: list[float], column: str = "accuracy") -> tuple:
    return ([{"id": i, column: s} for i, s in enumerate(a_scores)],
            [{"id": i, column: s} for i, s in enumerate(b_scores)])


def _check(a_scores: list[float], b_scores: list[float], column: str = "accuracy",
           **options: float):
    report = compare(*_runs(a_scores, b_scores, column), n_resamples=500)
    [check] = regression_checks(report, **options)
    return report.columns[0], check


def test_regression_decision_follows_the_metric_direction() -> None:
    rng = np.random.default_rng(7)
    a = [1.0] * 60
    worse = [0.0 if i % 3 else 1.0 for i in range(60)]
    column, check = _check(a, worse)
    assert column.delta < 0 and column.p_holm < 0.05 and check.regressed
    assert "B is worse than A" in check.message and "p (Holm)" in check.message
    _, improved = _check(worse, a)
    assert improved.delta > 0 and not improved.regressed
    noise_a = rng.uniform(0, 1, 60).round(2).tolist()
    noise_b = (np.asarray(noise_a) + rng.normal(0, 0.01, 60)).clip(0, 1).round(2).tolist()
    noise, quiet = _check(noise_a, noise_b, "faithfulness")
    assert noise.p_holm >= 0.05 and not quiet.regressed
    # hallucination: lower is better, so a higher B is the regression
    graded = rng.uniform(0, 0.3, 60).round(2)
    _, more = _check(graded.tolist(), (graded + 0.4).tolist(), "hallucination")
    _, less = _check((graded + 0.4).tolist(), graded.tolist(), "hallucination")
    assert more.delta > 0 and more.regressed and "(lower is better)" in more.message
    assert less.delta < 0 and not less.regressed
    # min_delta: significant but smaller than asked is not a regression
    _, small = _check(graded.tolist(), (graded + 0.4).tolist(), "hallucination", min_delta=0.5)
    assert not small.regressed and "min delta 0.5" in small.message
    with pytest.raises(UserInputError, match="alpha"):
        _check(a, worse, alpha=1.0)


def test_shared_scores_before_scoring() -> None:
    assert shared_scores(["id", "accuracy", "rouge1"], ["id", "rouge1", "bleu"]) == ["rouge1"]
    assert shared_scores(["prediction", "reference"], ["question", "source"], ["all"]) == []
    assert "accuracy" in shared_scores(["prediction", "reference"],
                                       ["prediction", "reference", "source"], ["all"])


def test_junit_xml_one_testcase_per_check() -> None:
    report = compare(*_runs([1.0] * 40 + [0.0] * 5, [0.0] * 40 + [1.0] * 5), n_resamples=200)
    checks = regression_checks(report)
    outcomes = evaluate_gates(_accuracy(), ["accuracy>=0.9", "accuracy>=0.1"])
    evil = Gate("accuracy", None, ">=", 0.5, "accuracy>=0.5 <x> & \x00\x1b")
    outcomes.append(evaluate_gates(_accuracy(), [evil])[0])
    for items, failures in ((outcomes, 1), (checks, 1)):
        root = ET.fromstring(junit_xml("suite <&>", items, classname="c", failure_type="F"))
        [suite] = root.findall("testsuite")
        cases = suite.findall("testcase")
        assert suite.get("name") == "suite <&>" and len(cases) == len(items)
        assert suite.get("tests") == str(len(items)) and suite.get("failures") == str(failures)
        for case, item in zip(cases, items, strict=True):
            failure = case.find("failure")
            assert (failure is None) == item.passed
            if failure is not None:
                assert failure.get("message") == item.message and failure.get("type") == "F"
    assert cases[0].get("name") == "accuracy" and "B is worse than A" in regressions_text(checks)
    names = [c.get("name") for c in ET.fromstring(junit_xml(
        "s", outcomes, classname="c", failure_type="F")).iter("testcase")]
    assert names[2] == "accuracy>=0.5 <x> & \ufffd\ufffd"


def test_reports_show_the_gates(tmp_path: Path) -> None:
    from shared.analysis.gates import gates_html
    from shared.analysis.regressions import regressions_html

    rows = [{"id": i, "accuracy": float(i % 2), "question": "<b>q</b>"} for i in range(10)]
    outcomes = evaluate_gates(rows, ["accuracy>=0.9", "accuracy<=0.9"])
    html = write_score_html(rows, None, tmp_path / "score.html",
                            gates=gates_html(outcomes))
    assert "1 of 2 failed" in html and 'class="neg">FAIL</td>' in html
    assert "<td>accuracy&gt;=0.9</td>" in html and "<td>[" + f"{outcomes[0].low:.4f}" in html
    assert "id=\"gates\"" not in write_score_html(rows, None, tmp_path / "plain.html")
    report = compare(*_runs([1.0] * 30, [0.0] * 30), n_resamples=200)
    html = write_compare_html(report, tmp_path / "compare.html",
                              gates=regressions_html(regression_checks(report)))
    assert "Regressions" in html and "1 of 1 failed" in html


def test_demo_compare_tab_flags_a_regression(tmp_path: Path) -> None:
    from shared.demo.compare_tab import handle

    for name, scores in (("a.jsonl", [0.1] * 30), ("b.jsonl", [0.9] * 30)):
        (tmp_path / name).write_text("".join(json.dumps({"id": i, "hallucination": s}) + "\n"
                                             for i, s in enumerate(scores)), encoding="utf-8")
    status, table, _ = handle(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "",
                              folder=tmp_path)
    assert "jm-error" in status and "B is worse than A" in status
    assert list(table["regression"]) == ["REGRESSION"]
    status, table, _ = handle(str(tmp_path / "b.jsonl"), str(tmp_path / "a.jsonl"), "",
                              folder=tmp_path)
    assert "jm-ok" in status and list(table["regression"]) == [""]
    assert not math.isnan(float(table.loc[0, "p (Holm)"]))
