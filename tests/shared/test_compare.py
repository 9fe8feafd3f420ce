"""shared.analysis.comparison and `judge-metrics compare`: every statistic against scipy /
statsmodels
computed here, pairing by key with missing, duplicated and unmeasured rows, the CLI's exits."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as sps
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from shared import UserInputError, stats
from shared.analysis.comparison import MCNEMAR, WILCOXON, compare, compare_scores, holm

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)


def _pairs(draw_values: st.SearchStrategy) -> st.SearchStrategy:
    return st.integers(min_value=1, max_value=60).flatmap(
        lambda n: st.tuples(st.lists(draw_values, min_size=n, max_size=n),
                            st.lists(draw_values, min_size=n, max_size=n)))


# ------------------------------------------------------------------------------ statistics


@SETTINGS
@given(_pairs(st.sampled_from([0.0, 1.0])), st.integers(0, 2**32 - 1))
def test_binary_scores_exact_mcnemar(pair: tuple[list[float], list[float]], seed: int) -> None:
    from statsmodels.stats.contingency_tables import mcnemar

    a, b = (np.array(x) for x in pair)
    result = compare_scores(a, b, seed=seed, n_resamples=200)
    assert result["kind"] == "binary" and result["test"] == MCNEMAR
    table = [[int(np.sum((a == 1) & (b == 1))), int(np.sum((a == 1) & (b == 0)))],
             [int(np.sum((a == 0) & (b == 1))), int(np.sum((a == 0) & (b == 0)))]]
    # the reference: statsmodels' exact McNemar on the 2x2 table (a different code path)
    assert result["p_value"] == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)
    assert result["mean_a"] == pytest.approx(a.mean()) and result["mean_b"] == pytest.approx(
        b.mean())
    assert result["delta"] == pytest.approx(b.mean() - a.mean())
    assert (result["wins"], result["ties"], result["losses"]) == (
        table[1][0], table[0][0] + table[1][1], table[0][1])
    assert result["low"] <= result["delta"] + 1e-12 and result["delta"] <= result["high"] + 1e-12


@SETTINGS
@given(_pairs(st.floats(0, 1, allow_nan=False).map(lambda x: round(x, 3))),
       st.integers(0, 2**32 - 1))
def test_graded_scores_wilcoxon_and_bootstrap_as_scipy(
        pair: tuple[list[float], list[float]], seed: int) -> None:
    a, b = (np.array(x) for x in pair)
    if np.all((a == 0) | (a == 1)) and np.all((b == 0) | (b == 1)):
        return  # binary: the other test
    result = compare_scores(a, b, seed=seed, n_resamples=499)
    assert result["test"] == WILCOXON
    d = b - a
    if np.any(d != 0):
        assert result["p_value"] == pytest.approx(sps.wilcoxon(d).pvalue, rel=1e-9)
    else:
        assert result["p_value"] == 1.0
    distinct = len(np.unique(d))
    if distinct > 2 and distinct * 8 > len(d):  # (0/1 and few-valued data take shortcuts)
        # index resampling: the very draws of scipy.stats.bootstrap (paired, percentile)
        reference = sps.bootstrap(
            (a, b), lambda x, y, axis: np.mean(y - x, axis=axis), paired=True, vectorized=True,
            n_resamples=499, method="percentile", rng=np.random.default_rng(seed))
        interval = reference.confidence_interval
        assert result["low"] == pytest.approx(interval.low, rel=1e-9, abs=1e-12)
        assert result["high"] == pytest.approx(interval.high, rel=1e-9, abs=1e-12)


def test_few_valued_differences_resample_like_scipy() -> None:
    """Paired 0/1 scores give differences in {-1, 0, 1}: the multinomial shortcut must have the
    distribution of index resampling (scipy.stats.bootstrap's), not its exact draws."""
    rng = np.random.default_rng(11)
    a = (rng.random(400) < 0.55).astype(float)
    b = (rng.random(400) < 0.62).astype(float)
    d = b - a
    ours = stats.bootstrap_means(d, n_resamples=20000, seed=1)
    reference = sps.bootstrap((d,), np.mean, n_resamples=20000, method="percentile",
                              rng=np.random.default_rng(2)).bootstrap_distribution
    assert abs(ours.mean() - reference.mean()) < 0.002
    assert abs(ours.std() - reference.std()) < 0.002
    assert sps.ks_2samp(ours, reference).pvalue > 1e-3
    low, high = stats.paired_difference_ci(a, b, n_resamples=20000, seed=1)
    ref_low, ref_high = np.percentile(reference, [2.5, 97.5])
    assert abs(low - ref_low) < 0.01 and abs(high - ref_high) < 0.01


def _holm_by_definition(p: list[float]) -> list[float]:
    """Holm's step-down rule written from its definition: the i-th smallest p-value times
    (m - i + 1), running maximum over the order, capped at 1."""
    m = len(p)
    out = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p[i])):
        running = max(running, min(1.0, (m - rank) * p[index]))
        out[index] = running
    return out


