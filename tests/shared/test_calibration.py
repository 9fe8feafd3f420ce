"""The prediction-powered mean label (``shared.prediction_powered_mean``) and ``calibrate``:
the estimate against the authors' reference implementation (ppi-python), the interval's
coverage over many seeded splits, its width against the labels alone for an uninformative and
an informative scorer, the refusals, the calibration map's held-out ECE, and the CLI report
(its JSON equals the Python API on the same split)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import shared
from shared.analysis.calibration_figures import calibration_report, suggest_rows
from shared.analysis.calibration_maps import (
    apply_map,
    brier,
    expected_calibration_error,
    fit_calibration,
    load_map,
)
from shared.analysis.ppi import classical_mean, label_scale, ppi_mean
from shared.base.errors import UserInputError
from shared.cli.main import main

REPO = Path(__file__).resolve().parents[2]
EVOUNA = REPO / "bench" / "agreement" / "data" / "answer_equivalence_evouna_nq.jsonl"
SPLITS = 1000  # seeded splits per simulation
LABELLED = 60


def _population(kind: str, n: int = 600, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """0/1 labels and a scorer's scores: ``noise`` (independent of the label), ``informative``
    (close to the label) or ``miscalibrated`` (informative, but far below P(label))."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.62).astype(float)
    if kind == "noise":
        s = rng.random(n)
    elif kind == "informative":
        s = np.clip(0.8 * y + 0.2 * rng.random(n), 0, 1)
    else:
        s = np.where(y == 1, rng.beta(2, 5, n), rng.beta(1, 8, n))
    return y, s


def _splits(y: np.ndarray, s: np.ndarray, n: int = LABELLED):
    for seed in range(SPLITS):
        order = np.random.default_rng(seed).permutation(y.size)
        labelled, unlabelled = order[:n], order[n:]
        yield s[labelled], y[labelled], s[unlabelled]


# ------------------------------------------------------------------ against the reference


def _reference() -> object:
    return pytest.importorskip("ppi_py", reason="ppi-python (requirements-test.txt)")


@pytest.mark.parametrize("case", range(8))
def test_equals_ppi_python_on_fixed_inputs(case: int) -> None:
    """Value and interval equal ``ppi_py.ppi_mean_pointestimate`` / ``ppi_mean_ci`` (power
    tuned, ``lam=None``), on 0/1 labels, 1-5 ratings, a scorer that anti-correlates (lam
    clipped to 0) and one equal to the labels (lam 1); the classical interval equals
    ``classical_mean_ci``."""
    ppi_py = _reference()
    rng = np.random.default_rng(case)
    n, big_n = int(rng.integers(5, 120)), int(rng.integers(3, 500))
    alpha = [0.05, 0.1, 0.01, 0.2][case % 4]
    if case in (0, 1, 2):
        y = rng.integers(0, 2, n).astype(float)
        f = np.clip(0.5 * y + 0.6 * rng.random(n), 0, 1)
        f_u = rng.random(big_n)
    elif case in (3, 4):  # 1-5 ratings against scores on the same scale
        y = rng.integers(1, 6, n).astype(float)
        f = np.clip(y + rng.normal(0, 1.2, n), 1, 5)
        f_u = rng.uniform(1, 5, big_n)
    elif case == 5:  # anti-correlated: lam clipped to 0, the labels alone
        y = rng.integers(0, 2, n).astype(float)
        f, f_u = 1 - y + 0.01 * rng.random(n), rng.random(big_n)
    else:  # the scorer is the label: lam clipped to 1
        y = rng.integers(0, 2, n).astype(float)
        f, f_u = y.copy(), (rng.random(big_n) < 0.5).astype(float)
    ours = shared.prediction_powered_mean(f.tolist(), y.tolist(), f_u.tolist(), alpha=alpha)
    assert set(ours) == {"value", "low", "high"}
    low, high = ppi_py.ppi_mean_ci(y, f, f_u, alpha=alpha)
    value = ppi_py.ppi_mean_pointestimate(y, f, f_u)
    assert ours["value"] == pytest.approx(float(np.ravel(value)[0]), abs=1e-12)
    assert ours["low"] == pytest.approx(float(np.ravel(low)[0]), abs=1e-12)
    assert ours["high"] == pytest.approx(float(np.ravel(high)[0]), abs=1e-12)
    c_low, c_high = ppi_py.classical_mean_ci(y, alpha=alpha)
    classical = classical_mean(y, alpha)
    assert classical["low"] == pytest.approx(float(np.ravel(c_low)[0]), abs=1e-12)
    assert classical["high"] == pytest.approx(float(np.ravel(c_high)[0]), abs=1e-12)


