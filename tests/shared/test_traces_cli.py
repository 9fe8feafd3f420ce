"""score TRACES --traces: the LLM spans of a Collector file (one app capturing content, one
not) scored like any input, references joined by span id, the spans a metric cannot measure
left unmeasured with the reason (never a 0), and --write-back's gen_ai.evaluation.result
events; the scores equal those of the same rows scored as a plain file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trace_files import make_trace_file

import shared.traces as traces
from shared.cli.main import main
from shared.traces.scoring import NOT_CAPTURED, score_traces

ROUGE = ("rouge1", "rouge2", "rougeL", "rougeLsum")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One file, as a Collector writes for two apps: one capturing content, one not."""
    folder = tmp_path_factory.mktemp("cli_traces")
    captured, _ = make_trace_file("openinference", folder)
    hidden, _ = make_trace_file("genai-events-off", folder)
    path = folder / "collector.jsonl"
    path.write_text(captured.read_text() + hidden.read_text())
    return path


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_score_traces_write_back(mixed, tmp_path, capsys):
    rows = traces.read(mixed)
    assert len(rows) == 8
    references = tmp_path / "references.jsonl"
    # a reference for the plain answer, the tool-calling span and the RAG answer only
    joined = {rows[0]["span_id"]: "Paris is the capital city of France.",
              rows[1]["span_id"]: "The weather in Paris.",
              rows[3]["span_id"]: "The tower was completed in 1889.",
              rows[4]["span_id"]: "Not captured anyway."}
    references.write_text("".join(json.dumps({"span_id": k, "reference": v}) + "\n"
                                  for k, v in joined.items()))
    out, events = tmp_path / "scored.jsonl", tmp_path / "events.jsonl"
    code = main(["score", str(mixed), "--traces", "--metric", "rouge", "--references",
                 str(references), "--out", str(out), "--write-back", str(events), "-q"])
    assert code == 0
    scored = _read_jsonl(out)
    assert [r["span_id"] for r in scored] == [r["span_id"] for r in rows]
    reasons = [json.loads(r["rouge_details"] or "{}").get("unmeasured") for r in scored]
    assert reasons[0] is None and reasons[3] is None  # measured
    assert reasons[1] == "the span's output only calls tools: it has no text to score"
    assert reasons[2] == "the span has no reference"
    assert reasons[4:] == [NOT_CAPTURED] * 4  # never a 0: no content, no score
    for index in (1, 2, 4, 5, 6, 7):
        assert all(scored[index][key] is None for key in ROUGE)
    # the measured rows score as the same rows do from a plain file
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps({"prediction": rows[i]["prediction"],
                                         "reference": joined[rows[i]["span_id"]]}) + "\n"
                             for i in (0, 3)))
    assert main(["score", str(plain), "--metric", "rouge", "--out",
                 str(tmp_path / "plain_scored.jsonl"), "-q"]) == 0
    expected = _read_jsonl(tmp_path / "plain_scored.jsonl")
    for row, reference in zip((scored[0], scored[3]), expected, strict=True):
        assert [row[k] for k in ROUGE] == [reference[k] for k in ROUGE]
        assert row["rouge1"] > 0
    table = capsys.readouterr().out
    assert "rouge" in table and " 8 " in table and " 6 " in table  # 8 rows, 6 unmeasured

    requests = _read_jsonl(events)
    records = [r["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0] for r in requests]
    assert len(records) == 8 * len(ROUGE)  # one per span and score
    for record in records:
        assert record["eventName"] == "gen_ai.evaluation.result"
        attributes = {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}
        row = next(r for r in scored if r["span_id"] == record["spanId"])
        assert record["traceId"] == row["trace_id"]
        name = attributes["gen_ai.evaluation.name"]
        assert name in ROUGE
        if row[name] is None:
            assert "gen_ai.evaluation.score.value" not in attributes
            reason = json.loads(row["rouge_details"])["unmeasured"]
            assert attributes["gen_ai.evaluation.explanation"] == reason
        else:
            assert attributes["gen_ai.evaluation.score.value"] == row[name]


def test_contexts_on_some_spans_only_do_not_refuse_the_others(mixed, capsys):
    """faithfulness needs contexts, which only the RAG span has; answer_relevance runs on every
    span with text. A dry run plans each metric's requests for the rows it can measure."""
    code = main(["score", str(mixed), "--traces", "--metric", "faithfulness", "--metric",
                 "answer_relevance", "--dry-run", "-q"])
    assert code == 0
    out = capsys.readouterr().out
    plan = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
            if line.startswith(("faithfulness", "answer_relevance"))}
    assert plan["faithfulness"] > 0 and plan["answer_relevance"] > plan["faithfulness"]
    rows = traces.read(mixed)
    measurable = [r for r in rows if r["content_captured"] and r["prediction"]]
    with_contexts = [r for r in measurable if r.get("contexts")]
    assert len(measurable) == 3 and len(with_contexts) == 1
    # per measured row, the same requests: the plan scales with the rows each metric measures
    assert plan["answer_relevance"] % len(measurable) == 0


def test_every_span_unmeasured_when_no_content_was_captured(tmp_path):
    path, _ = make_trace_file("openinference-hidden", tmp_path)
    rows = traces.read(path)
    for row in rows:
        row["reference"] = "anything"
    scored, summary = score_traces(rows, ["rouge"], show_progress=False)
    assert scored["rouge1"] == [None] * 4
    assert [json.loads(d)["unmeasured"] for d in scored["rouge_details"]] == [NOT_CAPTURED] * 4
    (metric,) = summary.metrics
    assert (metric.rows, metric.unmeasured) == (4, 4)


@pytest.mark.parametrize("argv, message", [
    ([], "INPUT is required (or --phoenix URL --project NAME)"),
    (["--phoenix", "http://127.0.0.1:9"], "--phoenix needs --project NAME"),
    (["--phoenix", "http://127.0.0.1:9", "--project", "p"],
     "Phoenix at http://127.0.0.1:9: cannot read the spans of project 'p'"),
    (["--traces"], "--traces needs INPUT"),
    (["--traces", "TRACES", "--html", "r.html"], "--html is not available with --traces"),
    (["--traces", "TRACES", "--project", "p"], "--project needs --phoenix URL"),
    (["--traces", "TRACES", "--write-back", "TRACES"], "is the TRACES file; write elsewhere"),
    (["TRACES", "--write-back", "e.jsonl"], "--write-back is for traces: give --traces"),
])
def test_refusals(mixed, tmp_path, capsys, argv, message):
    argv = [str(mixed) if a == "TRACES" else a for a in argv]
    code = main(["score", *argv, "--metric", "rouge", "--out", str(tmp_path / "o.jsonl")])
    assert code == 2 and message in capsys.readouterr().err


def test_a_reference_file_that_clashes_is_refused(mixed, tmp_path, capsys):
    references = tmp_path / "r.jsonl"
    references.write_text(json.dumps({"span_id": "00", "prediction": "x"}) + "\n")
    code = main(["score", str(mixed), "--traces", "--metric", "rouge", "--references",
                 str(references), "--out", str(tmp_path / "o.jsonl")])
    assert code == 2 and "has the span column(s) prediction" in capsys.readouterr().err


def test_gates_count_the_spans_without_content_as_unmeasured(mixed, tmp_path, capsys):
    references = tmp_path / "references.jsonl"
    references.write_text("".join(json.dumps({"span_id": r["span_id"], "reference": "Paris"})
                                  + "\n" for r in traces.read(mixed)))
    argv = ["score", str(mixed), "--traces", "--metric", "rouge", "--references",
            str(references), "--out", str(tmp_path / "o.jsonl"), "-q",
            "--gate", "rouge.rouge1>=0.0"]
    assert main([*argv, "--max-unmeasured", "0.7"]) == 0  # 5 of 8 spans unmeasured
    capsys.readouterr()
    assert main([*argv, "--max-unmeasured", "0.5", "--junit-xml",
                 str(tmp_path / "gates.xml")]) == 1
    err = capsys.readouterr().err
    assert "rouge.rouge1>=0.0" in err and "unmeasured" in err
    assert "failure" in (tmp_path / "gates.xml").read_text()


def test_why_a_metric_cannot_measure_a_row():
    from shared.runs.chunks import load_metric
    from shared.traces.scoring import unmeasurable

    whole = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    cut = [{"role": "tool", "tool_call_id": "call_9", "content": "42"},
           {"role": "assistant", "content": "It is 42."}]
    rows = [{"messages": whole, "content_captured": True},
            {"messages": cut, "content_captured": True},
            {"messages": None, "content_captured": False},
            {"messages": None, "content_captured": True}]
    reasons = unmeasurable("task_completion", load_metric("task_completion"), rows)
    assert sorted(reasons) == [1, 2, 3]
    assert reasons[1].startswith("the span's messages are no conversation a metric can read:")
    assert "call_9" in reasons[1]
    assert reasons[2] == NOT_CAPTURED and reasons[3] == "the span has no messages"


def test_a_judge_metric_scores_the_spans_it_can_and_labels_its_events(mixed, tmp_path):
    """l3score through a loopback judge (Yes/No log-probabilities): one request per span with
    content, text and a reference, each asking about that span's question and prediction; the
    events carry the score and the metric's pass/fail label."""
    from judgeserver import JudgeServer

    rows = traces.read(mixed)
    references = tmp_path / "references.jsonl"
    references.write_text("".join(json.dumps({"span_id": r["span_id"], "reference": "Paris"})
                                  + "\n" for r in rows))
    out, events = tmp_path / "scored.jsonl", tmp_path / "events.jsonl"
    with JudgeServer(lambda body: "Yes",
                     top_logprobs=lambda body: [("Yes", -0.1), ("No", -2.5)]) as server:
        code = main(["score", str(mixed), "--traces", "-m", "l3score", "--references",
                     str(references), "--provider", "openai-compatible", "--base-url",
                     server.url, "--model", "m", "--cache-dir", str(tmp_path / "cache"),
                     "--out", str(out), "--write-back", str(events), "-q"])
        seen = list(server.seen)
    assert code == 0
    measured = [r for r in rows if r["content_captured"] and r["prediction"]]
    assert len(seen) == len(measured) == 3
    for body, row in zip(seen, measured, strict=True):
        prompt = "\n".join(m["content"] for m in body["messages"])
        assert row["question"] in prompt and row["prediction"] in prompt
    scored = {r["span_id"]: r for r in _read_jsonl(out)}
    labels = {}
    for line in _read_jsonl(events):
        record = line["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
        attributes = {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}
        value = scored[record["spanId"]]["l3score"]
        assert attributes.get("gen_ai.evaluation.score.value") == value
        labels[record["spanId"]] = attributes.get("gen_ai.evaluation.score.label")
    assert sorted(k for k, v in labels.items() if v == "pass") == sorted(
        r["span_id"] for r in measured)
    assert all(scored[k]["l3score"] > 0.5 for k, v in labels.items() if v == "pass")
    assert sum(v is None for v in labels.values()) == len(rows) - 3


def test_a_file_without_llm_spans_is_one_line(tmp_path, capsys):
    path = tmp_path / "agents_only.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "1" * 32, "spanId": "2" * 16, "name": "agent", "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}]}]}]}]})
        + "\n")
    code = main(["score", str(path), "--traces", "--metric", "rouge", "--out",
                 str(tmp_path / "o.jsonl")])
    assert code == 2 and "no LLM span to score" in capsys.readouterr().err