@SETTINGS
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=12))
def test_holm_against_its_definition(p: list[float]) -> None:
    assert holm(p) == pytest.approx(_holm_by_definition(p), abs=1e-12)
    assert holm([None, *p])[0] is None


@pytest.mark.parametrize("p", [[0.01, 0.04, 0.03, 0.005], [0.5, 0.5, 0.2, 0.9, 0.01, 0.01],
                               [0.3], [0.0, 1.0, 0.049, 0.051]])
def test_holm_is_statsmodels_holm(p: list[float]) -> None:
    from statsmodels.stats.multitest import multipletests

    reference = multipletests(p, method="holm")[1].tolist()
    assert holm(p) == pytest.approx(reference, abs=1e-12)
    assert holm([p[0], None, *p[1:]]) == pytest.approx([reference[0], None, *reference[1:]])


def test_lower_is_better_counts_wins_the_other_way() -> None:
    result = compare_scores([0.5, 0.5, 0.5], [0.2, 0.5, 0.9], higher_is_better=False)
    assert (result["wins"], result["ties"], result["losses"]) == (1, 1, 1)


# ------------------------------------------------------------------------------ pairing


def _run(keys: list[str], scores: list[float | None], prediction: str = "p") -> list[dict]:
    return [{"id": k, "question": f"q {k}", "prediction": f"{prediction} {k}", "accuracy": s,
             "accuracy_details": json.dumps({"unmeasured": "judge error"}) if s is None else
             None} for k, s in zip(keys, scores, strict=True)]


def test_pairs_by_id_counting_missing_and_unmeasured_rows() -> None:
    a = _run(["1", "2", "3", "4", "5", "6"], [1, 0, None, 1, 0, 1])
    b = _run(["2", "3", "4", "5", "6", "7", "8"], [1, 1, 1, None, 1, 0, 0])
    report = compare(a, b, seed=3, n_resamples=300)
    assert (report.paired, report.only_a, report.only_b) == (5, 1, 2)
    assert report.only_a_keys == ["1"] and report.only_b_keys == ["7", "8"]
    column = report.column("accuracy")
    assert column is not None
    # pairs 2..6; 3 unmeasured in A, 5 unmeasured in B: 3 measured pairs (2, 4, 6)
    assert (column.n_paired, column.unmeasured_a, column.unmeasured_b, column.excluded) == (
        3, 1, 1, 2)
    assert column.mean_a == pytest.approx(np.mean([0, 1, 1]))
    assert column.mean_b == pytest.approx(np.mean([1, 1, 1]))
    assert (column.wins, column.ties, column.losses) == (1, 2, 0)
    again = compare(a, b, seed=3, n_resamples=300)
    assert again.as_dict() == {**report.as_dict(), "seconds": again.seconds}
    json.dumps(report.as_dict(), allow_nan=False)


