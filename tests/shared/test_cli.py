"""The score CLI (``judge-metrics score`` / ``judge-metrics score``): file formats, output
columns, summary, bad input, dry run, and resuming a run killed with SIGKILL against the real
llama.cpp server. Expected scores come from the metrics' own ``compute`` on the same rows."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import evaluate
import pyarrow.parquet as pq
import pytest
from faultproxy import FaultProxy
from killed_runs import SUM_ROWS, kill_half_way_then_rerun
from tmpfs import mounted_tmpfs

from shared.cli.main import main
from shared.kit import registry

REPO = Path(__file__).resolve().parents[2]

ROWS = [
    {"id": 1, "question": "What is the capital of France?", "prediction": "Paris",
     "reference": "Paris", "expected": ["Paris", "France"]},
    {"id": 2, "question": "Who wrote Hamlet?", "prediction": "Hamlet was written by Shakespeare",
     "reference": ["William Shakespeare wrote Hamlet", "Shakespeare"],
     "expected": ["Shakespeare"]},
    {"id": 3, "question": "What is the largest planet?", "prediction": "Saturn",
     "reference": "Jupiter is the largest planet", "expected": ["Jupiter"]},
    {"id": 4, "question": "At what temperature does water boil?",
     "prediction": "Water boils at 100 degrees Celsius at sea level",
     "reference": "100 degrees Celsius at sea level", "expected": ["100 degrees", "sea level"]},
]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _load(name: str) -> evaluate.EvaluationModule:
    return evaluate.load(registry.metric_path(name))


def _summary_row(stdout: str, metric: str) -> list[str]:
    for line in stdout.splitlines():
        cells = line.split()
        if cells and cells[0] == metric:
            return cells
    raise AssertionError(f"no summary row for {metric} in:\n{stdout}")


def _as_lists(references: list) -> list[list[str]]:
    return [r if isinstance(r, list) else [r] for r in references]


def test_jsonl_with_string_and_embedding_metrics(tmp_path: Path, capsys) -> None:
    source = _write_jsonl(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / "sub" / "scored.jsonl"
    code = main(["score", str(source), "--metric", "rouge", "--metric", "semantic_list_contains",
                 "--metric", "accuracy", "--out", str(out), "--quiet", "--chunk-size", "3"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "%|" not in captured.err  # --quiet: no progress bar

    scored = _read_jsonl(out)
    assert [r["id"] for r in scored] == [1, 2, 3, 4]
    assert list(scored[0]) == [
        "id", "question", "prediction", "reference", "expected",
        "semantic_list_contains", "semantic_list_contains_details", "accuracy",
        "accuracy_details", "rouge1", "rouge2", "rougeL", "rougeLsum", "rouge_details",
    ]
    # a column mixing one and several references holds lists in the output
    assert [r["reference"] for r in scored] == _as_lists([r["reference"] for r in ROWS])

    predictions = [r["prediction"] for r in ROWS]
    references = [r["reference"] for r in ROWS]
    rouge = _load("rouge").compute(predictions=predictions, references=references)
    for key in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        assert [r[key] for r in scored] == pytest.approx([s[key] for s in rouge["scores"]])
    slc = _load("semantic_list_contains").compute(
        predictions=predictions, references=[r["expected"] for r in ROWS])
    assert [r["semantic_list_contains"] for r in scored] == pytest.approx(slc["scores"])
    for row, detail in zip(scored, slc["details"], strict=True):
        written = json.loads(row["semantic_list_contains_details"])
        assert written["matches"] == detail["matches"]
        assert written["similarities"] == pytest.approx(detail["similarities"])
    accuracy = _load("accuracy")
    best = [
        max(accuracy.compute(predictions=[p] * len(refs), references=refs)["scores"])
        for p, refs in zip(predictions, _as_lists(references), strict=True)
    ]
    assert [r["accuracy"] for r in scored] == best

    table = captured.out
    assert _summary_row(table, "accuracy")[1:4] == [f"accuracy={sum(best) / 4:.4f}", "4", "0"]
    assert _summary_row(table, "rouge")[1] == f"rouge1={rouge['rouge1']:.4f}"
    assert _summary_row(table, "rouge")[-3:] == ["-", "-", "-"]  # no judge calls, no cost
    for header in ("metric", "aggregate(s)", "rows", "unmeasured", "calls", "cache hits", "cost"):
        assert header in table.splitlines()[0]


def test_option_reaches_the_named_metric_only(tmp_path: Path, capsys) -> None:
    source = _write_jsonl(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / "scored.jsonl"
    code = main(["score", str(source), "--metric", "accuracy", "--metric", "rouge", "--out",
                 str(out), "--quiet", "--option", "accuracy.mode=contains",
                 "--option", "accuracy.threshold=0.6"])
    assert code == 0, capsys.readouterr().err
    scored = _read_jsonl(out)
    expected = _load("accuracy").compute(
        predictions=[r["prediction"] for r in ROWS], references=[r["reference"] for r in ROWS],
        questions=[r["question"] for r in ROWS], mode="contains", threshold=0.6)
    assert [r["accuracy"] for r in scored] == pytest.approx(expected["scores"])
    default = _load("accuracy").compute(
        predictions=[r["prediction"] for r in ROWS], references=[r["reference"] for r in ROWS])
    assert expected["scores"] != default["scores"]  # the option changed what was scored


@pytest.mark.parametrize("options, message", [
    (["--option", "accuracy.bogus=1"], "--option 'accuracy.bogus=1': accuracy has no option "
     "'bogus' (it takes: case_sensitive, fuzzy_match, fuzzy_threshold, mode, normalize_text, "
     "reference_separator, return_confidence, seed, threshold)"),
    (["--option", "accuracy.fuzzy=true"], "--option 'accuracy.fuzzy=true': accuracy has no "
     "option 'fuzzy' (did you mean 'fuzzy_match'?)"),
    (["--option", "mode=contains"], "--option 'mode=contains': rouge has no option 'mode'"),
    (["--option", "accuracy.mode=fuzzy"],
     "--option 'accuracy.mode=fuzzy': accuracy: mode must be one of exact, contains, recall, "
     "precision, f1; got 'fuzzy'"),
    (["--option", "accuracy.threshold=high"],
     "--option 'accuracy.threshold=high': accuracy: threshold: 'high' is not a valid float in "
     "[0, 1] or None"),
    (["--option", "accuracy.threshold=1.5"], "threshold must be in [0, 1], got 1.5"),
    (["--option", "accuracy.case_sensitive=1"], "case_sensitive must be True or False, got 1"),
    (["--option", "rouge.tokenizer=split"], "tokenizer cannot be given on the command line"),
    (["--option", "nosuchmetric.mode=x"], "expected [METRIC.]NAME=VALUE"),
    (["--option", "mode"], "expected [METRIC.]NAME=VALUE"),
])
def test_bad_options_exit_2_in_one_line(tmp_path: Path, capsys, options, message) -> None:
    source = _write_jsonl(tmp_path / "in.jsonl", ROWS)
    code = main(["score", str(source), "--metric", "accuracy", "--metric", "rouge", "--out",
                 str(tmp_path / "o.jsonl"), "--quiet", *options])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_unscoped_option_with_metric_all_is_refused(tmp_path: Path, capsys) -> None:
    source = _write_jsonl(tmp_path / "in.jsonl", ROWS)
    code = main(["score", str(source), "--metric", "all", "--out", str(tmp_path / "o.jsonl"),
                 "--option", "mode=contains"])
    assert code == 2 and "METRIC.mode=contains" in capsys.readouterr().err


def test_csv_in_csv_out_keeps_json_list_cells(tmp_path: Path, capsys) -> None:
    source = tmp_path / "in.csv"
    with source.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["prediction", "reference"])
        writer.writeheader()
        for row in ROWS:
            reference = row["reference"]
            writer.writerow({"prediction": row["prediction"],
                             "reference": json.dumps(reference) if isinstance(reference, list)
                             else reference})
    out = tmp_path / "scored.csv"
    assert main(["score", str(source), "-m", "bleu", "--out", str(out), "-q"]) == 0, \
        capsys.readouterr().err
    with out.open(newline="", encoding="utf-8") as handle:
        scored = list(csv.DictReader(handle))
    assert list(scored[0]) == ["prediction", "reference", "bleu", "bleu_details"]
    assert json.loads(scored[1]["reference"]) == ROWS[1]["reference"]
    bleu = _load("bleu").compute(predictions=[r["prediction"] for r in ROWS],
                                 references=[r["reference"] for r in ROWS])
    assert [float(r["bleu"]) for r in scored] == pytest.approx(bleu["scores"])


@pytest.mark.server
def test_saved_dataset_with_a_judge_metric_and_parquet_output(
    tmp_path: Path, llama_server: str, cache_dir: str, capsys
) -> None:
    rows = [{k: r[k] for k in ("question", "prediction")} | {"reference": _as_lists(
        [r["reference"]])[0][0]} for r in ROWS[:3]]
    folder = tmp_path / "saved"
    datasets.Dataset.from_list(rows).save_to_disk(str(folder))
    out = tmp_path / "scored.parquet"
    argv = ["score", str(folder), "--metric", "l3score", "--metric", "rouge", "--out", str(out),
            "--provider", "openai-compatible", "--base-url", llama_server, "--model", "smollm2",
            "--cache-dir", cache_dir, "--max-concurrency", "2", "--quiet"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    table = pq.read_table(out).to_pylist()
    assert [r["question"] for r in table] == [r["question"] for r in rows]
    for row in table:
        assert set(row) >= {"l3score", "l3score_details", "rouge1", "rougeLsum", "rouge_details"}
        assert 0.0 <= row["l3score"] <= 1.0
        assert json.loads(row["l3score_details"])["mode"] == "top5"
    l3 = _summary_row(first, "l3score")
    mean = sum(r["l3score"] for r in table) / 3
    assert l3[1:6] == [f"L3Score={mean:.4f}", "3", "0", "3", "0"]  # 3 calls sent, 0 cache hits

    assert main(argv) == 0  # the same run again: every judge call comes from the cache
    again = _summary_row(capsys.readouterr().out, "l3score")
    assert again[1:6] == [f"L3Score={mean:.4f}", "3", "0", "0", "3"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--metric", "nope"], "unknown metric 'nope'"),
        (["--metric", "faithfulness"], "needs column(s) 'contexts'"),
        (["--metric", "rouge", "--chunk-size", "0"], "--chunk-size must be >= 1"),
        (["--metric", "rouge", "--provider", "openai-compatible", "--metric", "l3score"],
         "needs base_url"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(
    tmp_path: Path, capsys, argv: list[str], message: str
) -> None:
    source = _write_jsonl(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    assert main(["score", str(source), "--out", str(out), "-q", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_bad_input_files_exit_2_naming_the_file_line_or_row(tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "out.jsonl")
    cases = {}
    cases[str(tmp_path / "missing.jsonl")] = "no such file or folder"
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(ROWS[0]) + "\n{not json\n")
    cases[str(broken)] = "broken.jsonl, line 2: not valid JSON"
    (tmp_path / "folder").mkdir()
    cases[str(tmp_path / "folder")] = "not one saved with Dataset.save_to_disk"
    binary = tmp_path / "binary.parquet"
    binary.write_bytes(b"\x00\xff not parquet")
    cases[str(binary)] = "not a readable Parquet file"
    none_cell = _write_jsonl(tmp_path / "none.jsonl", [*ROWS[:2], {**ROWS[2], "prediction": None}])
    cases[str(none_cell)] = "metric 'bleu': column 'prediction', row 2: is None"
    wrong = tmp_path / "rows.txt"
    wrong.write_text("x")
    cases[str(wrong)] = "unsupported format .txt"
    for path, message in cases.items():
        assert main(["score", path, "--metric", "bleu", "--out", out, "-q"]) == 2, path
        err = capsys.readouterr().err
        assert message in err, err
    assert main(["score", str(none_cell), "-m", "bleu", "--out", str(tmp_path / "x.xlsx")]) == 2
    assert "unsupported format .xlsx" in capsys.readouterr().err


def test_console_command_exits_2_without_a_traceback(tmp_path: Path) -> None:
    command = Path(sys.executable).parent / "judge-metrics"
    result = subprocess.run(
        [str(command), "score", str(tmp_path / "missing.jsonl"), "--metric", "bleu",
         "--out", str(tmp_path / "o.jsonl")],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "missing.jsonl: no such file or folder" in result.stderr
    assert "Traceback" not in result.stderr
    usage = subprocess.run([str(command), "score", "x.jsonl"], capture_output=True, text=True,
                           timeout=60)
    assert usage.returncode == 2 and "--metric" in usage.stderr


def test_dry_run_sends_no_request(tmp_path: Path, cache_dir: str, capsys) -> None:
    source = _write_jsonl(tmp_path / "in.jsonl", ROWS)
    with FaultProxy(None, default="status:500") as proxy:
        code = main(["score", str(source), "--metric", "all", "--dry-run", "-q",
                     "--provider", "openai-compatible", "--base-url", proxy.url,
                     "--model", "gpt-4o-mini", "--cache-dir", cache_dir])
        assert proxy.count == 0
    captured = capsys.readouterr()
    assert code == 0, captured.err
    # l3score: one request per (row, reference): the second row has two references
    assert _summary_row(captured.out, "l3score")[1] == "5"
    assert "skipped faithfulness: needs column(s) contexts" in captured.err
    assert "nothing was sent" in captured.out
    assert _summary_row(captured.out, "total")[-1].startswith("$")  # gpt-4o-mini has a price
    assert {p.name for p in tmp_path.iterdir()} == {"in.jsonl", "judge-cache"}  # no output


@pytest.mark.server
@pytest.mark.slow
def test_sigkill_then_rerun_sends_only_the_missing_calls(
    tmp_path: Path, llama_server: str, cache_dir: str
) -> None:
    """Kill the CLI with SIGKILL after 2 of 6 judge answers arrived; the rerun sends the 4
    calls that had not completed and writes the full output."""
    source = _write_jsonl(tmp_path / "sums.jsonl", SUM_ROWS)
    out = tmp_path / "scored.jsonl"
    answered = 2
    rerun, sent = kill_half_way_then_rerun(source, out, llama_server, cache_dir, [], answered)
    assert rerun.returncode == 0, rerun.stderr
    assert sent == len(SUM_ROWS) - answered
    summary = _summary_row(rerun.stdout, "l3score")
    assert summary[2:6] == ["6", "0", str(len(SUM_ROWS) - answered), str(answered)]
    scored = _read_jsonl(out)
    assert len(scored) == len(SUM_ROWS) and all(0 <= r["l3score"] <= 1 for r in scored)


# ------------------------------------------------------------------ hostile input


def _one_line_exit_2(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("judge-metrics: error: "), err
    return lines[0]


def test_csv_and_jsonl_are_read_strictly(tmp_path: Path, capsys) -> None:
    """A CSV with an unterminated quote, too many or too few cells, a bad byte; a JSONL line
    with a lone surrogate escape: exit 2 naming the file and line, no output, never a merged or
    cut row."""
    cases = {
        "unterminated.csv": (b'prediction,reference\na,"unterminated\nb,b\nc,c\n', "line 2"),
        "extra.csv": (b"prediction,reference\na,a\nb,b,extra\n", "line 3: 3 cells"),
        "short.csv": (b"prediction,reference\na,a\nb\n", "line 3: 1 cells"),
        "latin1.csv": ("prediction,reference\na,a\ncaf\u00e9,b\n".encode("latin-1"),
                       "line 3: not UTF-8"),
        "repeated.csv": (b"prediction,prediction,reference\na,b,c\n", "line 1: the header"),
        "surrogate.jsonl": (b'{"prediction": "a", "reference": "a"}\n'
                            b'{"prediction": "x\\ud800y", "reference": "b"}\n', "line 2"),
        "surrogate_list.jsonl": (b'{"prediction": "a", "reference": ["ok", "\\udfff"]}\n',
                                 "line 1"),
        "latin1.jsonl": ('{"prediction": "caf\u00e9", "reference": "b"}\n'.encode("latin-1"),
                         "line 1: not UTF-8"),
    }
    out = tmp_path / "out.jsonl"
    for name, (data, where) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        line = _one_line_exit_2(capsys, ["score", str(path), "-m", "accuracy", "-o", str(out),
                                         "-q"])
        assert f"{name}, {where}" in line, line
        assert not out.exists()
    # the same rows, well-formed, are read (a quoted cell may hold a newline and a comma)
    good = tmp_path / "good.csv"
    good.write_text('prediction,reference\na,a\n"b,\nb","b,\nb"\n\nc,d\n', encoding="utf-8")
    assert main(["score", str(good), "-m", "accuracy", "-o", str(out), "-q"]) == 0
    assert [r["accuracy"] for r in _read_jsonl(out)] == [1.0, 1.0, 0.0]


def test_out_equal_to_input_needs_the_overwrite_flag(tmp_path: Path, capsys) -> None:
    source = _write_jsonl(tmp_path / "rows.jsonl", ROWS)
    before = source.read_bytes()
    line = _one_line_exit_2(capsys, ["score", str(source), "-m", "accuracy", "-o",
                                     str(tmp_path / "." / "rows.jsonl"), "-q"])
    assert "--overwrite-input" in line
    assert source.read_bytes() == before
    assert main(["score", str(source), "-m", "accuracy", "-o", str(source), "-q",
                 "--overwrite-input"]) == 0
    assert [r["accuracy"] for r in _read_jsonl(source)] == [1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "argv, message, hidden",
    [
        (["--response-format", "weird"], "response_format must be one of json_schema,", None),
        (["--provider", "openai-compatible", "--model", "m", "--base-url",
          "http://127.0.0.1:notaport/v1"], "the port must be a number", None),
        (["--provider", "openai-compatible", "--model", "m", "--base-url",
          "http://127.0.0.1:99999/v1"], "the port must be a number", None),
        (["--provider", "openai-compatible", "--model", "m", "--base-url", "ftp://host/v1"],
         "is not an http(s) URL", None),
        (["--provider", "openai-compatible", "--model", "m", "--base-url", "http:///v1"],
         "is not an http(s) URL", None),
        (["--provider", "openai-compatible", "--model", "m", "--base-url",
          "http://alice:PASSWORD-42@127.0.0.1:8000/v1"], "holds credentials", "PASSWORD-42"),
        (["--provider", "openai-compatible", "--model", "m", "--base-url",
          "http://alice:PASSWORD-42@127.0.0.1:notaport/v1"], "holds credentials", "PASSWORD-42"),
        (["--timeout", "0"], "timeout must be a positive number", None),
        (["--model", "/nonexistent/judge.gguf"], "no such model file or folder", None),
        (["--max-concurrency", "0"], "max_concurrency must be >= 1", None),
    ],
)
def test_every_judge_option_is_checked_before_any_work(
    tmp_path: Path, capsys, argv: list[str], message: str, hidden: str | None
) -> None:
    """One line, exit 2, before the first metric runs (accuracy comes first in the list and
    would write its output otherwise) and before the input is read (it is not even valid)."""
    source = tmp_path / "in.jsonl"
    source.write_text("{not json\n")
    out = tmp_path / "out.jsonl"
    line = _one_line_exit_2(capsys, ["score", str(source), "-m", "accuracy", "-m", "l3score",
                                     "-o", str(out), "-q", *argv])
    assert message in line, line
    assert "not valid JSON" not in line
    if hidden:
        assert hidden not in line and "alice" not in line
    assert not out.exists()


def test_unwritable_output_is_one_line_before_any_work(tmp_path: Path, capsys) -> None:
    source = _write_jsonl(tmp_path / "in.jsonl", ROWS)
    for target in ("/proc/judge-metrics-test.jsonl", "/proc/self/status.jsonl"):
        line = _one_line_exit_2(capsys, ["score", str(source), "-m", "accuracy", "-o", target,
                                         "-q"])
        assert target in line and ("cannot" in line or "not writable" in line), line


@pytest.fixture()
def small_tmpfs(tmp_path: Path):
    """A real 256 KiB tmpfs (root only), unmounted after the test."""
    with mounted_tmpfs(tmp_path / "small", "256k") as mount_point:
        yield mount_point


def test_full_disk_is_one_line_and_says_the_answers_are_cached(
        small_tmpfs: Path, tmp_path: Path, cache_dir: str, capsys) -> None:
    """The output does not fit on a real, small tmpfs: exit 2, one line saying so and where the
    cache is; no temporary file is left on the full disk."""
    rows = [{"prediction": f"{i} " + "word " * 200, "reference": f"{i} reference"}
            for i in range(400)]  # ~400 KiB of output for a 256 KiB disk
    source = _write_jsonl(tmp_path / "big.jsonl", rows)
    out = small_tmpfs / "scored.jsonl"
    line = _one_line_exit_2(capsys, ["score", str(source), "-m", "accuracy", "-o", str(out),
                                     "-q", "--cache-dir", cache_dir])
    assert f"cannot write --out {out}: No space left on device" in line, line
    assert "cache" in line and cache_dir in line
    assert list(small_tmpfs.iterdir()) == []


def test_a_killed_runs_temporary_file_is_removed_by_the_next_run(tmp_path: Path) -> None:
    """``.OUT.PID.tmp`` of a process that is gone is deleted; a live process's is kept."""
    source = _write_jsonl(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / "scored.jsonl"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = tmp_path / f".scored.jsonl.{int(dead.stdout)}.tmp"
    stale.write_text("partial")
    live = tmp_path / f".scored.jsonl.{os.getppid()}.tmp"  # the process running pytest's parent
    live.write_text("being written")
    other = tmp_path / f".other.jsonl.{int(dead.stdout)}.tmp"
    other.write_text("another output's")
    assert main(["score", str(source), "-m", "accuracy", "-o", str(out), "-q"]) == 0
    assert not stale.exists() and live.exists() and other.exists() and out.exists()


@pytest.mark.slow
def test_a_corrupt_cache_is_one_warning_line_and_the_run_goes_on(tmp_path: Path) -> None:
    """The CLI (a real process: its warning output is what is checked) with a garbage cache
    file and a judge metric (the proxy answers itself: only the cache matters): one warning
    line saying where the file went, exit 0."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "judge-calls.sqlite3").write_bytes(b"garbage, not sqlite\n" * 50)
    source = _write_jsonl(tmp_path / "in.jsonl", ROWS)
    with FaultProxy(None, default="synthetic") as proxy:
        done = subprocess.run(
            [sys.executable, "-m", "judge_metrics", "score", str(source), "-m", "l3score", "-o",
             str(tmp_path / "out.jsonl"), "-q", "--provider", "openai-compatible",
             "--base-url", proxy.url, "--model", "m", "--cache-dir", str(cache)],
            cwd=REPO, capture_output=True, text=True, timeout=300,
            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warned) == 1 and "moved to" in warned[0] and "broken-" in warned[0], done.stderr
    assert len(list(cache.glob("judge-calls.sqlite3.broken-*"))) >= 1


# ------------------------------------------------------------------ outputs, inputs


def _scored_run(tmp_path: Path, name: str) -> Path:
    path = _write_jsonl(tmp_path / name, [{**r, "accuracy": float(i % 2)}
                                          for i, r in enumerate(ROWS)])
    return path


@pytest.mark.parametrize("argv, option", [
    (["score", "{in}", "-m", "accuracy", "-o", "{tmp}/o.jsonl", "--html", "{in}"], "--html"),
    (["score", "{in}", "-m", "accuracy", "-o", "{tmp}/o.jsonl", "--html", "{link}"], "--html"),
    (["score", "{in}", "-m", "accuracy", "-o", "{tmp}/o.jsonl", "--html", "{tmp}/o.jsonl"],
     "--out and --html"),
    (["compare", "{a}", "{b}", "--json", "{a}"], "--json"),
    (["compare", "{a}", "{b}", "--html", "{b}"], "--html"),
    (["compare", "{a}", "{b}", "--json", "{tmp}/r", "--html", "{tmp}/r"], "--json and --html"),
    (["agree", "{in}", "-m", "accuracy", "--label", "ok", "--json", "{in}"], "--json"),
    (["agree", "{in}", "-m", "accuracy", "--label", "ok", "--out", "{in}"], "--out"),
    (["agree", "{in}", "-m", "accuracy", "--label", "ok", "--out", "{tmp}/s.jsonl",
      "--html", "{tmp}/s.jsonl"], "--out and --html"),
])
def test_no_output_option_can_destroy_an_input(tmp_path: Path, capsys, argv: list[str],
                                               option: str) -> None:
    source = _write_jsonl(tmp_path / "in.jsonl", [{**r, "ok": i % 2 == 0}
                                                  for i, r in enumerate(ROWS)])
    (tmp_path / "link.jsonl").symlink_to(source)
    paths = {"in": source, "link": tmp_path / "link.jsonl", "tmp": tmp_path,
             "a": _scored_run(tmp_path, "a.jsonl"), "b": _scored_run(tmp_path, "b.jsonl")}
    before = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    line = _one_line_exit_2(capsys, [a.format(**paths) for a in argv] + ["-q"])
    assert option in line and ("is the" in line or "same file" in line), line
    assert {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("command", ["score", "agree", "compare-a", "compare-b"])
def test_an_input_that_never_ends_is_refused_up_front(tmp_path: Path, kind: str,
                                                      command: str) -> None:
    """A named pipe, or a link to /dev/zero: exit 2 in one line, at once (a child process with a
    timeout, so a regression cannot hang the suite)."""
    endless = tmp_path / "endless.jsonl"
    if kind == "fifo":
        os.mkfifo(endless)
    else:
        endless.symlink_to("/dev/zero")
    good = _scored_run(tmp_path, "good.jsonl")
    argv = {"score": ["score", str(endless), "-m", "accuracy", "-o", str(tmp_path / "o.jsonl")],
            "agree": ["agree", str(endless), "-m", "accuracy", "--label", "ok"],
            "compare-a": ["compare", str(endless), str(good)],
            "compare-b": ["compare", str(good), str(endless)]}[command]
    done = subprocess.run([sys.executable, "-m", "judge_metrics", *argv, "-q"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    label = "B" if command == "compare-b" else ("A" if command == "compare-a" else "INPUT")
    what = "a named pipe" if kind == "fifo" else "a device"
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (f"judge-metrics: error: {label} {endless}: {what}, not a "
                                   "regular file; give a file")


def test_csv_outputs_neutralise_formulas_unless_csv_raw(tmp_path: Path, capsys) -> None:
    hostile = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "@SUM(1)", "-1+2"]
    rows = [{"id": f"=1+{i}", "prediction": text, "reference": text, "ok": i % 2 == 0}
            for i, text in enumerate(hostile)]
    source = _write_jsonl(tmp_path / "in.jsonl", rows)
    for argv in (["score", str(source), "-m", "accuracy"],
                 ["agree", str(source), "-m", "accuracy", "--label", "ok", "--resamples", "5"]):
        for raw in (False, True):
            out = tmp_path / f"{argv[0]}-{raw}.csv"
            assert main([*argv, "-o", str(out), "-q", *(["--csv-raw"] if raw else [])]) == 0
            with out.open(encoding="utf-8", newline="") as handle:
                written = list(csv.DictReader(handle))
            quote = "" if raw else "'"
            assert [r["prediction"] for r in written] == [quote + t for t in hostile]
            assert [r["id"] for r in written] == [quote + r["id"] for r in rows]
            assert [float(r["accuracy"]) for r in written] == [1.0] * 4  # numbers untouched
    capsys.readouterr()


def test_a_200_kb_prediction_goes_round_trip_through_csv(tmp_path: Path, capsys) -> None:
    long = "long answer " * 17_000  # 204,000 characters
    source = _write_jsonl(tmp_path / "in.jsonl", [{**ROWS[0], "prediction": long}, ROWS[2]])
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    assert main(["score", str(source), "-m", "accuracy", "-o", str(first), "-q"]) == 0
    assert main(["score", str(first), "-m", "accuracy", "-o", str(second), "-q"]) == 0
    with second.open(encoding="utf-8", newline="") as handle:
        assert next(csv.DictReader(handle))["prediction"] == long
    capsys.readouterr()


def test_a_user_error_of_a_command_without_judge_options_is_one_redacted_line(
        monkeypatch, capsys) -> None:
    """The error path reads no option of any one command: a command with no --api-key fails in
    one line with exit 2, and the credentials it did take are masked."""
    from types import SimpleNamespace

    from shared import UserInputError
    from shared.cli import main as cli_main

    def add_arguments(parser):
        parser.add_argument("--key")
        parser.add_argument("--service-token")

    def run(args):
        assert not hasattr(args, "api_key")
        raise UserInputError(f"--key {args.key!r}: no such column (token {args.service_token})")

    monkeypatch.setitem(cli_main.COMMANDS, "lookup", SimpleNamespace(
        HELP="a command with no judge options", DESCRIPTION=None, add_arguments=add_arguments,
        run=run))
    capsys.readouterr()
    assert main(["lookup", "--key", "question_id", "--service-token", "tok-12345678"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "judge-metrics: error: --key 'question_id': no such column (token ***)\n"


def test_the_user_error_type_keeps_its_earlier_name() -> None:
    from shared import UserInputError
    from shared.runs.summary import BatchInputError

    assert BatchInputError is UserInputError and issubclass(UserInputError, ValueError)