def test_facade_and_contract() -> None:
    from shared.analysis.ppi import prediction_powered_mean

    assert shared.prediction_powered_mean is prediction_powered_mean
    found = shared.prediction_powered_mean([0.9, 0.1, 0.8], [1, 0, 1], [0.7, 0.2])
    assert found["low"] <= found["value"] <= found["high"]
    # booleans are 0/1 labels
    assert shared.prediction_powered_mean([0.9, 0.1, 0.8], [True, False, True],
                                          [0.7, 0.2]) == found


# ------------------------------------------------------------------------ by simulation


def test_coverage_over_seeded_splits() -> None:
    """The 95% interval covers the full set's mean label in at least 95% of the splits, less
    three binomial standard errors, for an uninformative, an informative and a miscalibrated
    scorer."""
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / SPLITS)
    for kind in ("noise", "informative", "miscalibrated"):
        y, s = _population(kind)
        truth = y.mean()
        covered = sum(r["low"] <= truth <= r["high"]
                      for r in (shared.prediction_powered_mean(*split) for split in _splits(y, s)))
        assert covered / SPLITS >= floor, (kind, covered / SPLITS)


def _width_ratios(kind: str) -> np.ndarray:
    y, s = _population(kind)
    ratios = []
    for f, labels, f_u in _splits(y, s):
        found = ppi_mean(f, labels, f_u)
        classical = found["classical"]
        ratios.append((found["high"] - found["low"]) / (classical["high"] - classical["low"]))
    return np.array(ratios)


def test_never_much_wider_than_the_labels_alone_when_the_scores_are_noise() -> None:
    ratios = _width_ratios("noise")
    assert ratios.mean() <= 1.01
    assert ratios.max() <= 1.05


def test_much_narrower_than_the_labels_alone_when_the_scores_inform() -> None:
    ratios = _width_ratios("informative")
    assert ratios.mean() <= 0.6
    assert np.quantile(ratios, 0.99) <= 0.75
    found = ppi_mean(*next(_splits(*_population("informative"))))
    assert found["sample_size_gain"] > 3  # worth more than three times the labels


# -------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("args", "words"), [
    (([0.5], [1], [0.4, 0.2]), "at least 2"),
    (([], [], [0.4]), "at least 2"),
    (([0.5, 0.6], [1, 0], []), "no unlabelled row"),
    (([0.5, math.nan], [1, 0], [0.3]), "labelled_scores[1]"),
    (([0.5, 0.6], [1, 0], [0.3, math.inf]), "unlabelled_scores[1]"),
    (([0.5, 0.6], [1, None], [0.3]), "labels[1]"),
    (([0.5, 0.6, 0.7], [1, 0], [0.3]), "3 labelled scores but 2 labels"),
    ((["a", "b"], [1, 0], [0.3]), "expected numbers"),
])
def test_refusals_are_one_line(args: tuple, words: str) -> None:
    with pytest.raises(UserInputError) as raised:
        shared.prediction_powered_mean(*args)
    assert words in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, True, "0.05"])
def test_alpha_outside_zero_one_is_refused(alpha: object) -> None:
    with pytest.raises(UserInputError, match="alpha"):
        shared.prediction_powered_mean([0.5, 0.6], [1, 0], [0.3], alpha=alpha)


def test_ratings_map_onto_the_scores_scale() -> None:
    ratings = np.array([1.0, 3.0, 5.0, np.nan])
    scaled, used = label_scale(ratings, (1, 5))
    assert used == (1.0, 5.0) and scaled[:3].tolist() == [0.0, 0.5, 1.0]
    assert label_scale(np.array([0.0, 1.0]))[1] is None
    with pytest.raises(UserInputError, match="outside"):
        label_scale(np.array([0.0, 7.0]), (1, 5))


