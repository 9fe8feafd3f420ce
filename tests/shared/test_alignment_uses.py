"""An alignment profile read by ``agree``, ``compare`` and gates (docs/ALIGNMENT.md): ``agree
--profile`` measures the profile's columns against the labels and warns when the profile was
fitted on these very rows (its data digest); ``compare --profile`` applies it to both runs (and
refuses runs that already carry its columns); a gate names ``accuracy_decision`` or
``accuracy_calibrated`` and reads the column ``score --profile`` wrote. Token-F1 accuracy on
EVOUNA rows: no judge, a few seconds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from profile_files import F1, evouna_rows, fit_profile
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from shared.analysis.alignment import Tuning
from shared.analysis.gates import parse_gate
from shared.base.errors import UserInputError
from shared.cli.main import main


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A profile fitted on rows 0-119 (``fit``), and rows 120-239 (``other``)."""
    folder = tmp_path_factory.mktemp("profile")
    paths = {"fit": evouna_rows(folder / "fit.jsonl", 0, 120),
             "other": evouna_rows(folder / "other.jsonl", 120, 240),
             "profile": folder / "profile.json"}
    fit_profile(paths["fit"], paths["profile"], resamples=50)
    return paths


def _agree(fitted: dict[str, Path], rows: str, tmp_path: Path) -> dict:
    report = tmp_path / f"{rows}.json"
    assert main(["agree", str(fitted[rows]), *F1, "--label", "label", "--resamples", "50",
                 "--profile", str(fitted["profile"]), "--json", str(report), "-q"]) == 0
    return json.loads(report.read_text())


