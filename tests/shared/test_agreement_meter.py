"""The token benchmark's counting (bench/agreement/meter.py, bench/bench_tokens.py): the usage
reader, the per-row meter readings of a side's rounds, the per-row figures and the leanest
working peer, the counting proxy in front of the real llama.cpp server, the pairings on
examples/rag_sample.jsonl and a peer's rows there, and MiniLM's vectors served to the peers."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
AGREEMENT = REPO / "bench" / "agreement"
if str(AGREEMENT) not in sys.path:
    sys.path.insert(0, str(AGREEMENT))

import meter  # noqa: E402
import rounds  # noqa: E402


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


bench_tokens = _load("bench_tokens", REPO / "bench" / "bench_tokens.py")
side = sys.modules["side"]
peers = _load("agreement_peers", AGREEMENT / "peers.py")


def answer(usage) -> bytes:
    return json.dumps({"choices": [{"message": {"content": "{}"}}], "usage": usage}).encode()


def test_the_usage_reader_takes_whole_counts_only():
    assert meter.read_usage(answer({"prompt_tokens": 12, "completion_tokens": 3,
                                    "total_tokens": 15})) == (12, 3)
    for bad in (b"<html>502</html>", b"data: {}\n\n", b"[1, 2]", answer(None),
                answer({"prompt_tokens": 12}), answer({"prompt_tokens": "12",
                                                       "completion_tokens": 3}),
                answer({"prompt_tokens": True, "completion_tokens": 3}),
                answer({"prompt_tokens": -1, "completion_tokens": 3})):
        assert meter.read_usage(bad) is None, bad
    totals = dict.fromkeys(meter.FIELDS, 0)
    first = json.dumps({"messages": [{"role": "user", "content": "Rate it."}]}).encode()
    repair = json.dumps({"messages": [{"role": "user", "content": "Rate it."},
                                      {"role": "assistant", "content": "{"},
                                      {"role": "user", "content": "JSON, please."}]}).encode()
    for body, request in ((answer({"prompt_tokens": 12, "completion_tokens": 3}), first),
                          (b"oops", repair), (answer({"prompt_tokens": 5,
                                                      "completion_tokens": 1}), repair)):
        meter.add(totals, body, request)
    assert totals == {"requests": 3, "without_usage": 1, "prompt_tokens": 17,
                      "completion_tokens": 4, "follow_ups": 1, "follow_up_tokens": 6}
    assert not meter.is_follow_up(b"not json") and not meter.is_follow_up(b"[]")


def test_each_row_gets_what_the_meter_counted_while_it_was_scored():
    """The meter is read before and after each row: row i of cell c sends (c + 1) * (i + 1)
    prompt tokens; the last row is never reached."""
    totals = dict.fromkeys(meter.FIELDS, 0)

    def score(c, row):
        totals["requests"] += 1
        totals["prompt_tokens"] += (c + 1) * (row + 1)
        return 1.0, None, 1

    out = rounds.score_in_rounds([[0, 1], [0, 1, 2]], 1e9, score, lambda: dict(totals))
    assert [s["prompt_tokens"] for s in out[0]["served"]] == [1, 2]
    assert [s["prompt_tokens"] for s in out[1]["served"]] == [2, 4, 6]
    assert all(s["requests"] == 1 for cell in out for s in cell["served"])
    assert "served" not in rounds.score_in_rounds([[0]], 1e9, score)[0]


def test_per_row_figures_count_the_rows_reached_and_the_leanest_peer_must_have_scored():
    served = [{"requests": 2, "without_usage": 0, "prompt_tokens": 300, "completion_tokens": 40,
               "follow_ups": 1, "follow_up_tokens": 170},
              {"requests": 1, "without_usage": 1, "prompt_tokens": 100, "completion_tokens": 0,
               "follow_ups": 0, "follow_up_tokens": 0},
              None]
    cell = {"reached": 2, "scores": [0.5, None, None], "served": served}
    row = bench_tokens.per_row(cell)
    assert row["reached"] == 2 and row["scored"] == 1 and row["without_usage"] == 1
    assert row["prompt_tokens_per_row"] == 200 and row["completion_tokens_per_row"] == 20
    assert row["requests_per_row"] == 1.5
    assert bench_tokens.total_per_row(row) == 220
    assert bench_tokens.tokens_text(row) == ("200 + 20 = 220, of which follow-ups (repairs) 85 "
                                             "(1 answers without usage)")

    pair = next(p for p in side.pairings() if p.metric == "toxicity")
    lean_but_failing = {"reached": 1, "scores": [None], "served": [served[0]]}
    heavy = {"reached": 1, "scores": [1.0], "served": [
        {**served[0], "prompt_tokens": 900}]}
    ours = {"reached": 2, "scores": [None, None], "served": [
        {**served[0], "prompt_tokens": 460}, {**served[1], "prompt_tokens": 300}]}
    measured = {"ours": {"first": {pair.id: bench_tokens.per_row(ours)}},
                "valor-lite": {"first": {pair.id: bench_tokens.per_row(lean_but_failing)}},
                "RAGAS": {"first": {pair.id: bench_tokens.per_row(cell)}},
                "DeepEval": {"first": {pair.id: bench_tokens.per_row(heavy)}}}
    # (peer, rows both reached, ours per row on them, the peer's per row on them)
    assert bench_tokens.leanest(pair, measured) == ("RAGAS", 2, 400, 220)
    measured["RAGAS"]["first"][pair.id]["scored"] = 0
    # DeepEval reached one row: ours is compared on that row only (500, not its 400 over two)
    assert bench_tokens.leanest(pair, measured) == ("DeepEval", 1, 500, 940)
    assert bench_tokens.leanest(pair, {**measured, "ours": {}}) is None


@pytest.mark.server
def test_the_proxy_counts_what_the_server_reports_to_the_client(llama_server):
    """Two chat completions through the proxy with the OpenAI SDK: the proxy's totals, read in
    process and over HTTP, are the sums of the usage the SDK read from the same answers."""
    import openai

    with meter.metered(llama_server) as (base_url, read):
        client = openai.OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
        usages = [client.chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": text}], max_tokens=4,
            temperature=0).usage for text in ("Say yes.", "Name a colour, please.")]
        assert client.models.list().data  # other requests pass through uncounted
        totals = read()
        assert meter.remote(base_url)() == totals
    assert totals == {"requests": 2, "without_usage": 0,
                      "prompt_tokens": sum(u.prompt_tokens for u in usages),
                      "completion_tokens": sum(u.completion_tokens for u in usages),
                      "follow_ups": 0, "follow_up_tokens": 0}
    assert totals["prompt_tokens"] > 0 and totals["completion_tokens"] > 0


def test_our_unpaired_judge_metrics_run_on_the_sample_next_to_the_peers_equivalents():
    """Every judge metric the side-by-side does not pair gets a row on examples/rag_sample.jsonl
    (whose columns are our metrics'); the RAG ones name each peer's equivalent, which that
    peer's process has a scorer for; the side-by-side (human labels) never gets them."""
    from shared.kit.registry import METRICS

    mapped = {p.metric for p in side.pairings()}
    sample = bench_tokens.sample_pairings(mapped)
    assert {p.metric for p in sample} == {n for n, s in METRICS.items() if s.judge} - mapped
    assert not mapped & set(bench_tokens.SAMPLE_PEERS)
    with_peers = {p.metric: p for p in sample if p.peers}
    assert set(with_peers) == set(bench_tokens.SAMPLE_PEERS) == set(peers.RAG_METRICS)
    row = bench_tokens.sample_rows(1)[0]
    for name, pair in with_peers.items():
        assert pair.data == bench_tokens.SAMPLE and set(METRICS[name].columns.values()) <= set(row)
        assert pair.ours_higher == (side.WORSE if METRICS[name].lower_is_better else side.BETTER)
        assert set(pair.peers) == set(side.SIDE_PEERS) and all(pair.peers.values())
    valor = peers.valor_scorers({"base_url": "http://127.0.0.1:9/v1", "model": "m",
                                 "max_tokens": 8, "timeout": 5.0})
    assert set(peers.RAG_METRICS) <= set(valor)
    assert peers.references({"reference": "a"}) == ["a"]
    assert peers.references({"reference": ["a", "b"]}) == ["a", "b"]


def test_the_peers_get_minilms_vectors_of_any_text_from_the_benchmark():
    from shared import load_embedding_model

    texts = ["What is the capital of Australia?", "Which city is Australia's capital?"]
    with side.minilm_served() as url:
        served = peers.served_vectors(url, texts)
    expected = load_embedding_model().encode(texts, normalize_embeddings=True,
                                             show_progress_bar=False)
    assert np.allclose(served, expected, atol=1e-6)


@pytest.mark.server
@pytest.mark.slow
def test_valor_lite_reaches_its_row_of_every_rag_metric_through_the_meter(llama_server, tmp_path,
                                                                          monkeypatch):
    """valor-lite (this Python has it; the benchmark uses .venv-agreement's) on the sample's
    first row of each RAG metric, in its own process, through the meter: every row is reached,
    counted, and scored or an error of valor's own (its parser on SmolLM2's answer), never one
    of the row's mapping."""
    pairs = [p for p in bench_tokens.sample_pairings(set()) if p.metric in peers.RAG_METRICS]
    rows = {bench_tokens.SAMPLE[0]: bench_tokens.sample_rows(1)}
    monkeypatch.setattr(side, "AGREEMENT_VENV_PYTHON", Path(sys.executable))
    with meter.metered(llama_server) as (base_url, read):
        report = side.run_peer_side("valor-lite", pairs, rows, base_url, 600.0, tmp_path,
                                    metered=True)
        totals = read()
    assert "problem" not in report, report
    cells = {c["id"]: c for c in report["cells"]}
    assert set(cells) == {p.id for p in pairs}
    for cell in cells.values():
        assert cell["reached"] == 1 and cell["requests"] >= 1
        assert (cell["scores"][0] is None) != (cell["errors"][0] is None)
        assert not re.match(r"raised (KeyError|TypeError|AttributeError|ValueError)",
                            cell["errors"][0] or ""), cell["errors"]
        assert cell["served"][0]["prompt_tokens"] > 0
    assert totals["requests"] == sum(c["requests"] for c in cells.values())
