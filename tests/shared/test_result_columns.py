"""The result columns are added on the Arrow table directly: nothing is fingerprinted (datasets'
``add_column`` pickles every value to hash it, inside a bare ``except`` that swallowed a
Ctrl-C), the rows and types are those ``add_column`` gives, and a Ctrl-C while they are added
ends the run with exit code 130 and the old output left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import datasets.fingerprint
import pyarrow

from shared.cli.main import main
from shared.runs.engines import with_columns

N = 2000


def rows(n: int = N) -> list[dict]:
    return [{"id": i, "prediction": "Paris" if i % 3 else "Lyon", "reference": "Paris"}
            for i in range(n)]


def new_columns(n: int = N) -> dict[str, list]:
    return {"accuracy": [None if i % 7 == 0 else float(i % 2) for i in range(n)],
            "accuracy_details": [json.dumps({"i": i}) for i in range(n)],
            "prediction": [f"p{i}" for i in range(n)],  # replaces a column of the input
            "empty": [None] * n}


def test_the_columns_are_those_add_column_gives_without_hashing_them(monkeypatch) -> None:
    dataset = datasets.Dataset.from_list(rows()).shuffle(seed=1).select(range(0, N, 2))
    columns = {k: v[: len(dataset)] for k, v in new_columns(len(dataset)).items()}
    expected = dataset
    for name, values in columns.items():
        if name in expected.column_names:
            expected = expected.remove_columns(name)
        expected = expected.add_column(name, values)
    hashed: list[int] = []
    real = datasets.fingerprint.Hasher.hash

    def counting(value):
        if isinstance(value, list) and len(value) == len(dataset):
            hashed.append(len(value))
        return real(value)

    monkeypatch.setattr(datasets.fingerprint.Hasher, "hash", staticmethod(counting))
    got = with_columns(dataset, columns)
    assert hashed == []
    assert got.column_names == expected.column_names
    assert got.features == expected.features
    assert got.to_list() == expected.to_list()


def test_a_ctrl_c_while_the_columns_are_added_leaves_the_old_output(
        tmp_path: Path, monkeypatch, capsys) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows()))
    out = tmp_path / "out.jsonl"
    out.write_text("the old output\n")
    real = pyarrow.array

    def interrupted(values, *args, **kwargs):
        if isinstance(values, list) and len(values) == N:  # a result column
            raise KeyboardInterrupt
        return real(values, *args, **kwargs)

    monkeypatch.setattr(pyarrow, "array", interrupted)
    assert main(["score", str(source), "-m", "accuracy", "-o", str(out), "-q"]) == 130
    assert out.read_text() == "the old output\n"
    assert "interrupted" in capsys.readouterr().err
    assert {p.name for p in tmp_path.iterdir()} == {"in.jsonl", "out.jsonl"}  # no temporary
