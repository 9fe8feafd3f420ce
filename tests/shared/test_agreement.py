"""shared.analysis.agreement and `judge-metrics agree`: every statistic against scipy /
scikit-learn on
generated data, the seeded bootstrap, label checks, unmeasured rows, and `agree` end to end on
small slices of the three labelled sets with the embedded defaults.

Expected values are computed by scipy / scikit-learn inside the tests, on the same rows."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import datasets
import evaluate
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau, pearsonr, spearmanr
from sklearn.metrics import (
    balanced_accuracy_score,
    cohen_kappa_score,
    f1_score,
    roc_auc_score,
    roc_curve,
)

from shared import agreement, stats
from shared.analysis.agreement import (
    ConstantLabelError,
    LabelError,
    MissingLabelError,
    MixedLabelError,
    compare,
)
from shared.analysis.agreement_stats import (
    auroc,
    balanced_accuracy,
    best_balanced_accuracy,
    cohen_kappa,
    f1,
)
from shared.cli.main import main
from shared.kit.registry import DECISION_THRESHOLDS, METRICS

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "bench" / "agreement" / "data"
FAST = {"n_resamples": 5}

scores_st = st.floats(0.0, 1.0, allow_nan=False, width=32)


@st.composite
def boolean_rows(draw: st.DrawFn) -> tuple[list[float], list[bool]]:
    n = draw(st.integers(4, 40))
    scores = draw(st.lists(scores_st, min_size=n, max_size=n))
    labels = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    labels[0], labels[1] = True, False  # both classes
    return scores, labels


@st.composite
def rating_rows(draw: st.DrawFn) -> tuple[list[float], list[float]]:
    n = draw(st.integers(4, 40))
    scores = draw(st.lists(scores_st, min_size=n, max_size=n))
    ratings = draw(st.lists(st.sampled_from([1.0, 1.5, 2.0, 3.0, 3.67, 4.0, 5.0]),
                            min_size=n, max_size=n))
    ratings[0], ratings[1] = 1.0, 5.0  # not constant
    return scores, ratings


def _value(report: agreement.AgreementReport, name: str) -> float | None:
    stat = report.statistic(name)
    assert stat is not None, name
    return stat.value


def _close(ours: float | None, reference: float) -> bool:
    if ours is None:
        return math.isnan(reference)
    return math.isclose(ours, reference, rel_tol=1e-9, abs_tol=1e-12)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(boolean_rows(), st.sampled_from([0.25, 0.5, 0.8]))
def test_boolean_statistics_equal_scikit_learn(rows, threshold) -> None:
    scores, labels = rows
    report = compare(scores, labels, threshold=threshold, **FAST)
    y = np.array(labels, dtype=int)
    predicted = (np.array(scores) >= threshold).astype(int)
    assert report.label_kind == "boolean" and report.n == len(scores)
    assert _close(_value(report, "auroc"), roc_auc_score(y, scores))
    assert _close(_value(report, "balanced_accuracy"), balanced_accuracy_score(y, predicted))
    with np.errstate(all="ignore"):
        kappa = cohen_kappa_score(y, predicted)
    assert _close(_value(report, "cohen_kappa"), kappa)
    assert _close(_value(report, "f1"), f1_score(y, predicted, zero_division=0.0))
    # the best threshold is the best balanced accuracy over every cut of these scores
    best = max(balanced_accuracy_score(y, (np.array(scores) >= t).astype(int))
               for t in set(scores))
    assert math.isclose(_value(report, "best_balanced_accuracy"), best, abs_tol=1e-12)
    assert math.isclose(balanced_accuracy_score(
        y, (np.array(scores) >= report.best_threshold).astype(int)), best, abs_tol=1e-12)


def _scikit_learn_statistics(threshold: float):
    """The boolean statistics as scikit-learn computes them (NaN where it raises or warns of
    an undefined value), keyed by the report's names."""

    def quiet(function):
        def wrapped(scores, labels):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    value = float(function(scores, labels.astype(int)))
                except ValueError:
                    return math.nan
            return value if math.isfinite(value) else math.nan
        return wrapped

    def at(scores):
        return (scores >= threshold).astype(int)

    def best(scores, labels):
        fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
        return float(np.max((tpr[1:] + 1.0 - fpr[1:]) / 2.0))

    return {
        "auroc": quiet(lambda s, y: roc_auc_score(y, s) if 0 < y.sum() < y.size else math.nan),
        "balanced_accuracy": quiet(lambda s, y: balanced_accuracy_score(y, at(s))
                                   if 0 < y.sum() < y.size else math.nan),
        "cohen_kappa": quiet(lambda s, y: cohen_kappa_score(y, at(s))),
        "f1": quiet(lambda s, y: f1_score(y, at(s), zero_division=0.0)),
        "best_balanced_accuracy": quiet(lambda s, y: best(s, y)
                                        if 0 < y.sum() < y.size else math.nan),
    }