def test_an_optional_column_on_some_spans_only_is_read_where_present(mixed):
    """accuracy reads ``question`` where a row has it (its optional input): spans with and
    without it are scored apart, each as the metric scores it alone, and the aggregate is the
    mean over every measured span."""
    from shared.runs.chunks import load_metric

    rows = [r for r in traces.read(mixed) if r["content_captured"] and r["prediction"]]
    for row, reference in zip(rows, (rows[0]["prediction"], rows[1]["prediction"], "no"),
                              strict=True):
        row["reference"] = reference
    rows[1]["question"] = None  # groups of 2 rows (mean 0.5) and 1 row (1.0): the mean is 2/3
    scored, summary = score_traces(rows, ["accuracy"], show_progress=False)
    metric = load_metric("accuracy")
    for row, value in zip(rows, scored["accuracy"], strict=True):
        question = {} if row["question"] is None else {"questions": [row["question"]]}
        alone = metric.compute(predictions=[row["prediction"]], references=[row["reference"]],
                               **question)
        assert value == pytest.approx(alone["accuracy"])
    (accuracy,) = summary.metrics
    assert (accuracy.rows, accuracy.unmeasured) == (3, 0)
    assert scored["accuracy"] == [1.0, 1.0, 0.0]
    assert accuracy.aggregates["accuracy"] == pytest.approx(2 / 3)
