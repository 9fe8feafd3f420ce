"""Phoenix both ways, against a real Phoenix server (``phoenix serve`` from .venv-phoenix, its
SQLite store in a temporary folder, on free loopback ports): an app instrumented with
OpenInference sends it its spans; ``score --phoenix URL --project NAME`` reads them through
Phoenix's client API (the same rows as the app's trace file gives) and logs the scores back as
span annotations; a rerun updates them instead of adding more."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.chat_model import ChatModel
from trace_files import APP, MODES, canonical

import shared.traces as traces
from shared.base.errors import UserInputError
from shared.cli.main import main
from shared.llama_server import free_port
from shared.traces.phoenix import read_project
from shared.traces.scoring import NOT_CAPTURED

REPO = Path(__file__).resolve().parents[2]
PHOENIX = REPO / ".venv-phoenix" / "bin" / "phoenix"
ROUGE = ("rouge1", "rouge2", "rougeL", "rougeLsum")

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not PHOENIX.exists(),
                                 reason="Phoenix's server venv is built by make setup-test")]


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    environment = {**os.environ, "PHOENIX_WORKING_DIR": str(folder), "PHOENIX_HOST": "127.0.0.1",
                   "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(free_port()),
                   "PHOENIX_TELEMETRY_ENABLED": "false"}
    log = (folder / "server.log").open("w")
    server = subprocess.Popen([str(PHOENIX), "serve"], env=environment, stdout=log,
                              stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, (folder / "server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "Phoenix did not start in 240 s"
            time.sleep(1)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _send(url: str, project: str, folder: Path, hide: bool = False,
          family: str = "openinference", environment: dict[str, str] | None = None) -> Path:
    """Run the instrumented app with its spans going to Phoenix's project and to a file; wait
    until Phoenix has stored all of them."""
    from phoenix.client import Client

    out = folder / f"{project}.jsonl"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    with ChatModel() as model:
        result = subprocess.run([sys.executable, str(APP), family, model.url, str(out),
                                 *(["--hide"] if hide else []), "--phoenix", url, project],
                                env={**clean, **(environment or {})}, capture_output=True,
                                text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    expected = sum(1 for line in out.read_text().splitlines() if '"resourceSpans"' in line)
    client = Client(base_url=url)
    deadline = time.monotonic() + 60
    while len(client.spans.get_spans(project_identifier=project, limit=1000)) < expected:
        assert time.monotonic() < deadline, "Phoenix did not store the spans in 60 s"
        time.sleep(0.5)
    return out


def _comparable(rows: list[dict]) -> list[dict]:
    keys = ("trace_id", "span_id", "conversation_id", "messages", "question", "prediction",
            "contexts", "model", "input_tokens", "output_tokens", "content_captured")
    return sorted(({k: row.get(k) for k in keys} for row in rows),
                  key=lambda r: (r["trace_id"], r["span_id"]))


def test_a_project_reads_as_the_same_rows_as_its_trace_file(phoenix, tmp_path):
    trace_file = _send(phoenix, "app", tmp_path)
    from_phoenix = read_project(phoenix, "app")
    assert len(from_phoenix) == 4
    assert _comparable(from_phoenix) == _comparable(traces.read(trace_file))
    conversations = read_project(phoenix, "app", by="conversation")
    assert _comparable(conversations) == _comparable(traces.read(trace_file, by="conversation"))


def test_gen_ai_spans_sent_to_phoenix_read_as_their_trace_file(phoenix, tmp_path):
    """The official openai instrumentation's current conventions (content on the span), sent
    to Phoenix's OTLP endpoint: the project gives the rows its trace file gives."""
    trace_file = _send(phoenix, "genai", tmp_path, family="genai", environment=MODES[
        "genai-span"][1])
    from_phoenix = read_project(phoenix, "genai")
    assert len(from_phoenix) == 4 and all(r["content_captured"] for r in from_phoenix)
    assert _comparable(from_phoenix) == _comparable(traces.read(trace_file))


ATIF = {
    "schema_version": "ATIF-v1.7", "session_id": "session-7", "trajectory_id": "parent-1",
    "agent": {"name": "agent", "version": "1", "model_name": "model-a"},
    "steps": [
        {"step_id": 1, "source": "system", "message": "Be brief."},
        {"step_id": 2, "source": "user", "message": "Earlier question?",
         "is_copied_context": True},
        {"step_id": 3, "source": "agent", "message": "Earlier answer.",
         "is_copied_context": True},
        {"step_id": 4, "source": "user", "message": "Price of GOOGL?"},
        {"step_id": 5, "source": "agent", "message": "Searching.",
         "tool_calls": [{"tool_call_id": "c1", "function_name": "search",
                         "arguments": {"ticker": "GOOGL"}}],
         "observation": {"results": [{"source_call_id": "c1", "content": "$185.35"}]},
         "metrics": {"prompt_tokens": 520, "completion_tokens": 80}},
        {"step_id": 6, "source": "agent", "message": "", "llm_call_count": 0,
         "tool_calls": [{"tool_call_id": "c2", "function_name": "log", "arguments": {}}],
         "observation": {"results": [{"source_call_id": "c2", "content": [
             {"type": "text", "text": "logged"}]}]}},
        {"step_id": 7, "source": "agent", "model_name": "model-b",
         "message": [{"type": "text", "text": "GOOGL trades at $185.35."}]}],
    "subagent_trajectories": [{
        "schema_version": "ATIF-v1.7", "trajectory_id": "child-1",
        "agent": {"name": "sub", "version": "1"},
        "steps": [{"step_id": 1, "source": "user", "message": "Look it up."},
                  {"step_id": 2, "source": "agent", "message": "Found it."}]}]}


