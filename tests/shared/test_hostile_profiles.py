"""Alignment profiles under a hostile tester: ``--profile`` is an input no output may
overwrite (score, agree, compare); an edited or crafted profile is checked completely before any
work, each refusal one line (a P(label) of 7.5, an unsorted map, a NaN threshold, a column that
is not the score's, a named pipe that would hang); a profile fitted on one judge is refused on
another. Token-F1 accuracy on EVOUNA rows (no judge) for the real profile."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from profile_files import F1, evouna_rows, fit_profile

from shared.cli.main import main


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("profile")
    paths = {"rows": evouna_rows(folder / "rows.jsonl", 0, 80),
             "profile": folder / "profile.json", "scored": folder / "scored.jsonl"}
    fit_profile(paths["rows"], paths["profile"], resamples=30)
    assert main(["score", str(paths["rows"]), *F1, "--out", str(paths["scored"]), "-q"]) == 0
    return paths


def _one_line_error(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("judge-metrics: error: "), err
    return err[0]


@pytest.mark.parametrize("flag", ["--out", "--html", "--junit-xml"])
def test_score_never_overwrites_its_profile(fitted: dict[str, Path], flag: str,
                                            capsys: pytest.CaptureFixture,
                                            tmp_path: Path) -> None:
    before = fitted["profile"].read_bytes()
    profile = tmp_path / "profile.jsonl"  # a name --out takes
    profile.write_bytes(before)
    argv = ["score", str(fitted["rows"]), *F1, "--profile", str(profile), "-q",
            "--out", str(tmp_path / "out.jsonl")]
    if flag == "--out":
        argv[-1] = str(profile)
    else:
        argv += ["--gate", "accuracy>=0.1"] if flag == "--junit-xml" else []
        argv += [flag, str(profile)]
    assert "is the --profile file" in _one_line_error(argv, capsys)
    assert profile.read_bytes() == before


@pytest.mark.parametrize("argv", [
    ["agree", "{rows}", *F1, "--label", "label", "--json", "{profile}"],
    ["agree", "{rows}", *F1, "--label", "label", "--html", "{profile}"],
    ["compare", "{scored}", "{scored}", "--json", "{profile}"],
])
def test_agree_and_compare_never_overwrite_their_profile(fitted: dict[str, Path],
                                                         argv: list[str],
                                                         capsys: pytest.CaptureFixture) -> None:
    before = fitted["profile"].read_bytes()
    filled = [a.format(**{k: str(v) for k, v in fitted.items()}) for a in argv]
    said = _one_line_error([*filled, "--profile", str(fitted["profile"]), "-q"], capsys)
    assert "is the --profile file" in said
    assert fitted["profile"].read_bytes() == before


def _edited(fitted: dict[str, Path], tmp_path: Path, **changes: Any) -> Path:
    data = json.loads(fitted["profile"].read_text())
    data.update(changes)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    return path


ISOTONIC = {"method": "isotonic", "x": [0.0, 0.5, 1.0], "y": [0.1, 0.5, 0.9]}


@pytest.mark.parametrize(("changes", "said"), [
    ({"threshold": float("nan")}, "'threshold' is nan, not a P(label) in [0, 1]"),
    ({"threshold": 7.5}, "'threshold' is 7.5"),
    ({"threshold": "0.5"}, "'threshold' is '0.5'"),
    ({"calibration": {**ISOTONIC, "y": [0.1, 7.5, 0.9]}}, "P(label) outside [0, 1]"),
    ({"calibration": {**ISOTONIC, "x": [0.0, 1.0, 0.5]}}, "strictly increasing"),
    ({"calibration": {"method": "cubic"}}, "'method' is 'cubic'"),
    ({"column": "label"}, "'column' is 'label', not accuracy's score column 'accuracy'"),
    ({"metric": "accuracyy"}, "'metric' is 'accuracyy'"),
    ({"panel_weights": [0.5, -1]}, "'panel_weights'"),
])
def test_an_edited_profile_is_refused_before_any_work(fitted: dict[str, Path], tmp_path: Path,
                                                      changes: dict, said: str,
                                                      capsys: pytest.CaptureFixture) -> None:
    profile = _edited(fitted, tmp_path, **changes)
    out = tmp_path / "out.jsonl"
    error = _one_line_error(["score", str(fitted["rows"]), *F1, "--profile", str(profile),
                             "--out", str(out), "-q"], capsys)
    assert said in error and not out.exists()


def test_a_named_pipe_is_refused_not_read(fitted: dict[str, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture) -> None:
    fifo = tmp_path / "profile.json"
    os.mkfifo(fifo)
    said = _one_line_error(["score", str(fitted["rows"]), *F1, "--profile", str(fifo), "--out",
                            str(tmp_path / "out.jsonl"), "-q"], capsys)
    assert "not a regular file" in said


def test_a_profile_of_another_judge_is_refused(fitted: dict[str, Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    profile = _edited(fitted, tmp_path, metric="l3score", score_key="L3Score", column="l3score",
                      metric_options={}, judge={"provider": "openai", "model": "gpt-4o-mini"})
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"question": "q", "prediction": "p", "reference": "r"}) + "\n")
    said = _one_line_error(["score", str(rows), "-m", "l3score", "--profile", str(profile),
                            "--out", str(tmp_path / "out.jsonl"), "-q"], capsys)
    assert "fitted on the scores of the judge openai/gpt-4o-mini" in said
    assert "this run's judge is local/" in said