# ----------------------------------------------------------------------------- calibration


def test_the_map_lowers_the_held_out_ece_of_a_miscalibrated_scorer() -> None:
    """Scores far below P(label) (the cube of a calibrated probability): the chosen map's
    out-of-fold predictions have a lower ECE and Brier score than the raw scores."""
    rng = np.random.default_rng(3)
    p = rng.random(300)
    y = (rng.random(300) < p).astype(float)
    s = p ** 3
    found = fit_calibration(s, y, binary=True, seed=0)
    assert found["method"] in ("isotonic", "sigmoid") and found["folds"] == 5
    assert found["ece"]["before"] == pytest.approx(expected_calibration_error(s, y))
    assert found["ece"]["after"] < 0.5 * found["ece"]["before"]
    assert found["brier"]["after"] < found["brier"]["before"] == pytest.approx(brier(s, y))
    assert set(found["cv_brier"]) == {"isotonic", "sigmoid"}
    assert found["cv_brier"][found["method"]] == min(found["cv_brier"].values())
    calibrated = apply_map(found["map"], s)
    assert expected_calibration_error(calibrated, y) < found["ece"]["before"]
    assert sum(b["rows"] for b in found["reliability"]["after"]) == 300


def test_no_map_with_too_few_rows_of_a_label() -> None:
    found = fit_calibration([0.1, 0.8, 0.9], [0, 1, 1], binary=True)
    assert found["method"] is None and "at least 2 of each" in found["note"]


def test_report_fields_and_its_estimate_equals_the_api() -> None:
    y, s = _population("miscalibrated", n=200)
    labels: list = [None] * 200
    for i in np.random.default_rng(1).choice(200, 50, replace=False):
        labels[i] = bool(y[i])
    scores: list = s.tolist()
    scores[3] = None  # unmeasured: left out and counted
    report = calibration_report(scores, labels, alpha=0.1)
    labelled = [i for i in range(200) if labels[i] is not None and i != 3]
    unlabelled = [i for i in range(200) if labels[i] is None and i != 3]
    expected = shared.prediction_powered_mean([s[i] for i in labelled],
                                              [float(labels[i]) for i in labelled],
                                              [s[i] for i in unlabelled], alpha=0.1)
    assert report["estimate"] == expected
    assert report["n_labelled"] == len(labelled) and report["n_unlabelled"] == len(unlabelled)
    assert report["unmeasured"] == 1
    assert report["judge_only"]["value"] == pytest.approx(np.mean(np.delete(s, 3)))
    assert report["classical"] == {k: classical_mean([float(labels[i]) for i in labelled],
                                                     0.1)[k] for k in ("value", "low", "high")}
    assert report["calibration"]["method"] in ("isotonic", "sigmoid")
    assert report["sample_size_gain"] == pytest.approx(
        report["effective_sample_size"] / report["n_labelled"])


# ------------------------------------------------------------------------------------ CLI


def _evouna(tmp_path: Path, rows: int = 120, labelled: int = 40) -> tuple[Path, list[dict]]:
    """EVOUNA rows, the human label kept on a seeded random ``labelled`` of them."""
    data = [json.loads(line) for line in EVOUNA.read_text().splitlines()[:rows]]
    keep = set(np.random.default_rng(5).choice(rows, labelled, replace=False).tolist())
    for i, row in enumerate(data):
        row["human"] = row.pop("label") if i in keep else None
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in data))
    return path, data


