"""``score --calibration FILE`` checks the map completely before any scoring (one line, exit
2, no output), treats it as an input for the output guards, and never blocks on a named pipe;
``calibrate`` writes --json even when --save-calibration fails."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from shared.analysis.calibration_maps import MAP_FORMAT, load_map
from shared.cli.main import main

GOOD = {"format": MAP_FORMAT, "metric": "accuracy", "score_key": "accuracy",
        "column": "accuracy", "label": "human", "label_range": None,
        "method": "isotonic", "x": [0.0, 1.0], "y": [0.1, 0.9]}
NESTED = '{"format": "' + MAP_FORMAT + '", "x": ' + "[" * 100000 + "]" * 100000 + "}"

BAD: list[tuple[Any, str]] = [
    ({"x": 0.5}, "'x' must be a list"),
    ({"x": [0.0, 0.5, 1.0]}, "of one length"),
    ({"x": [], "y": []}, "non-empty"),
    ({"x": [1.0, 0.0]}, "strictly increasing"),
    ({"x": [0.0, 0.0]}, "strictly increasing"),
    ({"y": [7.5, -3.0]}, "outside [0, 1]"),
    ({"y": [0.1, True]}, "not a finite number"),
    ({"x": [0, 10 ** 400]}, "not a finite number"),
    ({"x": [0.0, "1"]}, "not a finite number"),
    ({"method": "sigmoid"}, "needs 'slope'"),
    ({"method": "sigmoid", "slope": 2.0}, "needs 'intercept'"),
    ({"method": "linear", "slope": [1], "intercept": 0}, "not a finite number"),
    ({"method": "spline"}, "'method' is 'spline'"),
    ({"column": "id"}, "not accuracy's score column"),
    ({"metric": "nope"}, "not a metric's name"),
    ({"score_key": "rouge1"}, "'score_key'"),
    (NESTED, "nested too deeply"),
    ("[1, 2]", "not a calibration map"),
]


def write_rows(path: Path) -> Path:
    path.write_text("".join(json.dumps(
        {"id": i, "question": "q", "prediction": "paris", "reference": "paris" if i % 2 else "x"})
        + "\n" for i in range(6)))
    return path


@pytest.mark.parametrize(("change", "says"), BAD)
def test_a_bad_map_is_one_line_before_any_scoring(change: Any, says: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "map.json"
    text = change if isinstance(change, str) else json.dumps({**GOOD, **change})
    path.write_text(text)
    out = tmp_path / "o.jsonl"
    code = main(["score", str(write_rows(tmp_path / "in.jsonl")), "-m", "accuracy", "-q",
                 "--out", str(out), "--calibration", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and says in err[0], err
    assert not out.exists()


def test_a_good_map_is_applied(tmp_path: Path) -> None:
    path = tmp_path / "map.json"
    path.write_text(json.dumps(GOOD))
    out = tmp_path / "o.jsonl"
    assert main(["score", str(write_rows(tmp_path / "in.jsonl")), "-m", "accuracy", "-q",
                 "--out", str(out), "--calibration", str(path)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["accuracy_calibrated"] for r in rows] == pytest.approx(
        [0.9 if r["accuracy"] == 1 else 0.1 for r in rows])
    assert load_map(path)["x"] == [0.0, 1.0]


@pytest.mark.parametrize("option", ["--out", "--html"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_the_map_is_an_input_no_output_may_overwrite(option: str, overwrite: bool,
                                                     tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "map.jsonl"
    path.write_text(json.dumps(GOOD))
    argv = ["score", str(write_rows(tmp_path / "in.jsonl")), "-m", "accuracy", "-q",
            "--calibration", str(path), *(["--overwrite-input"] if overwrite else [])]
    argv += ["--out", str(path)] if option == "--out" else [
        "--out", str(tmp_path / "o.jsonl"), "--html", str(path)]
    assert main(argv) == 2
    assert "--calibration file" in capsys.readouterr().err
    assert json.loads(path.read_text()) == GOOD


def test_a_named_pipe_as_map_is_refused_without_blocking(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    fifo = tmp_path / "map.json"
    os.mkfifo(fifo)
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(main(
        ["score", str(write_rows(tmp_path / "in.jsonl")), "-m", "accuracy", "-q", "--out",
         str(tmp_path / "o.jsonl"), "--calibration", str(fifo)])), daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():  # unblock the reader so the test process can end
        with open(fifo, "w") as writer:
            writer.write("{}")
        pytest.fail("score blocked on a named pipe given as --calibration")
    assert result == [2] and "not a regular file" in capsys.readouterr().err


def test_calibrate_writes_json_when_the_map_cannot_be_saved(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """One label 0 among 1s: no map can be cross-validated, so --save-calibration fails; the
    --json report is written all the same."""
    rows = [{"id": i, "question": "q", "prediction": "paris",
             "reference": "paris" if i % 3 else "x", "human": (0 if i == 0 else 1)
             if i < 12 else None} for i in range(30)]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report, saved = tmp_path / "r.json", tmp_path / "map.json"
    code = main(["calibrate", str(path), "-m", "accuracy", "--label", "human", "-q",
                 "--json", str(report), "--save-calibration", str(saved)])
    err = capsys.readouterr().err
    assert code == 2 and "no map was fitted" in err
    assert json.loads(report.read_text())["n_labelled"] == 12 and not saved.exists()
