"""shared.runs.ray_engine: score_dataset(engine="ray") and ``score --engine ray`` on a real
local Ray
cluster (one per module: Ray starts slowly). Expected per-row numbers come from the
single-process path on the same rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import ray
from faultproxy import FaultProxy
from killed_runs import SUM_ROWS, completions, kill_half_way_then_rerun

from shared import UserInputError, score_dataset
from shared.cli.main import main
from shared.engine.cache import CallCache
from shared.runs.ray_engine import concurrency_split

PAIRS = [
    ("Paris", ["Paris"]), ("Shakespeare wrote it", ["William Shakespeare wrote Hamlet"]),
    ("Jupiter", ["Saturn", "Jupiter"]), ("100 degrees Celsius", ["Water boils at 100 degrees"]),
    ("green", ["blue"]), ("about 300,000 km per second", ["roughly 300,000 kilometres a second"]),
    ("George Orwell", ["George Orwell"]), ("the Pacific Ocean", ["Pacific", "the Atlantic"]),
]
ROWS = [{"question": f"Question {i}?", "prediction": p, "reference": r,
         "expected": [r[0].split()[0], "a phrase that is absent"]}
        for i, (p, r) in enumerate(PAIRS * 5)]  # 40 rows


@pytest.fixture(scope="module")
def cluster() -> str:
    """A local Ray cluster on 2 CPUs for this module; yields its address."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=200 * 1024**2)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def test_concurrency_split_never_exceeds_the_total() -> None:
    for total in range(1, 40):
        for workers in range(1, 40):
            used, each = concurrency_split(total, workers)
            assert 1 <= used <= workers and each >= 1
            assert used * each <= total
            assert each == total // used  # floor(total / workers), the documented rule
    assert concurrency_split(16, 3) == (3, 5) and concurrency_split(2, 8) == (2, 1)


def test_string_and_embedding_metrics_match_the_local_path_row_for_row(cluster: str) -> None:
    names = ["semantic_list_contains", "accuracy", "rouge", "bleu"]
    dataset = datasets.Dataset.from_list(ROWS)
    local, local_summary = score_dataset(dataset, names, chunk_size=8, show_progress=False)
    scored, summary = score_dataset(dataset, names, chunk_size=8, show_progress=False,
                                    engine="ray", workers=2)
    assert scored.column_names == local.column_names
    for column in local.column_names:
        if column == "semantic_list_contains_details":
            continue  # its similarities are floats of another process's torch (below)
        assert scored[column] == local[column], column
    for ours, theirs in zip(scored["semantic_list_contains_details"],
                            local["semantic_list_contains_details"], strict=True):
        ours, theirs = json.loads(ours), json.loads(theirs)
        assert ours.pop("similarities") == pytest.approx(theirs.pop("similarities"), abs=1e-6)
        assert ours == theirs
    for ray_metric, local_metric in zip(summary.metrics, local_summary.metrics, strict=True):
        assert ray_metric.metric == local_metric.metric
        assert (ray_metric.rows, ray_metric.unmeasured) == (len(ROWS), local_metric.unmeasured)
        assert ray_metric.aggregates == pytest.approx(local_metric.aggregates, abs=1e-9)
    # 5 batches of 8 rows, on at most 2 workers (one that starts first may take them all):
    # workers score batch after batch, with the metrics and model they loaded when they started
    assert summary.ray["batches"] == 5 and summary.ray["workers"] in (1, 2)


def test_rows_come_back_in_input_order_when_a_later_batch_finishes_first(cluster: str) -> None:
    """The first batch (two ~20,000-word pairs) takes seconds while the short batches after it
    take milliseconds on the other worker: the output keeps the input's order all the same.
    (A Dataset plans with the DataContext it was created with, so asking the global context for
    order, as the engine once did, let the short batches overtake here.)"""
    import random

    rng = random.Random(0)
    words = [f"w{i}" for i in range(500)]

    def long_text() -> str:
        return " ".join(rng.choice(words) for _ in range(20_000))

    rows = [{"prediction": long_text(), "reference": long_text()} for _ in range(2)]
    rows += [{"prediction": f"short {i}", "reference": f"short {i} text"} for i in range(30)]
    dataset = ray.data.from_items(rows)
    assert dataset.context.execution_options.preserve_order is False  # Ray's default
    scored, summary = score_dataset(dataset, "rouge", engine="ray", workers=2, chunk_size=2,
                                    show_progress=False)
    assert [row["prediction"] for row in scored.take_all()] == [r["prediction"] for r in rows]
    assert summary.ray["batches"] == 16
    assert dataset.context.execution_options.preserve_order is False  # the caller's, given back