def test_seed_makes_the_interval_reproducible() -> None:
    rng = np.random.default_rng(0)
    keys = [str(i) for i in range(200)]
    a = _run(keys, rng.random(200).round(4).tolist())
    b = _run(keys, rng.random(200).round(4).tolist())
    first = compare(a, b, seed=5, n_resamples=500).columns[0]
    assert compare(a, b, seed=5, n_resamples=500).columns[0] == first
    other = compare(a, b, seed=6, n_resamples=500).columns[0]
    assert (other.low, other.high) != (first.low, first.high)


def test_duplicated_key_is_an_error_naming_it() -> None:
    a = _run(["1", "2", "2"], [1, 0, 1])
    with pytest.raises(UserInputError, match=r"run A: duplicated key '2' \(column 'id'\)"):
        compare(a, _run(["1", "2"], [1, 1]))


def test_key_column_and_hash_fallback() -> None:
    a = [{"question": f"q{i}", "reference": "r", "prediction": "x", "bleu": 0.1 * i}
         for i in range(5)]
    b = [{"question": f"q{i}", "reference": "r", "prediction": "y", "bleu": 0.1 * i + 0.05}
         for i in reversed(range(6))]
    report = compare(a, b, n_resamples=100)
    assert report.key == "hash(question, reference)"
    assert (report.paired, report.only_a, report.only_b) == (5, 0, 1)
    assert report.columns[0].delta == pytest.approx(0.05)
    with pytest.raises(UserInputError, match="--key 'nope': run A has no such column"):
        compare(a, b, key="nope")
    with pytest.raises(UserInputError, match="duplicated key"):
        compare(a + a[:1], b)


def test_no_common_score_column_or_no_pair() -> None:
    with pytest.raises(UserInputError, match="no score column in both runs"):
        compare([{"id": 1, "accuracy": 1.0}], [{"id": 1, "bleu": 1.0}])
    with pytest.raises(UserInputError, match="no row of A pairs with a row of B"):
        compare([{"id": 1, "accuracy": 1.0}], [{"id": 2, "accuracy": 1.0}])