tied_scores = st.sampled_from([0.0, 0.2, 0.25, 0.5, 0.5000001, 0.8, 1.0])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.lists(tied_scores, min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n))),
    st.sampled_from([0.25, 0.5, 0.8]))
def test_boolean_statistics_equal_scikit_learn_on_ties_and_one_class(rows, threshold) -> None:
    """Tied scores, a threshold equal to a score, one class in the labels or the predictions:
    each statistic is scikit-learn's value, NaN where scikit-learn's is undefined."""
    scores, labels = np.array(rows[0]), np.array(rows[1], dtype=float)
    functions = {"auroc": auroc, "balanced_accuracy": balanced_accuracy(threshold),
                 "cohen_kappa": cohen_kappa(threshold), "f1": f1(threshold),
                 "best_balanced_accuracy": best_balanced_accuracy}
    for name, reference in _scikit_learn_statistics(threshold).items():
        ours, expected = functions[name](scores, labels), reference(scores, labels)
        assert (math.isnan(ours) and math.isnan(expected)) or math.isclose(
            ours, expected, rel_tol=1e-12, abs_tol=1e-12), (name, ours, expected)


def test_boolean_intervals_equal_scikit_learn_on_the_same_resamples() -> None:
    """The whole bootstrap, with scikit-learn's statistics on the same seeded resamples (some
    with one class): the same intervals."""
    rng = np.random.default_rng(5)
    labels = (rng.random(25) < 0.15).astype(float)
    labels[:2] = 1.0, 0.0
    scores = np.round(labels * 0.3 + rng.random(25), 1)
    report = compare(scores.tolist(), labels.astype(bool).tolist(), threshold=0.5, seed=2,
                     n_resamples=300)
    for name, reference in _scikit_learn_statistics(0.5).items():
        low, high, _ = stats.bootstrap_statistic(reference, scores, labels, seed=2,
                                                 n_resamples=300)
        stat = report.statistic(name)
        assert (stat.low, stat.high) == (pytest.approx(low, abs=1e-12),
                                         pytest.approx(high, abs=1e-12)), name


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rating_rows())
def test_correlations_equal_scipy(rows) -> None:
    scores, ratings = rows
    report = compare(scores, ratings, **FAST)
    assert report.label_kind == "numeric"
    with np.errstate(all="ignore"):
        assert _close(_value(report, "spearman"), spearmanr(scores, ratings).statistic)
        assert _close(_value(report, "kendall_tau_b"),
                      kendalltau(scores, ratings, variant="b").statistic)
        reference = (pearsonr(scores, ratings).statistic if np.ptp(scores) > 0
                     else math.nan)
    assert _close(_value(report, "pearson"), reference)


def test_per_group_correlation_is_the_mean_over_groups() -> None:
    rng = np.random.default_rng(7)
    groups = np.repeat(["a", "b", "c", "d"], 8)
    ratings = rng.integers(1, 6, size=32).astype(float)
    scores = ratings + rng.normal(0, 1.5, size=32)
    report = compare(scores.tolist(), ratings.tolist(), groups=groups.tolist(), group="doc",
                     **FAST)
    for name, function in (("spearman", spearmanr), ("pearson", pearsonr)):
        per_group = [function(scores[groups == g], ratings[groups == g]).statistic
                     for g in "abcd"]
        assert _close(_value(report, f"{name}_per_group_mean"), float(np.mean(per_group)))
    taus = [kendalltau(scores[groups == g], ratings[groups == g]).statistic for g in "abcd"]
    assert _close(_value(report, "kendall_tau_b_per_group_mean"), float(np.mean(taus)))
    assert report.groups == 4