def test_cli_engine_ray_reads_jsonl_and_writes_a_parquet_folder(
    cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    out = tmp_path / "scored.parquet"
    out.mkdir()
    (out / "stale.parquet").write_bytes(b"a previous run's output, replaced")
    # read_json -> a ray.data.Dataset -> score_dataset -> write_parquet
    code = main(["score", str(source), "-m", "accuracy", "-m", "rouge", "--out", str(out),
                 "--engine", "ray", "--address", cluster, "--workers", "1", "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert out.is_dir() and not list(tmp_path.glob(".scored.parquet*"))
    assert not (out / "stale.parquet").exists()
    written = pq.read_table(out).to_pylist()
    local, _ = score_dataset(datasets.Dataset.from_list(ROWS), ["accuracy", "rouge"],
                             show_progress=False)
    assert written == local.to_list()
    assert f"wrote {out} ({len(ROWS)} rows)" in capsys.readouterr().err


def test_cli_engine_ray_gates_as_the_local_engine_does(
    cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``score --gate`` reads the gated columns from Ray's result: the same outcomes, and the
    same JUnit file, as the local engine's on the same rows (``--html`` is refused with Ray).
    """
    import xml.etree.ElementTree as ET

    from shared.analysis.gates import evaluate_gates

    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    gates = ["rouge.rouge1>=0.99", "accuracy>=0.2"]
    out, junit = tmp_path / "scored.parquet", tmp_path / "gates.xml"
    code = main(["score", str(source), "-m", "accuracy", "-m", "rouge", "--out", str(out),
                 "--engine", "ray", "--address", cluster, "--workers", "1", "--quiet",
                 *(arg for gate in gates for arg in ("--gate", gate)),
                 "--junit-xml", str(junit)])
    err = capsys.readouterr().err
    assert code == 1, err
    local = evaluate_gates(score_dataset(datasets.Dataset.from_list(ROWS),
                                         ["accuracy", "rouge"], show_progress=False), gates)
    assert [o.passed for o in local] == [False, True]
    assert f"judge-metrics: gate {local[0].message}" in err
    cases = ET.parse(junit).getroot().iter("testcase")
    assert [(c.get("name"), c.find("failure") is not None) for c in cases] == [
        (gates[0], True), (gates[1], False)]


def test_a_bad_cell_in_a_worker_is_a_clear_error(cluster: str) -> None:
    rows = [dict(ROWS[0]), {**ROWS[1], "prediction": None}]
    with pytest.raises(UserInputError, match=r"metric 'bleu': column 'prediction', row 1: "
                       r".*within a Ray batch of 2 rows"):
        score_dataset(datasets.Dataset.from_list(rows), "bleu", show_progress=False,
                      engine="ray", workers=1)


@pytest.mark.parametrize("argv, needle", [
    (["--engine", "ray", "--out", "x.csv"], "--engine ray writes"),
    (["--address", "127.0.0.1:1", "--out", "x.jsonl"], "--address needs --engine ray"),
    (["--engine", "ray", "--dry-run"], "--dry-run runs without Ray"),
])
def test_cli_engine_ray_refuses_what_it_cannot_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    source = tmp_path / "rows.jsonl"
    source.write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-8")
    argv = [a if not a.startswith("x.") else str(tmp_path / a) for a in argv]
    assert main(["score", str(source), "-m", "rouge", *argv]) == 2
    assert needle in capsys.readouterr().err


def test_workers_write_one_cache_file_concurrently(
    cluster: str, cache_dir: str, tmp_path: Path
) -> None:
    """Four processes write into one cache file at once: each writes half its keys, waits at a
    barrier until all four have, then writes the rest, so the writes interleave by construction
    (timing alone did not: on a busy machine one actor could finish before another began)."""
    class Writer:  # one Ray actor: its own process (defined here: pickled by value)
        def pid(self) -> int:
            return os.getpid()

        def put_keys(self, directory: str, barrier: str, worker: int, count: int,
                     writers: int) -> None:
            from shared.engine.cache import CallCache

            cache = CallCache(directory)
            for i in range(count):
                if i == count // 2:
                    Path(barrier, f"half-{worker}").touch()
                    deadline = time.monotonic() + 120
                    while len(list(Path(barrier).glob("half-*"))) < writers:
                        assert time.monotonic() < deadline, "a writer never reached the barrier"
                        time.sleep(0.01)
                cache.put(f"w{worker}-k{i}", {"worker": worker, "i": i, "pad": "x" * 200})
            cache.close()

    writers = [ray.remote(num_cpus=0)(Writer).remote() for _ in range(4)]
    assert len(set(ray.get([w.pid.remote() for w in writers]))) == 4  # all started
    ray.get([w.put_keys.remote(cache_dir, str(tmp_path), n, 300, len(writers))
             for n, w in enumerate(writers)])
    for writer in writers:
        ray.kill(writer)
    cache = CallCache(cache_dir)
    try:
        assert len(cache) == 4 * 300
        assert cache.get("w3-k299") == {"worker": 3, "i": 299, "pad": "x" * 200}
    finally:
        cache.close()


@pytest.mark.server
def test_judge_metric_matches_the_local_path_with_traffic_bounded_and_cached(
    cluster: str, llama_server: str, cache_dir: str
) -> None:
    """l3score on the real server, 2 workers sharing a total of 3 requests in flight (1 each):
    the proxy never sees more than 2 at once; the answers the workers got are all in the one
    cache file (a rerun sends nothing); the scores equal an uncached single-process run."""
    rows = [{"question": f"What is {a} plus {b}?", "prediction": str(a + b + i % 2),
             "reference": str(a + b)} for i, (a, b) in enumerate(
                 [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10), (11, 12)])]
    dataset = datasets.Dataset.from_list(rows)
    with FaultProxy(llama_server, default="pass") as proxy:
        options = dict(provider="openai-compatible", base_url=proxy.url, model="smollm2",
                       max_concurrency=3, show_progress=False)
        scored, summary = score_dataset(dataset, "l3score", chunk_size=3, engine="ray",
                                        workers=2, cache_dir=cache_dir, **options)
        # 2 batches; a worker that starts first may score both (Ray hands batches to ready ones)
        assert summary.ray["batches"] == 2 and summary.ray["workers"] in (1, 2)
        assert summary.metrics[0].calls == completions(proxy) == len(rows)
        assert 1 <= proxy.max_in_flight <= 2  # 2 workers x floor(3 / 2)
        cached, cached_summary = score_dataset(dataset, "l3score", cache_dir=cache_dir,
                                               **options)
        assert completions(proxy) == len(rows)  # every answer came from the cache
        local, local_summary = score_dataset(dataset, "l3score", use_cache=False, **options)
    assert cached_summary.metrics[0].cache_hits == len(rows)
    assert cached.to_list() == scored.to_list()
    assert local_summary.metrics[0].calls == len(rows)
    assert scored["l3score"] == pytest.approx(local["l3score"], abs=1e-9)
    for ours, theirs in zip(scored["l3score_details"], local["l3score_details"], strict=True):
        assert _close(json.loads(ours), json.loads(theirs))
    assert summary.metrics[0].aggregates == pytest.approx(local_summary.metrics[0].aggregates)


def _close(ours: object, theirs: object) -> bool:
    """Equal JSON values, floats to 1e-9."""
    if isinstance(ours, float) or isinstance(theirs, float):
        return ours == pytest.approx(theirs, abs=1e-9)
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return ours.keys() == theirs.keys() and all(_close(ours[k], theirs[k]) for k in ours)
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(map(_close, ours, theirs))
    return ours == theirs


@pytest.mark.server
@pytest.mark.slow
def test_a_killed_ray_job_resumes_from_the_cache(
    cluster: str, llama_server: str, cache_dir: str, tmp_path: Path
) -> None:
    """SIGKILL the driver of a Ray job (joined to this module's cluster) once 2 of 6 answers are
    cached; the rerun sends only the 4 missing requests."""
    source = tmp_path / "sums.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in SUM_ROWS), encoding="utf-8")
    out = tmp_path / "scored.jsonl"
    answered = 2
    rerun, sent = kill_half_way_then_rerun(
        source, out, llama_server, cache_dir,
        ["--engine", "ray", "--address", cluster, "--workers", "1", "--chunk-size", "3"],
        answered)
    assert rerun.returncode == 0, rerun.stderr
    assert sent == len(SUM_ROWS) - answered
    written = [json.loads(line) for path in sorted(out.glob("*.json*"))
               for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(written) == len(SUM_ROWS) and all(0 <= r["l3score"] <= 1 for r in written)


def test_cli_engine_ray_writes_jsonl_floats_exactly_and_removes_a_killed_drivers_folder(
    cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The JSON-lines folder holds the very floats of the one-process path (Ray's write_json
    kept 10 significant digits), and a dead driver's ``.OUT.PID.tmp/`` folder is removed."""
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    out = tmp_path / "scored.jsonl"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".scored.jsonl.{dead.pid}.tmp"
    (stale / "sub").mkdir(parents=True)
    (stale / "part-00000.jsonl").write_text("half a row", encoding="utf-8")
    code = main(["score", str(source), "-m", "rouge", "-m", "bleu", "--out", str(out),
                 "--engine", "ray", "--address", cluster, "--workers", "1", "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert not stale.exists() and not list(tmp_path.glob(".scored.jsonl*"))
    written = [json.loads(line) for path in sorted(out.glob("*.jsonl"))
               for line in path.read_text(encoding="utf-8").splitlines()]
    local, _ = score_dataset(datasets.Dataset.from_list(ROWS), ["rouge", "bleu"],
                             show_progress=False)
    assert written == local.to_list()  # equal floats, not approximately
    assert any(len(repr(r["rougeL"])) > 12 for r in written)  # digits beyond 10 were at stake


@pytest.mark.server
@pytest.mark.slow
def test_a_panel_on_ray_matches_the_local_path(cluster: str, llama_server: str,
                                               gemma_server: str, cache_dir: str) -> None:
    """Two judges (SmolLM2 and Gemma-3-270M, each behind its server) over 2 batches: each
    judge's column, the panel's per-judge accounting and the alpha over every row equal the
    single-process run's (which answers from the cache the Ray workers filled)."""
    from shared.kit.panel import panel_agreement

    rows = [{"question": f"What is {a} plus {b}?", "prediction": str(a + b + i % 2),
             "reference": str(a + b)} for i, (a, b) in enumerate([(1, 2), (3, 4), (5, 6)])]
    dataset = datasets.Dataset.from_list(rows)
    judges = [{"provider": "openai-compatible", "base_url": llama_server, "model": "smollm2"},
              {"provider": "openai-compatible", "base_url": gemma_server, "model": "gemma3"}]
    options = dict(judges=judges, cache_dir=cache_dir, show_progress=False)
    scored, summary = score_dataset(dataset, "l3score", chunk_size=2, engine="ray", workers=2,
                                    **options)  # batches of 2 and 1 rows
    local, local_summary = score_dataset(dataset, "l3score", **options)
    ours, theirs = summary.metrics[0], local_summary.metrics[0]
    assert theirs.calls == 0 and ours.calls == 2 * len(rows)
    for column in ("l3score", "l3score_judge_1", "l3score_judge_2"):
        assert scored[column] == pytest.approx(local[column], abs=1e-9)
    expected = panel_agreement([local["l3score_judge_1"], local["l3score_judge_2"]])
    assert ours.aggregates["judge_agreement"] == pytest.approx(expected["judge_agreement"])
    assert theirs.aggregates["judge_agreement"] == pytest.approx(expected["judge_agreement"])
    assert [j["calls"] for j in ours.panel["judges"]] == [len(rows), len(rows)]
    assert [j["judge"] for j in ours.panel["judges"]] == [j["judge"]
                                                          for j in theirs.panel["judges"]]


def test_ray_workers_read_struct_columns_with_absent_keys_absent(cluster: str) -> None:
    """Arrow merges the keys of a column's objects (row 0's arguments get row 1's ``unit`` as
    null): the workers read such columns as the local engine does, a key a row did not give
    absent, so a correct call scores 1.0 on Ray too."""
    call = {"name": "get_weather", "arguments": {"city": "Paris"}}
    extra = {"name": "get_weather", "arguments": {"city": "Rome", "unit": "c"}}
    rows = [{"tool_calls": [call], "expected_tool_calls": [call]},
            {"tool_calls": [extra], "expected_tool_calls": [extra]}]
    dataset = datasets.Dataset.from_list(rows)
    scored, _ = score_dataset(dataset, "tool_call_correctness", show_progress=False,
                              engine="ray", workers=1)
    assert sorted(scored.to_pandas()["tool_call_correctness"]) == [1.0, 1.0]