def test_csv_and_jsonl_runs_pair(tmp_path: Path) -> None:
    """CSV cells are text (empty = unmeasured); ids written as numbers in JSONL still pair."""
    (tmp_path / "a.csv").write_text("id,prediction,accuracy\n1,x,1.0\n2,y,\n3,z,0.0\n",
                                    encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("".join(
        json.dumps({"id": i, "prediction": "w", "accuracy": s}) + "\n"
        for i, s in [(1, 1.0), (2, 1.0), (3, 1.0)]), encoding="utf-8")
    report = compare(tmp_path / "a.csv", tmp_path / "b.jsonl", n_resamples=100)
    column = report.columns[0]
    assert (report.paired, column.n_paired, column.unmeasured_a) == (3, 2, 1)
    (tmp_path / "bad.csv").write_text("id,accuracy\n1,high\n", encoding="utf-8")
    with pytest.raises(UserInputError, match=r"column 'accuracy', row 0: 'high' is not a score"):
        compare(tmp_path / "bad.csv", tmp_path / "b.jsonl")


# ------------------------------------------------------------------------------ CLI


def _cli(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    from shared.cli.main import main

    code = main(list(args))
    return code, capsys.readouterr().err


def test_cli_scores_inputs_then_compares(tmp_path: Path, capsys: pytest.CaptureFixture,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`compare --metric accuracy` on two inputs: scored through score_dataset, then paired."""
    rows = [json.loads(line) for line in (REPO / "examples/rag_sample.jsonl").open()]
    changed = [{**r, "prediction": r["reference"] if isinstance(r["reference"], str)
                else r["reference"][0]} if i % 2 else r for i, r in enumerate(rows)]
    for name, data in (("a.jsonl", rows), ("b.jsonl", changed)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in data),
                                     encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, err = _cli(capsys, "compare", "a.jsonl", "b.jsonl", "--metric", "accuracy", "--json",
                     "r.json", "--seed", "1", "-q")
    assert code == 0, err
    report = json.loads((tmp_path / "r.json").read_text())
    column = report["columns"][0]
    assert column["column"] == "accuracy" and column["test"] == MCNEMAR
    assert report["paired"] == len(rows) and column["losses"] == 0
    assert report["runs"]["a"]["metrics"][0]["metric"] == "accuracy"
    # B's changed rows now match their reference: every discordant pair is a win of B
    discordant = column["wins"]
    assert column["p_value"] == pytest.approx(sps.binomtest(discordant, discordant).pvalue)
    # a duplicated id exits 2 in one line, before anything is scored
    (tmp_path / "dup.jsonl").write_text((tmp_path / "a.jsonl").read_text().splitlines()[0]
                                        + "\n" + (tmp_path / "a.jsonl").read_text(),
                                        encoding="utf-8")
    code, err = _cli(capsys, "compare", "dup.jsonl", "b.jsonl", "--metric", "accuracy", "-q")
    assert code == 2
    assert err.strip().count("\n") == 0 and "duplicated key 'q01'" in err
    code, err = _cli(capsys, "compare", "a.jsonl", "b.jsonl", "--provider", "openai")
    assert code == 2 and "apply only with --metric" in err


def test_paired_bootstrap_memory_is_flat_in_resamples() -> None:
    """The index resampling works in chunks of bounded size whatever the resample count."""
    import tracemalloc

    d = np.random.default_rng(0).random(20_000)
    peaks = []
    for resamples in (400, 1600):
        tracemalloc.start()
        stats.bootstrap_means(d, n_resamples=resamples, seed=0)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < peaks[0] * 1.2 + 64 * 1024


# ------------------------------------------------------------------ what compare drops


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("cell, why", [
    ("NaN", "NaN is not a score"),
    ("Infinity", "inf is not a finite number"),
    ("-Infinity", "-inf is not a finite number"),
    ("7.5", "7.5 is outside accuracy's range \\[0, 1\\]"),
    ("-1", "-1 is outside accuracy's range \\[0, 1\\]"),
])
def test_a_score_that_is_no_score_is_refused_naming_run_row_and_column(
        tmp_path: Path, cell: str, why: str) -> None:
    """JSON lines as a user's editor writes them (Python's json reads NaN and Infinity)."""
    good = [{"id": i, "accuracy": float(i % 2)} for i in range(4)]
    a = _jsonl(tmp_path / "a.jsonl", good)
    b = tmp_path / "b.jsonl"
    b.write_text("".join(json.dumps(r) + "\n" for r in good[:2])
                 + f'{{"id": 2, "accuracy": {cell}}}\n' + json.dumps(good[3]) + "\n",
                 encoding="utf-8")
    with pytest.raises(UserInputError, match=f"^run B: column 'accuracy', row 2: {why}"):
        compare(a, b, n_resamples=10)


def test_a_boolean_score_is_refused(tmp_path: Path) -> None:
    a = _jsonl(tmp_path / "a.jsonl", [{"id": i, "accuracy": 1.0} for i in range(3)])
    b = _jsonl(tmp_path / "b.jsonl", [{"id": 0, "accuracy": 1.0}, {"id": 1, "accuracy": True},
                                      {"id": 2, "accuracy": 0.0}])
    with pytest.raises(UserInputError, match=r"b.jsonl: column 'accuracy', row 1: true is a "
                                              r"boolean among numbers$"):
        compare(a, b, n_resamples=10)
    every = _jsonl(tmp_path / "c.jsonl", [{"id": i, "accuracy": True} for i in range(3)])
    with pytest.raises(UserInputError,
                       match=r"^run B: column 'accuracy', row 0: True is a boolean, not a score"):
        compare(a, every, n_resamples=10)


def test_text_scores_from_csv_are_checked_the_same(tmp_path: Path) -> None:
    a = _jsonl(tmp_path / "a.jsonl", [{"id": i, "accuracy": 1.0} for i in range(3)])
    for cell, why in (("nan", "'nan' is not a finite number"), ("inf", "'inf' is not a finite"),
                      ("1.5", "1.5 is outside accuracy's range")):
        (tmp_path / "b.csv").write_text(f"id,accuracy\n0,1\n1,{cell}\n2,0\n", encoding="utf-8")
        with pytest.raises(UserInputError, match=f"^run B: column 'accuracy', row 1: {why}"):
            compare(a, tmp_path / "b.csv", n_resamples=10)


def test_a_metric_with_another_range_keeps_its_scores() -> None:
    """summary_coherence declares 1..5: 4.0 is a score there, 0.5 is not."""
    a = [{"id": i, "summary_coherence": float(1 + i % 5)} for i in range(6)]
    b = [{"id": i, "summary_coherence": 4.0} for i in range(6)]
    assert compare(a, b, n_resamples=10).columns[0].mean_b == 4.0
    with pytest.raises(UserInputError, match=r"0.5 is outside summary_coherence's range \[1, 5\]"):
        compare(a, [*b[:5], {"id": 5, "summary_coherence": 0.5}], n_resamples=10)


def test_unmeasured_cells_stay_unmeasured(tmp_path: Path) -> None:
    """null in JSON lines, an empty CSV cell and NaN in a pandas DataFrame (pandas's missing
    value) are unmeasured rows, counted and excluded, never an error."""
    import pandas as pd

    a = _jsonl(tmp_path / "a.jsonl", [{"id": i, "accuracy": None if i == 0 else 1.0}
                                      for i in range(4)])
    (tmp_path / "b.csv").write_text("id,accuracy\n0,1\n1,\n2,0\n3,1\n", encoding="utf-8")
    column = compare(a, tmp_path / "b.csv", n_resamples=10).columns[0]
    assert (column.unmeasured_a, column.unmeasured_b, column.n_paired) == (1, 1, 2)
    frame = pd.DataFrame({"id": [0, 1, 2], "accuracy": [1.0, float("nan"), 0.0]})
    assert compare(frame, frame, n_resamples=10).columns[0].excluded == 1


@pytest.mark.parametrize("a_ids, b_ids", [
    ('"id"\n"1"\n"2"\n"3"\n', [1, 2, 3]),          # CSV text vs JSON integers
    (None, [1.0, 2.0, 3.0]),                         # JSON 1 vs 1.0
])
def test_keys_compare_as_text(tmp_path: Path, a_ids: str | None, b_ids: list) -> None:
    if a_ids is None:
        a = _jsonl(tmp_path / "a.jsonl", [{"id": i, "accuracy": 1.0} for i in (1, 2, 3)])
    else:
        a = tmp_path / "a.csv"
        a.write_text(a_ids.replace("\n", ",accuracy\n", 1).replace('"\n', '",1\n'),
                     encoding="utf-8")
    b = _jsonl(tmp_path / "b.jsonl", [{"id": i, "accuracy": 0.0} for i in b_ids])
    report = compare(a, b, n_resamples=10)
    assert (report.key, report.paired, report.only_a, report.only_b) == ("id", 3, 0, 0)


def test_hashed_task_columns_compare_as_text(tmp_path: Path) -> None:
    """Without an id, the hash of the task columns: CSV "7" pairs with JSON 7 and 7.0."""
    (tmp_path / "a.csv").write_text("question,step,accuracy\nq1,7,1\nq2,8,0\n", encoding="utf-8")
    b = _jsonl(tmp_path / "b.jsonl", [{"question": "q1", "step": 7.0, "accuracy": 1.0},
                                      {"question": "q2", "step": 8, "accuracy": 1.0}])
    report = compare(tmp_path / "a.csv", b, n_resamples=10)
    assert (report.key, report.paired) == ("hash(question, step)", 2)


def test_no_pair_names_a_key_of_each_run() -> None:
    with pytest.raises(UserInputError, match="A's first key '1', B's 'x-1'"):
        compare([{"id": 1, "accuracy": 1.0}], [{"id": "x-1", "accuracy": 1.0}])
