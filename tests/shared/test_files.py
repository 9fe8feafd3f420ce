"""shared.runs.files and shared.runs.records: the one check that no output destroys an input,
CSV formula neutralisation and the CSV/JSONL bound, what is not a regular file, and the removal
of a killed run's temporary file or folder."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from shared import UserInputError
from shared.runs.files import (
    FORMULA_STARTS,
    check_output_paths,
    neutralise_formula,
    remove_stale_temporaries,
    write_output,
)
from shared.runs.records import MAX_FIELD_CHARS, read_records, require_regular_file

REPO = Path(__file__).resolve().parents[2]


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_an_output_that_is_or_links_to_an_input_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"a": 1}\n', encoding="utf-8")
    (tmp_path / "link.jsonl").symlink_to(source)
    os.link(source, tmp_path / "hard.jsonl")
    (tmp_path / "sub").mkdir()
    for path in (source, tmp_path / "link.jsonl", tmp_path / "hard.jsonl",
                 tmp_path / "sub" / ".." / "in.jsonl"):
        with pytest.raises(UserInputError,
                           match=r"^--html .* is the INPUT file; write elsewhere$"):
            check_output_paths({"INPUT": source}, {"--out": tmp_path / "o.jsonl", "--html": path})
    # --out may be the input only with --overwrite-input, and the message names the flag
    with pytest.raises(UserInputError, match="or pass --overwrite-input"):
        check_output_paths({"INPUT": source}, {"--out": source}, overwrite_input=False)
    check_output_paths({"INPUT": source}, {"--out": source}, overwrite_input=True)
    with pytest.raises(UserInputError, match=r"^--html .* is the INPUT file"):
        check_output_paths({"INPUT": source}, {"--html": source}, overwrite_input=True)
    # the runs of compare: each input by its label
    other = tmp_path / "b.jsonl"
    other.write_text('{"a": 2}\n', encoding="utf-8")
    with pytest.raises(UserInputError, match=r"^--json .*b.jsonl is the B file"):
        check_output_paths({"A": source, "B": other}, {"--json": other})


def test_two_outputs_of_one_command_are_refused(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"a": 1}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    (tmp_path / "report.html").symlink_to(out)  # a link to an output not written yet
    with pytest.raises(UserInputError, match=r"^--out and --html are the same file"):
        check_output_paths({"INPUT": source}, {"--out": out, "--html": out})
    with pytest.raises(UserInputError, match=r"^--out and --html are the same file"):
        check_output_paths({"INPUT": source}, {"--out": out, "--html": tmp_path / "report.html"})
    with pytest.raises(UserInputError, match=r"^--json and --html are the same file"):
        check_output_paths({"INPUT": source}, {"--out": None, "--json": out, "--html": out})
    check_output_paths({"INPUT": source}, {"--out": out, "--json": None,
                                           "--html": tmp_path / "r.html"})


def test_an_output_inside_an_input_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    datasets.Dataset.from_list([{"a": 1}]).save_to_disk(str(folder))
    with pytest.raises(UserInputError, match="is inside the INPUT folder"):
        check_output_paths({"INPUT": folder}, {"--html": folder / "report.html"})


@pytest.mark.parametrize("cell", ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "@SUM(1)",
                                  "=1+2", "-2+3", "\tx", "\rx"])
def test_formula_cells_are_neutralised(cell: str) -> None:
    assert cell.startswith(FORMULA_STARTS)
    assert neutralise_formula(cell) == "'" + cell
    assert neutralise_formula("plain " + cell) == "plain " + cell


def test_csv_output_neutralises_text_cells_unless_raw(tmp_path: Path) -> None:
    rows = [{"id": "=1+2", "prediction": '=HYPERLINK("http://x","y")', "score": -0.5,
             "expected": ["=a"], "@col": "@SUM(1)"}]
    dataset = datasets.Dataset.from_list(rows)
    safe, raw = tmp_path / "safe.csv", tmp_path / "raw.csv"
    write_output(dataset, safe)
    write_output(dataset, raw, csv_raw=True)
    with safe.open(encoding="utf-8", newline="") as handle:
        header, cells = list(csv.reader(handle))
    assert header == ["id", "prediction", "score", "expected", "'@col"]
    # text starting with a formula character gets a quote; numbers stay numbers
    assert cells == ["'=1+2", "'=HYPERLINK(\"http://x\",\"y\")", "-0.5", '["=a"]', "'@SUM(1)"]
    assert read_records(raw) == [{"id": "=1+2", "prediction": rows[0]["prediction"],
                                  "score": "-0.5", "expected": ["=a"], "@col": "@SUM(1)"}]


def test_what_we_write_we_read_a_200_kb_cell(tmp_path: Path) -> None:
    prediction = "word " * 40_000  # 200,000 characters, above csv's default 131,072
    for name in ("out.csv", "out.jsonl"):
        write_output(datasets.Dataset.from_list([{"id": 1, "prediction": prediction}]),
                     tmp_path / name)
        assert read_records(tmp_path / name)[0]["prediction"] == prediction
    assert MAX_FIELD_CHARS > 200_000


def test_a_cell_beyond_the_bound_is_one_named_error(tmp_path: Path) -> None:
    """The bound is documented and applies to both formats; shown on a small bound here (a
    real one would need a 256 MiB file)."""
    code = (
        "import sys; from pathlib import Path; import shared.runs.records as r; "
        "r.MAX_FIELD_CHARS = 1000; p = Path(sys.argv[1]); "
        "p.write_text('a\\n' + 'x' * 1001 + '\\n', encoding='utf-8'); "
        "q = p.with_suffix('.jsonl'); "
        "q.write_text('{\"a\": \"' + 'x' * 1001 + '\"}\\n', encoding='utf-8')\n"
        "for path in (p, q):\n"
        "    try: r.read_records(path)\n"
        "    except r.UserInputError as e: print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "big.csv")], cwd=REPO,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert "line 2: not valid CSV (field larger than field limit (1000))" in lines[0]
    assert "line 1: longer than 1,000 characters" in lines[1]


def test_what_is_not_a_regular_file_is_refused_without_reading(tmp_path: Path) -> None:
    """In a child process with a timeout: if the check went, opening the pipe would block."""
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.csv"
    zero.symlink_to("/dev/zero")
    code = ("import sys; from pathlib import Path; from shared.runs.records import read_records\n"
            "for p in sys.argv[1:]:\n"
            "    try: read_records(Path(p))\n"
            "    except ValueError as e: print(e)\n")
    done = subprocess.run([sys.executable, "-c", code, str(fifo), str(zero)], cwd=REPO,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"INPUT {fifo}: a named pipe, not a regular file; give a file",
        f"INPUT {zero}: a device, not a regular file; give a file"]
    with pytest.raises(UserInputError, match="a folder, not a regular file"):
        require_regular_file(tmp_path)


def test_a_killed_runs_temporary_file_and_folder_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "scored.parquet"
    dead = _dead_pid()
    stale_file = tmp_path / f".{out.name}.{dead}.tmp"
    stale_file.write_text("half written", encoding="utf-8")
    stale_folder = tmp_path / f".{out.name}.{dead + 1_000_000}.tmp"  # no such process
    (stale_folder / "part").mkdir(parents=True)
    (stale_folder / "part" / "block.parquet").write_bytes(b"half written")
    live = tmp_path / f".{out.name}.{os.getppid()}.tmp"  # a live process's: kept
    live.mkdir()
    removed = remove_stale_temporaries(out)
    assert sorted(removed) == sorted([stale_file, stale_folder])
    assert not stale_file.exists() and not stale_folder.exists() and live.is_dir()


def test_jsonl_output_reads_back_every_float_exactly(tmp_path: Path) -> None:
    values = [0.1 + 0.2, 1 / 3, 2.220446049250313e-16, 123456.78901234567]
    write_output(datasets.Dataset.from_list([{"v": v} for v in values]), tmp_path / "o.jsonl")
    assert [json.loads(line)["v"] for line in (tmp_path / "o.jsonl").open()] == values
