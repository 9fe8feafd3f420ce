"""assert_metric and gates under a hostile tester: a verdict on the few rows a failing
judge could read is refused by default (assert_metric, evaluate_gates, score --gate), the
unmeasured count is in every verdict; thresholds that can never pass or contradict each other,
typos and numpy numbers; the settle hint at its edges; a pandas DataFrame as data."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from judgeserver import JudgeServer

from shared import assert_metric, evaluate_gates
from shared.analysis.gates import MAX_UNMEASURED
from shared.analysis.verdicts import Verdict, verdict_of
from shared.base.errors import UserInputError
from shared.cli.main import main
from shared.integrations.assertions import UnmeasuredError, settle_hint

MEASURED = {3, 17, 29}  # the rows the failing judge reads; the other 37 of 40 get a 500


def _rows(n: int = 40) -> list[dict[str, str]]:
    return [{"question": f"What is item {i}?", "prediction": "Paris", "reference": "Paris"}
            for i in range(n)]


def _answer(body: dict) -> str:
    text = json.dumps(body)
    if not any(f"What is item {i}?" in text for i in MEASURED):
        raise RuntimeError("overloaded")  # the fake answers 500: a judge error
    return "Yes"


@pytest.fixture(scope="module")
def failing_judge() -> dict[str, object]:
    with JudgeServer(_answer, top_logprobs=lambda body: [("Yes", -0.01), ("No", -6.0)]) as server:
        yield {"provider": "openai-compatible", "base_url": server.url, "model": "m",
               "max_retries": 0, "use_cache": False}


def test_a_verdict_on_three_of_forty_rows_is_refused_by_default(failing_judge: dict) -> None:
    with pytest.raises(UnmeasuredError) as info:
        assert_metric("l3score", _rows(), at_least=0.3, **failing_judge)
    message = str(info.value)
    assert "37 of 40 rows unmeasured (92.5% > max_unmeasured 10.0%)" in message
    assert "not a quality verdict" in message
    # the user may accept it, and the verdict then says how many rows it stands on
    verdict = assert_metric("l3score", _rows(), at_least=0.3, max_unmeasured=1.0,
                            **failing_judge)
    assert (verdict.n, verdict.unmeasured) == (3, 37)
    assert "(37 of 40 unmeasured, left out)" in verdict.describe()
    assert str(verdict).startswith("pass: ")


def test_gates_refuse_the_same_run_by_default(failing_judge: dict, tmp_path: Path,
                                              capsys: pytest.CaptureFixture) -> None:
    assert MAX_UNMEASURED == 0.1
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    argv = ["score", str(data), "-m", "l3score", "--out", str(tmp_path / "out.jsonl"), "-q",
            "--provider", "openai-compatible", "--base-url", str(failing_judge["base_url"]),
            "--model", "m", "--option", "max_retries=0", "--no-cache", "--gate",
            "l3score>=0.3"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "unmeasured 92.5% > max 10.0%" in err and "unmeasured 37/40" in err
    assert main([*argv, "--max-unmeasured", "1"]) == 0  # the bound turned off, on purpose
    scored = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    [outcome] = evaluate_gates(scored, "l3score>=0.3")
    assert not outcome.passed and outcome.max_unmeasured == 0.1
    [outcome] = evaluate_gates(scored, "l3score>=0.3", max_unmeasured=None)
    assert outcome.passed and outcome.unmeasured == 37


def test_thresholds_that_cannot_pass_or_contradict_are_refused() -> None:
    rows = [{"prediction": "a", "reference": "a"}] * 5
    with pytest.raises(UserInputError, match="at_least=0.8 is above at_most=0.2"):
        assert_metric("accuracy", rows, at_least=0.8, at_most=0.2)
    with pytest.raises(UserInputError, match="could never pass"):
        assert_metric("accuracy", rows, at_least=1.0)
    with pytest.raises(UserInputError, match="could never pass"):
        assert_metric("accuracy", rows, at_most=0.0)
    with pytest.raises(UserInputError, match="did you mean at_least="):
        assert_metric("accuracy", rows, atleast=0.5)
    with pytest.raises(UserInputError, match="has no option"):  # not "give a threshold"
        assert_metric("accuracy", rows, treshold=0.5)


def test_numpy_numbers_are_numbers() -> None:
    rows = [{"prediction": "a", "reference": "a"}] * 30
    verdict = assert_metric("accuracy", rows, at_least=np.float32(0.5), alpha=np.float64(0.05),
                            max_unmeasured=np.float32(0.2))
    assert verdict.passed


def _inconclusive(n: int, value: float, low: float, high: float, at_least: float) -> Verdict:
    return Verdict("inconclusive", value, low, high, n, 0, at_least=at_least)


def test_the_settle_hint_at_its_edges() -> None:
    # one row: the rows needed is never "about 1 rows (now 1)"
    one = verdict_of([[1.0]], at_least=0.5)
    assert one.outcome == "inconclusive"
    hint = settle_hint(one)
    needed = int(hint.split("about ")[1].split(" ")[0])
    assert needed >= 2 and "(now 1)" in hint
    # the side of the interval that straddles the threshold is the one that must move
    verdict = _inconclusive(10, 0.9, 0.5, 0.95, at_least=0.8)
    expected = math.ceil(10 * ((0.9 - 0.5) / (0.9 - 0.8)) ** 2)
    assert f"about {expected} rows in all (now 10)" in settle_hint(verdict)
    at = _inconclusive(10, 0.8, 0.6, 0.95, at_least=0.8)
    assert "sits on the threshold" in settle_hint(at)
    # the hint, checked: with that many rows of the same mix the verdict is settled
    scores = [1.0] * 9 + [0.0]
    few = verdict_of([scores], at_least=0.7)
    assert few.outcome == "inconclusive"
    more = int(settle_hint(few).split("about ")[1].split(" ")[0])
    assert verdict_of([scores * math.ceil(more / 10)], at_least=0.7).outcome == "pass"


def test_a_pandas_dataframe_is_data() -> None:
    frame = pd.DataFrame({"prediction": ["Paris"] * 12, "reference": ["Paris"] * 11 + ["Rome"],
                          "question": ["q"] * 12})
    verdict = assert_metric("accuracy", frame, at_least=0.5)
    assert (verdict.n, verdict.value) == (12, pytest.approx(11 / 12))
    with pytest.raises(UserInputError, match="no rows"):
        assert_metric("accuracy", frame.iloc[:0], at_least=0.5)


def test_one_line_errors_name_no_class(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"prediction": "a", "reference": "a", "label": True})
                            + "\n" for _ in range(6)))
    capsys.readouterr()
    assert main(["agree", str(data), "-m", "accuracy", "--label", "label", "-q"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("judge-metrics: error: label column") and "Error:" not in line
