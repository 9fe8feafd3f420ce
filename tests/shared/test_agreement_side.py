"""`make agreement`'s side-by-side section (bench/agreement/side.py, bench/agreement/peers.py):
the rows every side gets, the row builder and its error counting, the peers' request fix-up and
their outbound guard, and a real small run of our side and of one peer (valor-lite, in its own
process) against the real llama.cpp server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from bench_modules import bench_module

REPO = Path(__file__).resolve().parents[2]


labelled = bench_module("labelled", "agreement/labelled.py")
side = bench_module("side", "agreement/side.py")
writeup = bench_module("writeup", "agreement/writeup.py")
peers = bench_module("agreement_peers", "agreement/peers.py")
peer_guard = sys.modules["peer_guard"]


def pair(metric: str):
    return next(p for p in side.pairings() if p.metric == metric)


class SteppedClock:
    """``time.monotonic`` for the scheduler: each reading ``step`` seconds after the last."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_side_takes_its_metrics_rows_in_rounds_until_its_share_ends(monkeypatch):
    """Row 1 of each cell, then row 2 of each cell that has one, ...; with a share of 3.5 clock
    steps (the clock is read for the deadline, then before each pair) three pairs start."""
    rounds = sys.modules["rounds"]
    everything = list(rounds.round_robin([2, 3, 1], seconds=1e9))
    assert everything == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (1, 2)]
    assert list(rounds.round_robin([2, 3, 1], seconds=0.0)) == []
    assert list(rounds.round_robin([], seconds=10.0)) == []
    monkeypatch.setattr(rounds.time, "monotonic", SteppedClock(1.0))
    assert list(rounds.round_robin([2, 3, 1], seconds=3.5)) == everything[:3]


def test_the_sections_default_share_is_what_the_main_tables_left_of_the_run():
    assert side.side_budget(1100.0, 700.0) == 400.0
    assert side.side_budget(1100.0, 100.0) == side.SIDE_SECONDS
    assert side.side_budget(1100.0, 1050.0) == side.MIN_SIDE_SECONDS


def test_a_peer_scores_its_cells_in_rounds_and_records_every_outcome():
    """peers.run_cells with plain scorers: the rows are scored in rounds, a raised error, an
    error returned as the result and a non-number are errors with their text, and the per-cell
    requests are the ones sent while that cell's rows were scored."""
    calls = []

    def scorer(name):
        def score(row):
            calls.append((name, row["i"]))
            peers.Counter.requests += 1
            return {"raise": ValueError("bad json"), "text": "n/a"}.get(row["kind"], row["i"])
        return score

    def raising(row):
        calls.append(("b", row["i"]))
        raise RuntimeError("judge down")

    rows = [{"i": 0, "kind": "number"}, {"i": 1, "kind": "raise"}, {"i": 2, "kind": "text"}]
    job = {"seconds": 1e9, "cells": [
        {"id": "a", "metric": "a", "sensitive": False, "rows": rows},
        {"id": "b", "metric": "b", "sensitive": True, "rows": rows[:1]}]}
    out = peers.run_cells(job, {"a": scorer("a"), "b": raising})
    assert calls == [("a", 0), ("b", 0), ("a", 1), ("a", 2)]
    a, b = out
    assert a["reached"] == 3 and a["scores"] == [0.0, None, None] and a["requests"] == 3
    assert a["errors"][0] is None and "bad json" in a["errors"][1]
    assert a["errors"][2] == "no score (returned str)"
    assert b["reached"] == 1 and b["requests"] == 0 and b["errors"] == [
        "raised RuntimeError (message withheld: the set's texts stay private)"]


def test_side_rows_are_a_seeded_prefix_of_the_judge_rows():
    """Every side gets the same rows: the first of the seeded permutation the main table's
    judge rows come from, in permutation order (a prefix is itself a seeded sample)."""
    rows = side.side_rows(side.SUMMEVAL, seed=0)
    assert len(rows) == side.SIDE_ROWS[side.SUMMEVAL[0]]
    all_rows = [json.loads(line) for line in (side.DATA / side.SUMMEVAL[0]).read_text().splitlines()
                if line.strip()]
    order = np.random.default_rng(0).permutation(len(all_rows))
    assert [r["id"] for r in rows] == [all_rows[i]["id"] for i in order[:len(rows)]]
    judge = {all_rows[i]["id"] for i in order[:labelled.JUDGE_ROWS["faithfulness"]]}
    assert {r["id"] for r in rows} <= judge
    assert side.side_rows(side.SUMMEVAL, seed=0) == rows
    assert [r["id"] for r in side.side_rows(side.SUMMEVAL, seed=1)] != [r["id"] for r in rows]


def test_row_builder_counts_errors_and_leaves_out_unreached_rows():
    labels = [True, False, True, False, True, False]
    cell = {"scores": [0.9, None, 0.8, 0.1, None, None],
            "errors": [None, "raised ValueError: bad JSON", None, None,
                       "raised ValueError: bad JSON", None],
            "reached": 5, "requests": 7, "seconds": 3.0}
    row = side.side_result(pair("answer_correctness"), "valor-lite", "compute_answer_correctness",
                          side.BETTER, cell, labels, seed=0, threshold=0.5)
    assert row["tried"] == 6 and row["reached"] == 5 and row["errors"] == 2
    assert row["common_error"] == "2x raised ValueError: bad JSON"
    report = row["report"]
    assert report.n == 3 and report.unmeasured == 2  # row 6 was not reached: in neither count
    assert report.statistic("auroc").value == pytest.approx(1.0)  # 0.9, 0.8 vs 0.1
    boolean, numeric = writeup.side_tables({"results": [row]})
    line = boolean[-1]
    assert "| 3 (5 of 6) | 2/5 (2x raised ValueError: bad JSON) | 1.00" in line
    assert numeric[2:] == []

    # rows reached that carry one kind of label: the row says so instead of failing the run
    one_kind = side.side_result(pair("toxicity"), "DeepEval", "ToxicityMetric", side.BETTER,
                               {**cell, "reached": 1}, labels, seed=0, threshold=0.5)
    assert one_kind["report"] is None and one_kind["scored"] == 1
    line = writeup.side_tables({"results": [one_kind]})[0][-1]
    assert "| 1 (1 of 6) | 0/1; the rows reached carry one human label only" in line