def test_calibrate_cli_json_equals_the_python_api(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    path, data = _evouna(tmp_path)
    report, scored, saved = tmp_path / "r.json", tmp_path / "s.jsonl", tmp_path / "map.json"
    code = main(["calibrate", str(path), "--metric", "accuracy", "--label", "human",
                 "--option", "mode=contains", "--json", str(report), "--out", str(scored),
                 "--save-calibration", str(saved), "--html", str(tmp_path / "r.html"), "-q"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "estimate (prediction-powered)" in printed and "effective sample size" in printed
    found = json.loads(report.read_text())
    for key in ("estimate", "classical"):
        assert set(found[key]) == {"value", "low", "high"}
    assert set(found["judge_only"]) == {"value"}
    assert {"method", "ece", "brier"} <= set(found["calibration"])
    assert set(found["calibration"]["ece"]) == {"before", "after"}
    rows = [json.loads(line) for line in scored.read_text().splitlines()]
    labelled = [r for r in rows if r["human"] is not None]
    unlabelled = [r for r in rows if r["human"] is None]
    assert (found["n_labelled"], found["n_unlabelled"]) == (len(labelled), len(unlabelled))
    args = ([r["accuracy"] for r in labelled], [float(r["human"]) for r in labelled],
            [r["accuracy"] for r in unlabelled])
    assert found["estimate"] == shared.prediction_powered_mean(*args)
    assert found["judge_only"]["value"] == pytest.approx(np.mean([r["accuracy"] for r in rows]))
    html = (tmp_path / "r.html").read_text()
    assert "prediction-powered" in html and html.count("<svg") == 2
    # the saved map, applied by `score --calibration`
    out = tmp_path / "scored.jsonl"
    assert main(["score", str(path), "--metric", "accuracy", "--option", "mode=contains",
                 "--out", str(out), "--calibration", str(saved), "-q"]) == 0
    again = [json.loads(line) for line in out.read_text().splitlines()]
    expected = apply_map(load_map(saved), [r["accuracy"] for r in again])
    assert [r["accuracy_calibrated"] for r in again] == pytest.approx(expected.tolist())


def test_gate_on_the_corrected_estimate(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path, _ = _evouna(tmp_path)
    out, report = tmp_path / "s.jsonl", tmp_path / "r.json"
    main(["calibrate", str(path), "--metric", "accuracy", "--label", "human", "--option",
          "mode=contains", "--json", str(report), "-q"])
    estimate = json.loads(report.read_text())["estimate"]
    base = ["score", str(path), "--metric", "accuracy", "--option", "mode=contains", "--out",
            str(out), "--gate-on", "corrected", "--label", "human", "-q", "--gate"]
    capsys.readouterr()
    assert main([*base, f"accuracy>={estimate['low'] - 1e-6}"]) == 0
    assert "(corrected)" in capsys.readouterr().out
    assert main([*base, f"accuracy>={estimate['low'] + 1e-6}"]) == 1
    assert main([*base, f"accuracy<={estimate['high'] + 1e-6}"]) == 0
    without_label = [a for a in base if a not in ("--label", "human")]
    assert main([*without_label, "accuracy>=0.1"]) == 2
    assert "--label" in capsys.readouterr().err


def test_suggest_is_seeded_uniform_and_skips_labelled_rows(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path, data = _evouna(tmp_path)
    assert main(["calibrate", str(path), "--label", "human", "--suggest", "10", "--seed",
                 "4"]) == 0
    printed = capsys.readouterr().out.split()
    assert len(printed) == len(set(printed)) == 10
    unlabelled_ids = {r["id"] for r in data if r["human"] is None}
    assert set(printed) <= unlabelled_ids
    import datasets

    dataset = datasets.Dataset.from_list(data)
    assert suggest_rows(dataset, 10, seed=4, label="human") == printed
    assert suggest_rows(dataset, 10, seed=5, label="human") != printed
    # uniform: over many seeds every unlabelled row is drawn about equally often
    counts = np.zeros(len(data))
    for seed in range(300):
        for i in suggest_rows(dataset.remove_columns("id"), 8, seed=seed, label="human"):
            counts[i] += 1
    assert counts[[r["human"] is not None for r in data]].sum() == 0
    drawn = counts[[r["human"] is None for r in data]]
    assert drawn.min() > 0 and drawn.max() < 3 * drawn.mean()
    assert main(["calibrate", str(path), "--label", "human", "--suggest", "500"]) == 2


def test_compare_reports_the_corrected_paired_difference(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    n = 200
    y_a, y_b = rng.random(n) < 0.5, rng.random(n) < 0.65
    s_a = np.clip(0.6 * y_a + 0.4 * rng.random(n), 0, 1)
    s_b = np.clip(0.6 * y_b + 0.4 * rng.random(n), 0, 1)
    labelled = rng.random(n) < 0.25
    for name, y, s in (("a", y_a, s_a), ("b", y_b, s_b)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(
            {"id": i, "question": "q", "prediction": "p", "accuracy": float(s[i]),
             "human": bool(y[i]) if labelled[i] else None}) + "\n" for i in range(n)))
    report = tmp_path / "c.json"
    assert main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--label",
                 "human", "--json", str(report)]) == 0
    (entry,) = json.loads(report.read_text())["corrected"]
    d = s_b - s_a
    expected = shared.prediction_powered_mean(
        d[labelled], (y_b.astype(float) - y_a.astype(float))[labelled], d[~labelled])
    assert {k: entry[k] for k in expected} == pytest.approx(expected)
    assert entry["judge_delta"] == pytest.approx(d.mean())
    assert (entry["n_labelled"], entry["n_unlabelled"]) == (labelled.sum(), (~labelled).sum())


def test_agree_shows_the_corrected_estimate(tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    path, _ = _evouna(tmp_path)
    report, page = tmp_path / "a.json", tmp_path / "a.html"
    assert main(["agree", str(path), "--metric", "accuracy", "--label", "human", "--option",
                 "mode=contains", "--resamples", "50", "--json", str(report), "--html",
                 str(page), "-q"]) == 0
    assert "corrected mean label" in capsys.readouterr().out
    corrected = json.loads(report.read_text())["corrected"]
    assert corrected["n_labelled"] == 40 and corrected["n_unlabelled"] == 80
    assert corrected["low"] <= corrected["value"] <= corrected["high"]
    html = page.read_text()
    assert "The mean label, corrected" in html and f"{corrected['value']:.4f}" in html


def test_the_demo_tab_shows_the_three_estimates(tmp_path: Path) -> None:
    from shared.demo.calibrate_tab import handle

    y, s = _population("informative", n=150)
    labelled = np.random.default_rng(9).random(150) < 0.3
    path = tmp_path / "scored.jsonl"
    path.write_text("".join(json.dumps({"id": i, "accuracy": float(s[i]), "label": bool(y[i])
                                        if labelled[i] else None}) + "\n" for i in range(150)))
    status, table, report = handle(str(path), "", "label", folder=tmp_path)
    assert "jm-ok" in status and report is not None and Path(report).is_file()
    expected = shared.prediction_powered_mean(s[labelled], y[labelled], s[~labelled])
    assert table["estimate"].tolist() == ["prediction-powered", "labels alone", "judge only"]
    assert table["mean label"][0] == f"{expected['value']:.4f}"
    assert table["95% interval"][0] == f"[{expected['low']:.4f}, {expected['high']:.4f}]"
    status, table, report = handle(str(path), "accuracy", "nope", folder=tmp_path)
    assert "jm-error" in status and "no label column &#x27;nope&#x27;" in status and report is None


def test_cli_refusals_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path, _ = _evouna(tmp_path, rows=20, labelled=5)
    bad_map = tmp_path / "map.json"
    bad_map.write_text('{"format": "something else"}')
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "judge-metrics calibration map 1", "metric": "bleu",
                                 "column": "bleu", "method": "linear", "slope": 1.0,
                                 "intercept": 0.0}))
    out = str(tmp_path / "o.jsonl")
    bare = tmp_path / "bare.jsonl"
    bare.write_text('{"question": "q", "prediction": "p", "accuracy": 1.0, "human": true}\n')
    for argv, words in (
        (["calibrate", str(path), "--label", "human"], "--metric is required"),
        (["calibrate", str(path), "--metric", "accuracy", "--label", "human", "--alpha", "1"],
         "--alpha"),
        (["calibrate", str(path), "--metric", "accuracy", "--label", "human", "--label-range",
          "5:1"], "--label-range"),
        (["calibrate", str(path), "--metric", "accuracy", "--label", "nope"], "nope"),
        (["score", str(path), "--metric", "accuracy", "--out", out, "--calibration",
          str(bad_map)], "not a calibration map"),
        (["score", str(path), "--metric", "accuracy", "--out", out, "--calibration",
          str(other)], "fitted on 'bleu'"),
        (["compare", str(path), str(path), "--label", "nope"], "'nope'"),
        (["compare", str(bare), str(bare), "--label", "human"], "pair the rows by a key"),
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert words in err and "\n" not in err, (argv, err)
