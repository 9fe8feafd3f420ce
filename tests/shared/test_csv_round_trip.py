"""CSV output against spreadsheet formulas, and what a rerun reads: a cell that is a plain
number is written as it is; a text cell a spreadsheet would run gets a leading ``'``; reading
the file back (score, compare, agree, the demo's upload) gives every text exactly as it was, so
a CSV-scored run pairs with the JSONL-scored run of the same data on every row."""

from __future__ import annotations

import csv
import json
import random
import string
from pathlib import Path

import datasets
import pytest

from shared.cli.main import main
from shared.runs.files import write_output
from shared.runs.records import neutralise_formula, read_records, unneutralised

NUMBERS = ["-3", "-0.5", "+2", "+0.25", "-1e3", "+1E-2", "-.5", "3", "0.0"]
TEXTS = ["+44 20 7946 0958", "- a list item", "-3 apples", "=1+2", '=HYPERLINK("x","y")',
         "@SUM(1)", "\tindented", "\rreturn", "-", "+", "'", "''", "'=already quoted",
         "''-twice", "'plain quote", "plain", "1-2", "a=b", "-inf", "+nan", "--flag", ""]


def random_texts(n: int, seed: int) -> list[str]:
    """Short texts drawn from formula characters, quotes, digits and letters."""
    rng = random.Random(seed)
    alphabet = "=+-@'\t\r .e0123456789" + string.ascii_letters[:6]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(n)]


def test_a_plain_number_is_no_formula() -> None:
    for number in NUMBERS:
        assert neutralise_formula(number) == number
    for text in ("-3 apples", "+44 20 7946 0958", "=1", "-", "- 3"):
        assert neutralise_formula(text) == "'" + text


@pytest.mark.parametrize("seed", range(3))
def test_reading_is_the_exact_inverse_of_writing(seed: int) -> None:
    for text in NUMBERS + TEXTS + random_texts(2000, seed):
        assert unneutralised(neutralise_formula(text)) == text, repr(text)


def test_every_cell_reads_back_as_it_was_written(tmp_path: Path) -> None:
    texts = NUMBERS + TEXTS + random_texts(300, 7)
    rows = [{"id": f"r{i}", "prediction": text, "-col": text, "score": float(i) - 150.5}
            for i, text in enumerate(texts)]
    out = tmp_path / "out.csv"
    write_output(datasets.Dataset.from_list(rows), out)
    with out.open(encoding="utf-8", newline="") as handle:
        header, *cells = list(csv.reader(handle))
    assert header == ["id", "prediction", "'-col", "score"]
    for row, written in zip(rows, cells, strict=True):
        if row["prediction"] in NUMBERS:  # a spreadsheet shows the number itself
            assert written[1] == row["prediction"]
        assert written[3] == repr(row["score"])  # numbers as they are, negative ones too
    back = read_records(out)
    assert [r["prediction"] for r in back] == texts
    assert [r["-col"] for r in back] == texts
    assert [float(r["score"]) for r in back] == [r["score"] for r in rows]


def test_a_csv_scored_run_pairs_with_the_jsonl_scored_run(tmp_path: Path, capsys) -> None:
    predictions = ["-3", "-0.5", "+44 20 7946 0958", "- Paris", "=1+2", "@home", "Paris", "+1"]
    rows = [{"question": f"q{i}", "prediction": p, "reference": "Paris"}
            for i, p in enumerate(predictions)]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    as_jsonl, as_csv, again = tmp_path / "a.jsonl", tmp_path / "b.csv", tmp_path / "c.csv"
    assert main(["score", str(source), "-m", "accuracy", "-o", str(as_jsonl), "-q"]) == 0
    assert main(["score", str(source), "-m", "accuracy", "-o", str(as_csv), "-q"]) == 0
    # a rerun on the CSV reads the texts as they were and writes the same file again
    assert main(["score", str(as_csv), "-m", "accuracy", "-o", str(again), "-q"]) == 0
    assert again.read_bytes() == as_csv.read_bytes()
    assert [r["prediction"] for r in read_records(as_csv)] == predictions
    report = tmp_path / "cmp.json"
    assert main(["compare", str(as_jsonl), str(as_csv), "-m", "accuracy", "--json",
                 str(report), "-q"]) == 0
    comparison = json.loads(report.read_text())
    assert comparison["paired"] == len(rows), comparison
    capsys.readouterr()