def test_agree_measures_the_profile_and_warns_in_sample(
        fitted: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    capsys.readouterr()
    same = _agree(fitted, "fit", tmp_path)["profile"]
    printed = capsys.readouterr()
    assert same["in_sample"] is True
    assert "WARNING" in printed.out and "not held out" in printed.err
    other = _agree(fitted, "other", tmp_path)["profile"]
    assert other["in_sample"] is False and "WARNING" not in capsys.readouterr().out
    # the figures against an independent computation of the profile's columns on these rows
    profile = json.loads(fitted["profile"].read_text())
    rows = [json.loads(line) for line in fitted["other"].read_text().splitlines()]
    scored = tmp_path / "scored.jsonl"
    assert main(["score", str(fitted["other"]), *F1, "--out", str(scored), "-q"]) == 0
    raw = np.array([json.loads(line)["accuracy"] for line in scored.read_text().splitlines()])
    p = Tuning(profile["threshold"], profile["calibration"]).probabilities(raw)
    y = np.array([float(r["label"]) for r in rows])
    figures = {s["name"]: s["value"] for s in other["decision"]["statistics"]}
    assert figures["cohen_kappa"] == pytest.approx(
        cohen_kappa_score(y, (p >= profile["threshold"]).astype(float)))
    calibrated = {s["name"]: s["value"] for s in other["calibrated"]["statistics"]}
    assert calibrated["auroc"] == pytest.approx(roc_auc_score(y, p))


def test_a_profile_for_another_metric_is_refused_by_agree(
        fitted: dict[str, Path], capsys: pytest.CaptureFixture) -> None:
    capsys.readouterr()
    assert main(["agree", str(fitted["fit"]), "--metric", "accuracy", "--label", "label",
                 "--profile", str(fitted["profile"]), "-q"]) == 2
    error = capsys.readouterr().err.strip()
    assert "fitted for accuracy with options" in error and "\n" not in error


def test_gates_read_the_profile_columns(fitted: dict[str, Path], tmp_path: Path,
                                        capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "scored.jsonl"
    profile = ["--profile", str(fitted["profile"])]
    report = tmp_path / "gates.xml"
    code = main(["score", str(fitted["other"]), *F1, *profile, "--out", str(out), "-q",
                 "--gate", "accuracy_decision>=0.2", "--gate", "accuracy_calibrated>=0.95",
                 "--junit-xml", str(report)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    decisions = np.mean([r["accuracy_decision"] for r in rows])
    calibrated = np.mean([r["accuracy_calibrated"] for r in rows])
    assert 0.2 <= decisions and calibrated < 0.95  # so one gate holds and the other fails
    assert code == 1
    printed = capsys.readouterr().out
    lines = {line.split()[0]: line for line in printed.splitlines() if line.strip()}
    assert f"{decisions:.4f}" in lines["accuracy_decision>=0.2"]
    assert lines["accuracy_decision>=0.2"].endswith("pass")
    assert f"{calibrated:.4f}" in lines["accuracy_calibrated>=0.95"]
    assert lines["accuracy_calibrated>=0.95"].endswith("FAIL")
    gate = parse_gate("accuracy_decision>=0.5")
    assert (gate.metric, gate.profile, gate.column()) == ("accuracy", "decision",
                                                          "accuracy_decision")
    with pytest.raises(UserInputError, match="outside"):
        parse_gate("accuracy_calibrated>=1.5")
    capsys.readouterr()
    assert main(["score", str(fitted["other"]), *F1, "--out", str(tmp_path / "x.jsonl"),
                 "-q", "--gate", "accuracy_decision>=0.2"]) == 2
    error = capsys.readouterr().err.strip()
    assert "give --profile" in error and "\n" not in error


def test_compare_applies_the_profile_to_both_runs(fitted: dict[str, Path], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    rows = [json.loads(line) for line in fitted["fit"].read_text().splitlines()]
    for row in rows[:40]:  # run B answers 40 questions with the gold answer itself
        reference = row["reference"]
        row["prediction"] = reference if isinstance(reference, str) else reference[0]
    better = tmp_path / "better.jsonl"
    better.write_text("".join(json.dumps(r) + "\n" for r in rows))
    scored = {name: tmp_path / f"scored_{name}.jsonl" for name in ("a", "b", "ap")}
    assert main(["score", str(fitted["fit"]), *F1, "--out", str(scored["a"]), "-q"]) == 0
    assert main(["score", str(better), *F1, "--out", str(scored["b"]), "-q"]) == 0
    report = tmp_path / "compare.json"
    assert main(["compare", str(scored["a"]), str(scored["b"]), "--profile",
                 str(fitted["profile"]), "--resamples", "100", "--json", str(report),
                 "-q"]) == 0
    columns = {c["column"]: c for c in json.loads(report.read_text())["columns"]}
    assert {"accuracy", "accuracy_calibrated", "accuracy_decision"} <= set(columns)
    profile = json.loads(fitted["profile"].read_text())
    tuning = Tuning(profile["threshold"], profile["calibration"])

    def decided(path: Path) -> np.ndarray:
        raw = np.array([json.loads(line)["accuracy"] for line in path.read_text().splitlines()])
        return (tuning.probabilities(raw) >= profile["threshold"]).astype(float)

    expected = decided(scored["b"]).mean() - decided(scored["a"]).mean()
    assert columns["accuracy_decision"]["delta"] == pytest.approx(expected)
    # scored first with --metric: the same columns
    again = tmp_path / "again.json"
    assert main(["compare", str(fitted["fit"]), str(better), *F1, "--profile",
                 str(fitted["profile"]), "--resamples", "100", "--json", str(again),
                 "-q"]) == 0
    found = {c["column"]: c for c in json.loads(again.read_text())["columns"]}
    assert found["accuracy_decision"]["delta"] == pytest.approx(expected)
    # a run that already carries the columns is refused in one line
    assert main(["score", str(fitted["fit"]), *F1, "--profile", str(fitted["profile"]),
                 "--out", str(scored["ap"]), "-q"]) == 0
    capsys.readouterr()
    assert main(["compare", str(scored["ap"]), str(scored["b"]), "--profile",
                 str(fitted["profile"]), "-q"]) == 2
    error = capsys.readouterr().err.strip()
    assert "already has accuracy_calibrated" in error and "\n" not in error