def test_a_peer_without_an_equivalent_or_an_install_gets_a_row_saying_why(tmp_path, monkeypatch):
    monkeypatch.setattr(side, "AGREEMENT_VENV_PYTHON", tmp_path / "missing" / "python")
    report = side.run_peer_side("RAGAS", [pair("faithfulness")], {side.SUMMEVAL[0]: []},
                               "http://127.0.0.1:9/v1", 5.0, tmp_path)
    assert report["problem"].startswith("not installed: .venv-agreement is missing")
    rows = [{"pair": pair("hallucination"), "side": "RAGAS",
             "none": pair("hallucination").peers["RAGAS"]},
            {"pair": pair("faithfulness"), "side": "RAGAS", "what": "Faithfulness",
             "none": report["problem"]}]
    _, numeric = writeup.side_tables({"results": rows})
    assert "| RAGAS | - | - | no hallucination metric" in numeric[2]
    assert "| RAGAS | Faithfulness | - | not installed: .venv-agreement is missing" in numeric[3]


def test_request_fix_up_sets_a_completion_cap_the_server_reads():
    assert json.loads(peer_guard.fix_body(b'{"messages": []}', 512))["max_tokens"] == 512
    fixed = json.loads(peer_guard.fix_body(b'{"max_completion_tokens": 64}', 512))
    assert fixed == {"max_tokens": 64}
    assert peer_guard.fix_body(b'{"max_tokens": 32}', 512) is None


def test_peer_error_texts_group_and_keep_sensitive_rows_private():
    valor = "InvalidLLMResponseError: Evaluation LLM responded with invalid JSON. JSONDecodeError: "
    first = peers.error_text(peers.Reported(valor + "Expecting ',' delimiter: line 5 column 3 "
                                            "(char 77)"), sensitive=False)
    second = peers.error_text(peers.Reported(valor + "Expecting ',' delimiter: line 9 column 1 "
                                             "(char 120)"), sensitive=False)
    assert first == second == ("returned the error InvalidLLMResponseError: Evaluation LLM "
                               "responded with invalid JSON. JSONDecodeError: Expecting ',' "
                               "delimiter")
    private = peers.error_text(ValueError("the judge said: <the text>"), sensitive=True)
    assert private == "raised ValueError (message withheld: the set's texts stay private)"


def test_peer_processes_cannot_phone_home():
    code = (
        "import socket, sys; sys.path.insert(0, {!r})\n"
        "import peer_guard; peer_guard.Outbound.install()\n"
        "for attempt in (lambda: socket.create_connection(('telemetry.example.com', 443), 1),\n"
        "                lambda: socket.socket().connect(('203.0.113.5', 443))):\n"
        "    try:\n"
        "        attempt()\n"
        "        print('connected')\n"
        "    except OSError:\n"
        "        pass\n"
        "print(peer_guard.Outbound.attempts)\n"
    ).format(str(REPO / "bench" / "agreement"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "['resolve telemetry.example.com', 'connect 203.0.113.5:443']"


@pytest.mark.server
@pytest.mark.slow
def test_ours_and_valor_lite_on_the_same_rows_against_the_real_server(llama_server, tmp_path,
                                                                       monkeypatch):
    """Two EVOUNA rows, answer_correctness: ours in this process, valor-lite in its own process
    (this Python has valor-lite; `make agreement` uses .venv-agreement's), one real server.
    Every row reached is either scored or an error with its text, and requests were sent."""
    rows = {side.EVOUNA[0]: side.side_rows(side.EVOUNA, seed=0)[:2]}
    pairs = [pair("answer_correctness")]
    ours = side.run_ours_side(pairs, rows, llama_server, 300.0, str(tmp_path / "cache"))
    cell = ours[pairs[0].id]
    assert cell["reached"] == 2 and cell["requests"] >= 2
    assert all((s is None) != (e is None) for s, e in zip(cell["scores"], cell["errors"],
                                                           strict=True))

    monkeypatch.setattr(side, "AGREEMENT_VENV_PYTHON", Path(sys.executable))
    report = side.run_peer_side("valor-lite", pairs, rows, llama_server, 300.0, tmp_path)
    assert "problem" not in report, report
    assert report["peer"] == "valor-lite" and report["version"] == "0.39.0"
    assert report["outbound"] == []
    (theirs,) = report["cells"]
    assert theirs["id"] == pairs[0].id and theirs["reached"] == 2 and theirs["requests"] >= 2
    assert all((s is None) != (e is None) for s, e in zip(theirs["scores"], theirs["errors"],
                                                           strict=True))
    labels = [r["label"] for r in rows[side.EVOUNA[0]]]
    row = side.side_result(pairs[0], "valor-lite", "compute_answer_correctness", side.BETTER,
                          theirs, labels, seed=0, threshold=0.5)
    assert row["errors"] + row["scored"] == 2
