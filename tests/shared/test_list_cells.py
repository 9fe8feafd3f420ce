"""A list where a metric takes one text (prediction, baseline_prediction, question, source) is
refused before any work, naming the column and the row; only several references are scored one
by one, the best kept, and "best" follows the metric's direction."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest

from shared.cli.main import main
from shared.runs.chunks import best_per_row
from shared.runs.files import read_input

UNREACHABLE = ["--provider", "openai-compatible", "--base-url", "http://127.0.0.1:9/v1",
               "--model", "m"]


def write_rows(path: Path, rows: list[dict]) -> Path:
    if path.suffix == ".parquet":
        datasets.Dataset.from_list(rows).to_parquet(str(path))
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


BASE = {"question": "Capital of France?", "prediction": "Paris", "reference": "Paris",
        "baseline_prediction": "Lyon", "source": "Paris is the capital of France.",
        "contexts": ["Paris is the capital of France."]}

CASES = [
    # (metric, options, column, the row holding the list, every row a list)
    ("accuracy", [], "prediction", 2, False),
    ("accuracy", [], "prediction", 0, True),
    ("rouge", [], "prediction", 1, False),
    ("l3score", UNREACHABLE, "question", 1, False),
    ("l3score", UNREACHABLE, "prediction", 0, True),
    ("pairwise", [*UNREACHABLE, "--option", "pairwise.criteria=Which is right?"],
     "baseline_prediction", 1, False),
    ("pairwise", [*UNREACHABLE, "--option", "pairwise.criteria=Which is right?"],
     "baseline_prediction", 0, True),
    ("summary_coherence", UNREACHABLE, "source", 2, False),
    ("g_eval", [*UNREACHABLE, "--option", "g_eval.criteria=Is it right?"], "source", 1, False),
    ("toxicity", UNREACHABLE, "prediction", 1, False),
]


# a Parquet column holds one type: only a column of lists in every row
WITH_FILES = [(*case, ".jsonl") for case in CASES] + [
    (*case, ".parquet") for case in CASES if case[-1]]


@pytest.mark.parametrize(("metric", "options", "column", "row", "every", "suffix"), WITH_FILES)
def test_a_list_where_one_text_is_expected_is_refused(
        tmp_path: Path, capsys, metric: str, options: list[str], column: str, row: int,
        every: bool, suffix: str) -> None:
    rows = [dict(BASE) for _ in range(3)]
    for i, r in enumerate(rows):
        if every or i == row:
            r[column] = ["Berlin", "Madrid", r[column]]
    source = write_rows(tmp_path / f"in{suffix}", rows)
    out = tmp_path / "out.jsonl"
    assert main(["score", str(source), "-m", metric, "-o", str(out), "-q", *options]) == 2
    error = capsys.readouterr().err
    assert f"column {column!r}, row {row}" in error, error
    assert "one text is expected" in error and error.count("\n") == 1
    assert not out.exists()


def test_a_mixed_reference_column_still_scores_each_reference(tmp_path: Path, capsys) -> None:
    rows = [{**BASE, "reference": ["Berlin", "Paris"]}, {**BASE, "reference": "Lyon"}]
    source = write_rows(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    assert main(["score", str(source), "-m", "accuracy", "-o", str(out), "-q"]) == 0
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["accuracy"] for r in scored] == [1.0, 0.0]
    # the prediction column, a single text, is not rewritten as a one-item list
    assert [r["prediction"] for r in scored] == ["Paris", "Paris"]
    capsys.readouterr()


def test_a_mixed_single_text_column_is_refused_at_reading(tmp_path: Path) -> None:
    rows = [dict(BASE), {**BASE, "question": ["a", "b"]}, dict(BASE)]
    source = write_rows(tmp_path / "in.jsonl", rows)
    with pytest.raises(Exception, match=r"column 'question', row 1: a list of 2"):
        read_input(source)


@pytest.mark.parametrize("lower_is_better", [False, True])
def test_the_best_of_several_references_follows_the_direction(lower_is_better: bool) -> None:
    # two rows: row 0 expanded into 3 copies, row 1 into 2; one copy unmeasured
    scores = [0.2, None, 0.9, 0.6, 0.4]
    owners = [0, 0, 0, 1, 1]
    details = [{"i": i} for i in range(5)]
    rows, kept, unmeasured = best_per_row({"s": scores}, details, {1: "judge fault"}, owners, 2,
                                          "s", lower_is_better)
    pick = min if lower_is_better else max
    expected = [pick(v for v, o in zip(scores, owners, strict=True) if o == row and v is not None)
                for row in range(2)]
    assert rows["s"] == expected
    assert [k["best_of"] for k in kept] == [3, 2]
    assert [k["best_reference"] for k in kept] == [scores[:3].index(expected[0]),
                                                   scores[3:].index(expected[1])]
    assert unmeasured == {}