def test_bootstrap_is_reproducible_from_its_seed_and_moves_with_another() -> None:
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, size=80).astype(bool)
    scores = labels * 0.3 + rng.random(80)
    first = compare(scores.tolist(), labels.tolist(), threshold=0.5, seed=3, n_resamples=60)
    again = compare(scores.tolist(), labels.tolist(), threshold=0.5, seed=3, n_resamples=60)
    other = compare(scores.tolist(), labels.tolist(), threshold=0.5, seed=4, n_resamples=60)
    assert first.as_dict() == again.as_dict()
    intervals = [(s.low, s.high) for s in first.statistics]
    assert intervals != [(s.low, s.high) for s in other.statistics]
    for stat in first.statistics:
        assert stat.low <= stat.value <= stat.high or stat.name == "best_balanced_accuracy"


def test_bootstrap_statistic_resamples_rows_or_whole_groups() -> None:
    values = np.arange(10.0)
    low, high, used = stats.bootstrap_statistic(np.mean, values, n_resamples=200, seed=0)
    means = np.random.default_rng(0).integers(0, 10, size=(200, 10))
    reference = np.percentile(values[means].mean(axis=1), [2.5, 97.5])
    assert (low, high, used) == (pytest.approx(reference[0]), pytest.approx(reference[1]), 200)
    groups = ["x"] * 3 + ["y"] * 3 + ["z"] * 4

    def group_count(column, groups):  # every resample holds as many groups as the data
        return float(len(np.unique(groups)))

    assert stats.bootstrap_statistic(group_count, values, groups=groups, n_resamples=30)[:2] == (
        3.0, 3.0)

    def rows_per_group_sizes(column, groups):  # whole groups: sizes stay 3 or 4
        return float(set(np.bincount(groups)) <= {3, 4})

    assert stats.bootstrap_statistic(rows_per_group_sizes, values, groups=groups,
                                     n_resamples=30)[:2] == (1.0, 1.0)


def test_unmeasured_rows_are_counted_and_left_out() -> None:
    scores = [0.9, None, 0.2, 0.7, None, 0.1, 0.6]
    labels = [True, True, False, True, False, False, False]
    report = compare(scores, labels, threshold=0.5, **FAST)
    kept = [(s, y) for s, y in zip(scores, labels, strict=True) if s is not None]
    assert report.n == len(kept) and report.unmeasured == 2 and report.unlabelled == 0
    assert _close(_value(report, "auroc"), roc_auc_score([y for _, y in kept],
                                                         [s for s, _ in kept]))
    assert report.as_dict()["unmeasured"] == 2
    unlabelled = compare([0.1, 0.2, 0.3, 0.4], [True, None, False, True], **FAST)
    assert (unlabelled.n, unlabelled.unlabelled) == (3, 1)


@pytest.mark.parametrize(("labels", "error"), [
    ([True, 3.5, False], MixedLabelError),
    ([1, "good", 0], MixedLabelError),
    ([True, True, True], ConstantLabelError),
    ([4.0, 4.0, None], ConstantLabelError),
    ([None, None, None], MissingLabelError),
])
def test_bad_label_columns_get_named_errors(labels, error) -> None:
    with pytest.raises(error) as caught:
        compare([0.1, 0.5, 0.9], labels)
    assert isinstance(caught.value, LabelError) and isinstance(caught.value, ValueError)


def test_a_constant_score_is_named() -> None:
    report = compare([0.5, 0.5, 0.5, 0.5], [True, False, True, False], threshold=0.5, **FAST)
    assert report.constant_score == 0.5 and _value(report, "auroc") == 0.5
    assert "every compared row scored 0.5" in report.table()
    assert compare([0.1, 0.5], [True, False], **FAST).constant_score is None


def test_label_kinds() -> None:
    assert agreement.parse_labels([0, 1, 1])[1] == "boolean"
    assert agreement.parse_labels(["yes", "no"])[1] == "boolean"
    assert agreement.parse_labels([1, 2.5, 5])[1] == "numeric"


def test_the_label_kind_is_the_columns() -> None:
    """CSV cells are text: "1".."5" are ratings (any number other than 0/1 makes the column
    numeric), "0"/"1" alone are booleans; a blank cell is unlabelled, as JSON null."""
    values, kind = agreement.parse_labels(["1", "2", "5", "", " ", None, "3"])
    assert kind == "numeric"
    assert np.array_equal(values, [1, 2, 5, np.nan, np.nan, np.nan, 3], equal_nan=True)
    assert agreement.parse_labels(["1", "0", "", "1"])[1] == "boolean"
    assert agreement.parse_labels(["yes", "0", "1", "no"])[1] == "boolean"
    with pytest.raises(MixedLabelError, match="mixes booleans and numeric ratings"):
        agreement.parse_labels(["yes", "3", "1"])
    with pytest.raises(MixedLabelError, match="row 1: str value is neither"):
        agreement.parse_labels(["1", "good", "3"])