def test_atif_reads_as_phoenix_reads_it(phoenix, tmp_path):
    """Phoenix's own ATIF converter (``upload_atif_trajectories_as_spans``) is the reference:
    the LLM spans it makes of a trajectory read as the rows our ATIF reader gives."""
    from phoenix.client import Client
    from phoenix.client.helpers.atif import upload_atif_trajectories_as_spans

    upload_atif_trajectories_as_spans(Client(base_url=phoenix), [ATIF], project_name="atif")
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(ATIF))

    def comparable(rows: list[dict]) -> list[tuple]:
        return sorted((canonical(r["messages"]), r["question"], r["prediction"], r["model"],
                       r["input_tokens"], r["output_tokens"], r["conversation_id"])
                      for r in rows)

    ours = traces.read(path)
    assert len(ours) == 3
    deadline = time.monotonic() + 60
    theirs: list[dict] = []
    while len(theirs) < len(ours):  # Phoenix stores uploaded spans in the background
        assert time.monotonic() < deadline, "Phoenix did not store the spans in 60 s"
        time.sleep(0.5)
        try:
            theirs = read_project(phoenix, "atif")
        except UserInputError:  # the project exists once its first span is stored
            continue
    assert comparable(theirs) == comparable(ours)


def _annotations(url: str, project: str) -> list[dict]:
    from phoenix.client import Client

    client = Client(base_url=url)
    spans = client.spans.get_spans(project_identifier=project, limit=1000)
    return client.spans.get_span_annotations(spans=spans, project_identifier=project)


def test_scores_go_back_as_span_annotations_once(phoenix, tmp_path):
    _send(phoenix, "scored", tmp_path)
    rows = read_project(phoenix, "scored")
    references = tmp_path / "references.jsonl"
    references.write_text("".join(
        json.dumps({"span_id": r["span_id"], "reference": "Paris is the capital of France."})
        + "\n" for r in rows))
    out = tmp_path / "scored_rows.jsonl"
    argv = ["score", "--phoenix", phoenix, "--project", "scored", "--metric", "rouge",
            "--references", str(references), "--out", str(out), "-q"]
    assert main(argv) == 0
    first = _annotations(phoenix, "scored")
    assert len(first) == len(rows) * len(ROUGE)
    scored = {json.loads(line)["span_id"]: json.loads(line)
              for line in out.read_text().splitlines()}
    for annotation in first:
        row = scored[annotation["span_id"]]
        assert annotation["name"] in ROUGE and annotation["identifier"] == "judge-metrics"
        assert annotation["annotator_kind"] == "CODE"
        value = row[annotation["name"]]
        if value is None:  # the tool-calling span: its reason, no score
            assert annotation["result"]["score"] is None
            assert "only calls tools" in annotation["result"]["explanation"]
        else:
            assert annotation["result"]["score"] == pytest.approx(value)
    assert main(argv) == 0  # a rerun: the same annotations, updated, none added
    again = _annotations(phoenix, "scored")
    assert sorted(a["id"] for a in again) == sorted(a["id"] for a in first)


def test_spans_without_content_are_annotated_unmeasured(phoenix, tmp_path):
    _send(phoenix, "hidden", tmp_path, hide=True)
    rows = read_project(phoenix, "hidden")
    assert len(rows) == 4 and not any(r["content_captured"] for r in rows)
    references = tmp_path / "references.jsonl"
    references.write_text("".join(json.dumps({"span_id": r["span_id"], "reference": "x"}) + "\n"
                                  for r in rows))
    assert main(["score", "--phoenix", phoenix, "--project", "hidden", "--metric", "rouge",
                 "--references", str(references), "--out", str(tmp_path / "o.jsonl"),
                 "-q"]) == 0
    annotations = _annotations(phoenix, "hidden")
    assert len(annotations) == 4 * len(ROUGE)
    assert all(a["result"]["score"] is None and a["result"]["explanation"] == NOT_CAPTURED
               for a in annotations)


def test_an_unknown_project_is_one_line(phoenix, tmp_path, capsys):
    code = main(["score", "--phoenix", phoenix, "--project", "no-such-project", "--metric",
                 "rouge", "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "no-such-project" in err and "HTTP 404" in err
    assert len(err.strip().splitlines()) == 1
