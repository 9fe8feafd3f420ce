"""A corrected gate never passes on labels that cannot support it, and labels are put on the
scores' scale by a declared range, never by the range the labelled rows happen to span
(``score --gate-on corrected --label``, ``compare --label``, ``--label-range``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shared
from shared.analysis.corrected import MIN_CORRECTED_LABELS, MIN_EACH_BINARY, corrected_gates
from shared.analysis.gates import parse_gates
from shared.cli.main import main

ROWS = 120


def write_run(path: Path, labels: list[Any], right: np.ndarray) -> Path:
    """Rows scored by exact-match accuracy (1 where ``right``), ``human`` on the first rows."""
    rows = [{"id": i, "question": f"q{i}", "reference": "paris",
             "prediction": "paris" if right[i] else "rome",
             "human": labels[i] if i < len(labels) else None} for i in range(ROWS)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def score(path: Path, tmp_path: Path, *extra: str) -> int:
    return main(["score", str(path), "-m", "accuracy", "--out", str(tmp_path / "o.jsonl"),
                 "-q", "--gate-on", "corrected", "--label", "human", *extra])


RIGHT = np.arange(ROWS) % 6 == 0  # a mean accuracy of 0.17


@pytest.mark.parametrize("labels", [[1] * 2, [1] * 10, [1] * 40, [1] * 36 + [0] * 4,
                                    [1] * (MIN_CORRECTED_LABELS - 1)])
def test_labels_that_cannot_support_a_gate_are_refused_before_scoring(
        labels: list[int], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = write_run(tmp_path / "in.jsonl", labels, RIGHT)
    junit = tmp_path / "j.xml"
    assert score(path, tmp_path, "--gate", "accuracy>=0.9", "--junit-xml", str(junit)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--gate-on corrected" in err[0]
    assert "a corrected gate" in err[0] or "without variation" in err[0]
    assert not (tmp_path / "o.jsonl").exists() and not junit.exists()


def test_enough_varied_labels_gate_and_say_their_mapping(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    labels = [int(x) for x in RIGHT[:40]]
    labels[1:1 + MIN_EACH_BINARY] = [1] * MIN_EACH_BINARY
    path = write_run(tmp_path / "in.jsonl", labels, RIGHT)
    assert score(path, tmp_path, "--gate", "accuracy>=0.9") == 1
    captured = capsys.readouterr()
    assert "labels as they are (0..1)" in captured.err
    assert "accuracy>=0.9 FAILED" in captured.err


def test_a_gate_fails_when_unmeasured_rows_leave_too_few_labels() -> None:
    """Checked again on the measured rows: a judge outage cannot pass a gate either."""
    rng = np.random.default_rng(0)
    labels = [int(x) for x in rng.random(40) < 0.5] + [None] * 80
    scores = [None if i % 2 else float(rng.random()) for i in range(120)]
    rows = [{"accuracy": s, "human": h} for s, h in zip(scores, labels, strict=True)]
    (outcome,) = corrected_gates(rows, parse_gates("accuracy>=0.0"), "human")
    assert not outcome.passed
    assert "20 labelled rows" in outcome.message and "FAILED" in outcome.message


def test_ratings_need_their_declared_range(tmp_path: Path,
                                           capsys: pytest.CaptureFixture) -> None:
    rng = np.random.default_rng(1)
    ratings = [int(x) for x in rng.integers(3, 6, 40)]  # 3-5 of a 1-5 scale
    path = write_run(tmp_path / "in.jsonl", ratings, RIGHT)
    assert score(path, tmp_path, "--gate", "accuracy>=0.1") == 2
    assert "--label-range" in capsys.readouterr().err
    # with the scale declared: (rating - 1) / 4, so 3..5 -> 0.5..1, never 0..1
    scores = RIGHT.astype(float)
    mapped = (np.array(ratings) - 1) / 4
    expected = shared.prediction_powered_mean(scores[:40], mapped, scores[40:])
    assert score(path, tmp_path, "--label-range", "1:5",
                 "--gate", f"accuracy>={expected['low'] - 1e-6}") == 0
    assert "labels 1..5 mapped onto 0..1" in capsys.readouterr().err
    assert score(path, tmp_path, "--label-range", "1:5",
                 "--gate", f"accuracy>={expected['low'] + 1e-6}") == 1
    capsys.readouterr()
    assert score(path, tmp_path, "--label-range", "4:5", "--gate", "accuracy>=0.1") == 2
    assert "label 3 is outside the label range 4:5" in capsys.readouterr().err


def test_one_typo_among_binary_labels_is_refused(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    labels = [int(x) for x in np.arange(40) % 2]
    labels[7] = 2
    path = write_run(tmp_path / "in.jsonl", labels, RIGHT)
    assert score(path, tmp_path, "--gate", "accuracy>=0.1") == 2
    assert "labels 0..2 are not on the scores' scale" in capsys.readouterr().err
    assert score(path, tmp_path, "--label-range", "0:1", "--gate", "accuracy>=0.1") == 2
    assert "label 2 is outside" in capsys.readouterr().err


def test_compare_maps_ratings_by_the_declared_range(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    rng = np.random.default_rng(2)
    n = 200
    y_a, y_b = rng.integers(3, 6, n), rng.integers(3, 6, n)
    s_a, s_b = rng.random(n), rng.random(n)
    labelled = rng.random(n) < 0.3
    for name, y, s in (("a", y_a, s_a), ("b", y_b, s_b)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(
            {"id": i, "question": "q", "prediction": "p", "accuracy": float(s[i]),
             "human": int(y[i]) if labelled[i] else None}) + "\n" for i in range(n)))
    runs = [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]
    assert main(["compare", *runs, "--label", "human"]) == 2
    assert "--label-range" in capsys.readouterr().err
    report = tmp_path / "c.json"
    assert main(["compare", *runs, "--label", "human", "--label-range", "1:5", "--json",
                 str(report)]) == 0
    (entry,) = json.loads(report.read_text())["corrected"]
    d = s_b - s_a
    expected = shared.prediction_powered_mean(d[labelled], ((y_b - y_a) / 4)[labelled],
                                              d[~labelled], bounds=(-1.0, 1.0))
    assert {k: entry[k] for k in expected} == pytest.approx(expected)