def test_agree_on_a_csv_of_ratings(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The 1..5 ratings of a CSV, one blank: Spearman over the labelled rows (scipy's), the
    blank row counted as unlabelled."""
    rows = [("Paris", "Paris", "5"), ("Rome", "Paris", "1"), ("Paris.", "Paris", "4"),
            ("Lyon", "Paris", "2"), ("paris", "Paris", ""), ("Nice", "Paris", "1")]
    path = tmp_path / "ratings.csv"
    path.write_text("prediction,reference,rating\n" + "".join(f"{p},{r},{x}\n"
                                                                for p, r, x in rows),
                    encoding="utf-8")
    report_path = tmp_path / "report.json"
    code = main(["agree", str(path), "--metric", "accuracy", "--label", "rating", "--json",
                 str(report_path), "--resamples", "5", "--quiet"])
    assert code == 0, capsys.readouterr().err
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert (report["label_kind"], report["n"], report["unlabelled"]) == ("numeric", 5, 1)
    scores = [1.0, 0.0, 1.0, 0.0, 0.0]  # accuracy's exact match after normalisation
    expected = spearmanr(scores, [5, 1, 4, 2, 1]).statistic
    spearman = next(s for s in report["statistics"] if s["name"] == "spearman")
    assert spearman["value"] == pytest.approx(expected)


def test_every_metric_declares_its_decision_threshold() -> None:
    assert set(DECISION_THRESHOLDS) == set(METRICS)


def test_embedded_judge_note_says_when_measured_rows_define_no_statistic() -> None:
    entry = {"data_set": "SummEval", "label": "consistency", "statistic": "spearman",
             "value": None, "low": None, "high": None, "n": 4, "unmeasured": 56,
             "constant_score": None}
    note = agreement.embedded_judge_note("faithfulness", {"metrics": {"faithfulness": entry}})
    assert "only 4 of 60 SummEval rows were measured" in note and "no Spearman" in note
    assert "not measured for" not in note


def test_embedded_judge_note_reads_the_shipped_figures() -> None:
    figures = agreement.embedded_judge_figures()
    assert figures, "shared/analysis/agreement_figures.json is written by `make agreement`"
    for metric, entry in figures["metrics"].items():
        note = agreement.embedded_judge_note(metric, figures)
        assert "not a measurement" in note
        if entry.get("n") == 0:
            assert f"every one of its {entry['unmeasured']} " in note and "unmeasured" in note
        elif entry.get("constant_score") is not None:
            assert f"same score ({entry['constant_score']:g})" in note
        elif entry.get("value") is None:
            assert f"only {entry['n']} " in note and "no " in note
        else:
            assert f"{entry['value']:.2f}" in note
    assert "not measured" in agreement.embedded_judge_note("bias", {"metrics": {}})
    lost = {"metrics": {"faithfulness": {"data_set": "SummEval", "label": "consistency", "n": 0,
                                         "unmeasured": 6, "value": None}}}
    assert "every one of its 6 SummEval rows" in agreement.embedded_judge_note("faithfulness",
                                                                              lost)


# ------------------------------------------------------------------------------ CLI end to end


def _slice(tmp_path: Path, name: str, rows: list[dict]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rows(file: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / file).read_text("utf-8").splitlines()]


def _balanced(rows: list[dict], label: str, k: int) -> list[dict]:
    return ([r for r in rows if r[label]][:k] + [r for r in rows if not r[label]][:k])


def _agree(tmp_path: Path, capsys, argv: list[str]) -> tuple[dict, list[dict]]:
    report, scored = tmp_path / "report.json", tmp_path / "scored.jsonl"
    code = main(["agree", *argv, "--json", str(report), "--out", str(scored), "--quiet",
                 "--resamples", "50"])
    assert code == 0, capsys.readouterr().err
    return (json.loads(report.read_text()),
            [json.loads(line) for line in scored.read_text().splitlines()])


def _stat(report: dict, name: str) -> float | None:
    return next(s["value"] for s in report["statistics"] if s["name"] == name)


def test_agree_string_metric_on_evouna(tmp_path: Path, capsys) -> None:
    rows = _balanced(_rows("answer_equivalence_evouna_nq.jsonl"), "label", 15)
    path = _slice(tmp_path, "evouna.jsonl", rows)
    report, scored = _agree(tmp_path, capsys, [str(path), "--metric", "rouge", "--label",
                                               "label", "--score-key", "rougeL"])
    labels = [r["label"] for r in scored]
    assert report["n"] == 30 and report["unmeasured"] == 0 and report["judge"] is None
    assert report["threshold"] is None  # rouge declares none
    assert _close(_stat(report, "auroc"), roc_auc_score(labels, [r["rougeL"] for r in scored]))
    out = capsys.readouterr().out
    assert "auroc" in out and "rouge" in out


def test_agree_html_report_carries_the_statistics(tmp_path: Path, capsys) -> None:
    path = _slice(tmp_path, "evouna.jsonl",
                  _balanced(_rows("answer_equivalence_evouna_nq.jsonl"), "label", 6))
    html = tmp_path / "agree.html"
    report, _ = _agree(tmp_path, capsys, [str(path), "--metric", "accuracy", "--label", "label",
                                          "--html", str(html)])
    page = html.read_text("utf-8")
    assert page.startswith("<!DOCTYPE html>") and "accuracy" in page
    auroc = next(s for s in report["statistics"] if s["name"] == "auroc")
    assert f"<td>auroc</td><td class=\"num\">{auroc['value']:.4f}</td>" in page
    assert f"[{auroc['low']:.4f}, {auroc['high']:.4f}]" in page


def test_agree_passes_metric_options(tmp_path: Path, capsys) -> None:
    rows = _balanced(_rows("answer_equivalence_evouna_nq.jsonl"), "label", 10)
    path = _slice(tmp_path, "evouna.jsonl", rows)
    report, scored = _agree(tmp_path, capsys, [
        str(path), "--metric", "accuracy", "--label", "label",
        "--option", "mode=contains", "--option", "reference_separator=/"])
    direct = evaluate.load("metrics/accuracy").compute(
        predictions=[r["prediction"] for r in scored], references=[r["reference"] for r in scored],
        questions=[r["question"] for r in scored], mode="contains", reference_separator="/")
    assert [r["accuracy"] for r in scored] == pytest.approx(direct["scores"])
    assert _close(_stat(report, "auroc"),
                  roc_auc_score([r["label"] for r in scored], direct["scores"]))


def test_agree_limit_is_a_seeded_subsample(tmp_path: Path, capsys) -> None:
    path = _slice(tmp_path, "evouna.jsonl",
                  _balanced(_rows("answer_equivalence_evouna_nq.jsonl"), "label", 20))
    args = [str(path), "--metric", "accuracy", "--label", "label", "--limit", "12"]
    first = [r["id"] for r in _agree(tmp_path, capsys, [*args, "--seed", "1"])[1]]
    again = [r["id"] for r in _agree(tmp_path, capsys, [*args, "--seed", "1"])[1]]
    other = [r["id"] for r in _agree(tmp_path, capsys, [*args, "--seed", "2"])[1]]
    assert len(first) == 12 and first == again and first != other


@pytest.mark.slow
def test_agree_l3score_with_the_embedded_judge(tmp_path: Path, capsys, cache_dir: str) -> None:
    rows = _balanced(_rows("answer_equivalence_evouna_nq.jsonl"), "label", 2)
    path = _slice(tmp_path, "evouna.jsonl", rows)
    report, scored = _agree(tmp_path, capsys, [str(path), "--metric", "l3score", "--label",
                                               "label", "--cache-dir", cache_dir])
    assert report["judge"]["provider"] == "local"
    assert report["n"] + report["unmeasured"] == 4
    assert report["threshold"] == DECISION_THRESHOLDS["l3score"]
    kept = [r for r in scored if r["l3score"] is not None]
    if len({r["label"] for r in kept}) == 2:
        assert _close(_stat(report, "auroc"),
                      roc_auc_score([r["label"] for r in kept], [r["l3score"] for r in kept]))


@pytest.mark.slow
def test_agree_summary_coherence_on_summeval(tmp_path: Path, capsys, cache_dir: str) -> None:
    rows = _rows("summeval.jsonl")
    chosen = [min(rows, key=lambda r: r["coherence"]), max(rows, key=lambda r: r["coherence"])]
    path = _slice(tmp_path, "summeval.jsonl", chosen)
    report, scored = _agree(tmp_path, capsys, [
        str(path), "--metric", "summary_coherence", "--label", "coherence",
        "--column", "prediction=summary", "--cache-dir", cache_dir])
    assert report["label_kind"] == "numeric" and report["n"] + report["unmeasured"] == 2
    kept = [r for r in scored if r["summary_coherence"] is not None]
    if len(kept) >= 2:
        assert _close(_stat(report, "spearman"), spearmanr(
            [r["summary_coherence"] for r in kept], [r["coherence"] for r in kept]).statistic)


@pytest.mark.slow
def test_agree_pairwise_and_g_eval_on_summeval(tmp_path: Path, capsys, cache_dir: str) -> None:
    """Two summaries of one article, the label the people's preference; g_eval takes its
    criteria through --option."""
    rows = [r for r in _rows("summeval.jsonl") if r["article_id"] == "A1"]
    worst, best = (min(rows, key=lambda r: r["coherence"]),
                   max(rows, key=lambda r: r["coherence"]))
    pairs = [{"id": f"p{n}", "source": worst["source"], "prediction": a["summary"],
              "baseline_prediction": b["summary"], "preferred": a is best}
             for n, (a, b) in enumerate(((best, worst), (worst, best)))]
    report, scored = _agree(tmp_path, capsys, [
        str(_slice(tmp_path, "pairs.jsonl", pairs)), "--metric", "pairwise", "--label",
        "preferred", "--column", "contexts=source", "--cache-dir", cache_dir])
    assert report["label_kind"] == "boolean" and report["n"] == 2
    assert report["threshold"] == DECISION_THRESHOLDS["pairwise"] == 0.5
    assert [json.loads(r["pairwise_details"])["orders"][0]["shown_first"] for r in scored] == [
        "prediction", "prediction"]
    # the second pair is the first one swapped: its score is 1 minus the first's (same requests)
    assert scored[1]["pairwise"] == pytest.approx(1 - scored[0]["pairwise"], abs=1e-6)

    report, scored = _agree(tmp_path, capsys, [
        str(_slice(tmp_path, "summeval.jsonl", [worst, best])), "--metric", "g_eval", "--label",
        "coherence", "--column", "prediction=summary", "--cache-dir", cache_dir,
        "--option", "g_eval.criteria=Is the summary coherent?"])
    assert report["label_kind"] == "numeric" and report["n"] == 2
    assert all(0 <= r["g_eval"] <= 1 for r in scored)


@pytest.mark.slow
def test_agree_toxicity_on_davidson_prints_no_text(tmp_path: Path, capsys,
                                                   cache_dir: str) -> None:
    rows = _balanced(_rows("toxicity_davidson.jsonl"), "label", 1)
    path = _slice(tmp_path, "davidson.jsonl", rows)
    report_path = tmp_path / "report.json"
    code = main(["agree", str(path), "--metric", "toxicity", "--label", "label", "--column",
                 "prediction=text", "--json", str(report_path), "--quiet", "--resamples", "50",
                 "--cache-dir", cache_dir])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(report_path.read_text())
    assert report["label_kind"] == "boolean" and report["n"] + report["unmeasured"] == 2
    for row in rows:  # the abusive texts never reach the terminal or the report
        assert row["text"] not in captured.out + captured.err + report_path.read_text()


@pytest.mark.parametrize(("argv", "message"), [
    (["--label", "nope"], "label column 'nope' is not in the input"),
    (["--label", "question"], "is neither a boolean nor a number"),
    (["--label", "constant"], "needs at least two different labels"),
    (["--label", "label", "--column", "prediction"], "INPUT=COLUMN"),
    (["--label", "label", "--column", "prediction=nope"], "no column 'nope'"),
    (["--label", "label", "--score-key", "rouge9"], "no score key"),
    (["--label", "label", "--limit", "0"], "--limit"),
])
def test_agree_usage_errors_exit_2_in_one_line(tmp_path: Path, capsys, argv, message) -> None:
    rows = [dict(r, constant=True) for r in
            _balanced(_rows("answer_equivalence_evouna_nq.jsonl"), "label", 2)]
    path = _slice(tmp_path, "evouna.jsonl", rows)
    metric = "rouge" if "--score-key" in argv else "accuracy"
    code = main(["agree", str(path), "--metric", metric, "--quiet", *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert "LabelError" not in err  # the message, not our class name


def test_agree_python_api_maps_columns_and_wraps_a_context() -> None:
    dataset = datasets.Dataset.from_list([{"summary": "a", "article": "b"}])
    mapped = agreement.map_columns(dataset, {"prediction": "summary", "contexts": "article"})
    assert mapped[0]["prediction"] == "a" and mapped[0]["contexts"] == ["b"]


def test_every_card_carries_the_runs_agreement_block() -> None:
    """The cards' blocks are written by `make agreement`; each judge metric's shipped figure
    (shared/analysis/agreement_figures.json, same run) appears in its card."""
    figures = agreement.embedded_judge_figures()
    for name in METRICS:
        card = (REPO / "metrics" / name / "README.md").read_text(encoding="utf-8")
        assert "## Agreement with people" in card, name
        block = card.split("<!-- agreement:start -->")[1].split("<!-- agreement:end -->")[0]
        assert "make agreement" in block or "Not measured" in block, name
        entry = figures.get("metrics", {}).get(name)
        if entry is not None and entry["value"] is not None:
            assert f"{entry['value']:.2f} [{entry['low']:.2f}, {entry['high']:.2f}]" in block
        if entry is not None and entry.get("constant_score") is not None:
            assert f"every row scored {entry['constant_score']:g}" in block


def test_score_summary_notes_the_embedded_judges_agreement(capsys) -> None:
    from shared.cli.common import check_judge_options, judge_options
    from shared.cli.judge_notes import print_embedded_judge_notes
    from shared.cli.main import build_parser
    from shared.runs.summary import BatchSummary, MetricSummary

    summary = BatchSummary([MetricSummary("l3score", {"L3Score": 0.6}, 2, 0, True),
                            MetricSummary("bias", {"bias": 0.9}, 2, 0, True),
                            MetricSummary("rouge", {"rouge1": 0.5}, 2, 0, False)], {})
    embedded = build_parser().parse_args(["score", "x.jsonl", "-m", "all", "--out", "o.jsonl"])
    print_embedded_judge_notes(summary, check_judge_options(judge_options(embedded)))
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert out.count("a pipeline demo, not a measurement") == 1  # said once, then the table
    assert lines[0].startswith("embedded judge: a pipeline demo, not a measurement")
    assert re.split(r"\s{2,}", lines[1])[:2] == ["metric", "agreement with people"]
    assert [line.split()[0] for line in lines[3:]] == ["l3score", "bias"]
    from shared.analysis.embedded_judge import agreement_rows

    assert agreement_rows(["l3score"])[0]["agreement with people"] in lines[3]
    assert lines[4].endswith("not measured")
    other = build_parser().parse_args(["score", "x.jsonl", "-m", "all", "--out", "o.jsonl",
                                       "--provider", "openai-compatible",
                                       "--base-url", "http://127.0.0.1:8000/v1", "--model", "m"])
    print_embedded_judge_notes(summary, check_judge_options(judge_options(other)))
    assert capsys.readouterr().out == ""


@pytest.mark.slow
def test_demo_shows_the_note_beside_an_embedded_judge_metric(monkeypatch, cache_dir) -> None:
    import pandas as pd

    from shared.demo import build_demo

    monkeypatch.setenv("JUDGE_METRICS_CACHE_DIR", cache_dir)
    panel = build_demo(["l3score", "rouge"]).jm_panels["l3score"]
    values = panel.initial_values()
    values[panel.table] = pd.DataFrame({"question": ["What is the capital of France?"],
                                        "prediction": ["Paris"], "reference": ["Paris"]})
    aggregate = panel.handle(values)[panel.outputs["aggregate"]]
    assert "jm-agreement" in aggregate
    assert html_escape(agreement.embedded_judge_note("l3score")) in aggregate


def html_escape(text: str) -> str:
    import html

    return html.escape(text)


def test_agree_dry_run_sends_nothing_and_compares_nothing(tmp_path: Path, capsys,
                                                          cache_dir: str) -> None:
    path = _slice(tmp_path, "evouna.jsonl",
                  _balanced(_rows("answer_equivalence_evouna_nq.jsonl"), "label", 2))
    report = tmp_path / "report.json"
    code = main(["agree", str(path), "--metric", "l3score", "--label", "label", "--dry-run",
                 "--json", str(report), "--cache-dir", cache_dir])
    out = capsys.readouterr().out
    assert code == 0 and "nothing was sent" in out and not report.exists()
    assert out.splitlines()[2].split()[:2] == ["l3score", "4"]  # four requests planned
