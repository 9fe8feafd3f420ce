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
from shared.analysis.calibration_figures import calibration_report, report_table, suggest_rows
from shared.analysis.calibration_maps import (
    apply_map,
    brier,
    expected_calibration_error,
    fit_calibration,
    load_map,
)
from shared.analysis.ppi import classical_mean, label_scale, ppi_intervals, ppi_mean
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


def _case(case: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """0/1 labels, 1-5 ratings, a scorer that anti-correlates (lam clipped to 0) and one equal
    to the labels (lam clipped to 1)."""
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
        f, f_u = y.copy(), (rng.random(big_n) < 0.5) + 0.001 * rng.random(big_n)
    return f, y, f_u, alpha


@pytest.mark.parametrize("case", range(8))
def test_the_estimate_is_ppi_python_cross_fitted(case: int) -> None:
    """The value is the reference's power-tuned estimate, cross-fitted: row ``i``'s ``lam_i``
    is the one ``ppi_py`` fits (``lam=None``) on the other labelled rows, and the value is the
    mean over the rows of ``ppi_py.ppi_mean_pointestimate`` of row ``i`` alone at ``lam_i``."""
    ppi_py = _reference()
    f, y, f_u, alpha = _case(case)

    def estimate(rows: np.ndarray, lam: float | None) -> float:
        return float(np.ravel(ppi_py.ppi_mean_pointestimate(y[rows], f[rows], f_u, lam=lam))[0])

    terms = []
    for i in range(y.size):
        others = np.arange(y.size) != i
        plain, full = estimate(others, 0.0), estimate(others, 1.0)
        lam_i = (estimate(others, None) - plain) / (full - plain)
        terms.append(estimate(np.arange(y.size) == i, lam_i))
    ours = shared.prediction_powered_mean(f.tolist(), y.tolist(), f_u.tolist(), alpha=alpha)
    assert set(ours) == {"value", "low", "high"}
    assert ours["value"] == pytest.approx(float(np.mean(terms)), abs=1e-9)
    if case == 5:  # every lam_i is clipped to 0: the reference's estimate, the labels' mean
        assert ours["value"] == pytest.approx(estimate(np.arange(y.size) >= 0, None), abs=1e-12)
        assert ours["value"] == pytest.approx(y.mean(), abs=1e-12)


def _wilson(count: int, n: int, alpha: float) -> tuple[float, float]:
    """statsmodels' Wilson interval at the level whose normal quantile is t(n - 1)'s."""
    from scipy.stats import norm, t
    from statsmodels.stats.proportion import proportion_confint

    level = 2 * norm.sf(t.ppf(1 - alpha / 2, n - 1))
    low, high = proportion_confint(count, n, alpha=level, method="wilson")
    return float(low), float(high)


@pytest.mark.parametrize(("labels", "alpha"), [([0] * 5, 0.05), ([1] * 5, 0.05),
                                               ([0] * 29 + [1], 0.05), ([1, 0] * 20, 0.1)])
def test_with_no_power_the_interval_is_wilsons_with_students_quantile(labels: list[int],
                                                                      alpha: float) -> None:
    """The documented difference from the reference: with 0/1 labels and scores that carry
    nothing (lam = 0) the interval is Wilson's score interval with Student's t quantile, so 5
    equal labels give a real interval inside [0, 1], where the reference's is one point (or
    leaves [0, 1])."""
    ppi_py = _reference()
    y = np.array(labels, dtype=float)
    f, f_u = np.full(y.size, 0.4), np.full(50, 0.4)
    ours = shared.prediction_powered_mean(f, y, f_u, alpha=alpha)
    low, high = _wilson(int(y.sum()), y.size, alpha)
    assert (ours["low"], ours["high"]) == pytest.approx((low, high), abs=1e-9)
    assert classical_mean(y, alpha)["low"] == pytest.approx(low, abs=1e-9)
    assert 0 <= ours["low"] < ours["high"] <= 1
    ref_low, ref_high = (float(np.ravel(x)[0]) for x in ppi_py.classical_mean_ci(y, alpha=alpha))
    if y.min() == y.max():
        assert ref_low == ref_high and ours["high"] - ours["low"] > 0.3


def test_with_many_labels_the_interval_is_the_references() -> None:
    """At 400 labels and an informative scorer the interval is the reference's normal one to
    within 3% of its width (the corrections are small-sample ones)."""
    ppi_py = _reference()
    rng = np.random.default_rng(5)
    y = (rng.random(1400) < 0.4).astype(float)
    s = np.clip(0.3 + 0.4 * y + rng.normal(0, 0.2, y.size), 0, 1)
    ours = shared.prediction_powered_mean(s[:400], y[:400], s[400:])
    low, high = (float(np.ravel(x)[0]) for x in ppi_py.ppi_mean_ci(y[:400], s[:400], s[400:],
                                                                   alpha=0.05))
    width = high - low
    assert abs(ours["low"] - low) < 0.03 * width and abs(ours["high"] - high) < 0.03 * width


def test_facade_and_contract() -> None:
    from shared.analysis.ppi import prediction_powered_mean

    assert shared.prediction_powered_mean is prediction_powered_mean
    found = shared.prediction_powered_mean([0.9, 0.1, 0.8], [1, 0, 1], [0.7, 0.2])
    assert found["low"] <= found["value"] <= found["high"]
    # booleans are 0/1 labels
    assert shared.prediction_powered_mean([0.9, 0.1, 0.8], [True, False, True],
                                          [0.7, 0.2]) == found


# ------------------------------------------------------------------------ by simulation


def _simulated(kind: str, n: int, splits: int, seed: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``splits`` samples of ``n`` labelled and 500 unlabelled rows: 0/1 labels with P(1) =
    ``kind`` (a number), or graded ones (0..1 in quarters, skewed low); a biased, noisy judge
    (too low on the 1s, too high on the 0s)."""
    rng = np.random.default_rng([seed, n])
    shape = (splits, n + 500)
    if kind == "graded":
        grades, weights = np.linspace(0, 1, 5), np.array([0.4, 0.3, 0.15, 0.1, 0.05])
        y, truth = rng.choice(grades, size=shape, p=weights), float(grades @ weights)
    else:
        y, truth = (rng.random(shape) < float(kind)).astype(float), float(kind)
    f = np.clip(0.3 + 0.4 * y + rng.normal(0, 0.3, shape), 0, 1)
    return f[:, :n], y[:, :n], f[:, n:], truth


COVERAGE_SPLITS = 4000
# the nominal level less three binomial standard errors of the simulated share (0.940)
COVERAGE_FLOOR = 0.95 - 3 * math.sqrt(0.95 * 0.05 / COVERAGE_SPLITS)


@pytest.mark.parametrize("kind", ["0.35", "graded"])
def test_the_interval_keeps_its_level_from_10_labels(kind: str) -> None:
    """Over seeded simulations at 10, 30, 100 and 400 labels the 95% interval covers the true
    mean at least at its level (less binomial noise), and stays inside [0, 1]; the
    one-sample function gives what the vectorised one does."""
    for n in (10, 30, 100, 400):
        f, y, f_u, truth = _simulated(kind, n, COVERAGE_SPLITS, seed=11)
        found = ppi_intervals(f, y, f_u)
        covered = np.mean((found["low"] <= truth) & (truth <= found["high"]))
        assert covered >= COVERAGE_FLOOR, (kind, n, covered)
        assert found["low"].min() >= 0 and found["high"].max() <= 1
        one = shared.prediction_powered_mean(f[7], y[7], f_u[7])
        assert (one["low"], one["high"]) == pytest.approx((found["low"][7], found["high"][7]))


@pytest.mark.parametrize("p", [0.02, 0.98])
def test_labels_nearly_all_equal_keep_the_level(p: float) -> None:
    """With P(label) near 0 or 1 most samples of 10 or 30 labels are all equal: the interval
    is never a point and still covers (the reference's normal interval covers about 20% and
    55% here)."""
    for n in (10, 30):
        f, y, f_u, truth = _simulated(str(p), n, COVERAGE_SPLITS, seed=12)
        found = ppi_intervals(f, y, f_u)
        assert np.mean((found["low"] <= truth) & (truth <= found["high"])) >= COVERAGE_FLOOR
        assert (found["high"] - found["low"]).min() > 0.05


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
        d[labelled], (y_b.astype(float) - y_a.astype(float))[labelled], d[~labelled],
        bounds=(-1, 1))  # a difference of two labels on 0..1
    assert -1 <= entry["low"] <= entry["high"] <= 1
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


def test_the_demo_tab_shows_the_estimates(tmp_path: Path) -> None:
    from shared.demo.calibrate_tab import handle

    y, s = _population("informative", n=150)
    labelled = np.random.default_rng(9).random(150) < 0.3
    path = tmp_path / "scored.jsonl"
    path.write_text("".join(json.dumps({"id": i, "accuracy": float(s[i]), "label": bool(y[i])
                                        if labelled[i] else None}) + "\n" for i in range(150)))
    status, table, report = handle(str(path), "", "label", folder=tmp_path)
    assert "jm-ok" in status and report is not None and Path(report).is_file()
    expected = shared.prediction_powered_mean(s[labelled], y[labelled], s[~labelled])
    assert table["estimate"].tolist() == [
        "prediction-powered", "prediction-powered, calibrated scores (cross-fitted)",
        "labels alone", "judge only"]
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


# ------------------------------------------------------- the estimate from calibrated scores


def test_each_labelled_rows_calibrated_score_comes_from_a_map_fitted_without_it() -> None:
    """``cross_fitted_scores``: fold ``k``'s map is scikit-learn's isotonic regression on the
    labelled rows outside fold ``k``; unlabelled rows get the mean of the fold maps."""
    from sklearn.isotonic import IsotonicRegression

    from shared.analysis.calibration_maps import cross_fitted_scores

    y, s = _population("miscalibrated", n=200)
    found = cross_fitted_scores("isotonic", s[:80], y[:80], s[80:], binary=True, seed=4)
    assert sorted(set(found["fold"].tolist())) == [0, 1, 2, 3, 4]
    expected_unlabelled = np.zeros(120)
    for k in range(5):
        outside = found["fold"] != k
        reference = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(
            s[:80][outside], y[:80][outside])
        assert found["labelled"][~outside] == pytest.approx(reference.predict(s[:80][~outside]))
        expected_unlabelled += reference.predict(s[80:]) / 5
    assert found["unlabelled"] == pytest.approx(expected_unlabelled)


def test_the_cross_fitted_calibrated_estimate_keeps_its_level() -> None:
    """Over 300 seeded splits of 60 labels, the estimate from cross-fitted isotonic scores
    covers the full set's mean at the 95% level (less three binomial standard errors)."""
    from shared.analysis.calibration_maps import cross_fitted_scores

    y, s = _population("miscalibrated")
    truth, splits, covered = y.mean(), 300, 0
    for seed in range(splits):
        order = np.random.default_rng(seed).permutation(y.size)
        labelled, unlabelled = order[:LABELLED], order[LABELLED:]
        crossed = cross_fitted_scores("isotonic", s[labelled], y[labelled], s[unlabelled],
                                      binary=True, seed=seed)
        found = shared.prediction_powered_mean(crossed["labelled"], y[labelled],
                                               crossed["unlabelled"])
        covered += found["low"] <= truth <= found["high"]
    assert covered / splits >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / splits)


def test_calibrate_reports_the_cross_fitted_calibrated_estimate() -> None:
    from shared.analysis.calibration_maps import cross_fitted_scores

    y, s = _population("miscalibrated")
    labels = [float(v) if i % 6 == 0 else None for i, v in enumerate(y)]
    report = calibration_report(s.tolist(), labels, seed=3)
    found = report["calibrated_estimate"]
    assert found["cross_fitted"] is True and found["method"] == report["calibration"]["method"]
    labelled = np.arange(y.size) % 6 == 0
    crossed = cross_fitted_scores(found["method"], s[labelled], y[labelled], s[~labelled],
                                  binary=True, folds=found["folds"], seed=3)
    expected = shared.prediction_powered_mean(crossed["labelled"], y[labelled],
                                              crossed["unlabelled"])
    assert {k: found[k] for k in expected} == pytest.approx(expected)
    assert "cross-fitted over 5 folds" in report_table(report)
