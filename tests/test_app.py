"""The demo's Blocks app, built in-process; metrics run through the Run handler the page calls."""

from __future__ import annotations

import html
import json
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from faultproxy import FaultProxy, LoopbackServer
from rapidfuzz import fuzz
from rouge_score import rouge_scorer

from shared.demo import EXAMPLES, build_demo
from shared.engine.backends.pool import live_backends

FAKE_KEY = "sk-test-DEMO-0123456789abcdefSECRET"


class KeyEchoServer:
    """An OpenAI-style endpoint that rejects every key with a 401 whose message quotes the key in
    full (as some providers do), so a test can check that the page never shows it."""

    def __init__(self) -> None:
        self.authorizations: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                auth = self.headers.get("Authorization", "")
                owner.authorizations.append(auth)
                key = auth.removeprefix("Bearer ")
                body = json.dumps({"error": {
                    "message": f"Incorrect API key provided: {key}. Check your key.",
                    "type": "invalid_request_error", "code": "invalid_api_key"}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = LoopbackServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def all_text(value: Any) -> str:
    """Every string in a handler's outputs (DataFrames, updates, JSON), joined."""
    if isinstance(value, pd.DataFrame):
        return value.to_csv()
    if isinstance(value, dict):
        return " ".join(all_text(k) + " " + all_text(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return " ".join(all_text(v) for v in value)
    return str(value)


@pytest.fixture(scope="module")
def demo() -> Any:
    return build_demo(["accuracy", "rouge", "l3score"])


@pytest.fixture(autouse=True)
def _private_cache(monkeypatch: pytest.MonkeyPatch, cache_dir: str) -> None:
    monkeypatch.setenv("JUDGE_METRICS_CACHE_DIR", cache_dir)


def run(panel: Any, table: Any = None, options: dict[str, Any] | None = None,
        judge: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the panel's handler with its initial page values, changed as given; returns the
    outputs by name."""
    values = panel.initial_values()
    if table is not None:
        values[panel.table] = table
    for name, value in (options or {}).items():
        values[panel.option_fields[name]] = value
    for name, value in (judge or {}).items():
        values[panel.judge_fields[name]] = value
    out = panel.handle(values)
    return {name: unwrap(out[component]) for name, component in panel.outputs.items()}


def unwrap(value: Any) -> Any:
    """The value of a ``gr.update(...)`` (a component shown or hidden with its value)."""
    if isinstance(value, dict) and value.get("__type__") == "update":
        return value.get("value")
    return value


def headline(aggregate_html: str, key: str) -> str:
    match = re.search(rf'data-key="{re.escape(key)}"[^>]*>([^<]*)<', aggregate_html)
    assert match, aggregate_html
    return match.group(1)


def test_every_panel_is_generic_over_the_registry(demo: Any) -> None:
    accuracy = demo.jm_panels["accuracy"]
    assert accuracy.columns == ["prediction", "reference", "question"]  # question: optional
    options = {o.name: o for o in accuracy.options}
    # accuracy's declared options and defaults
    assert options["fuzzy_threshold"].default == 0.8 and options["fuzzy_threshold"].kind == "float"
    assert options["case_sensitive"].default is False and options["case_sensitive"].kind == "bool"
    assert options["return_confidence"].default is True
    l3score = demo.jm_panels["l3score"]
    assert l3score.columns == ["question", "prediction", "reference"]
    assert set(l3score.judge_fields) >= {"provider", "model", "base_url", "api_key"}
    assert {o.name for o in l3score.options}.isdisjoint({"provider", "api_key", "base_url"})
    assert not accuracy.judge_fields


def test_option_fields_are_the_declared_options(demo: Any) -> None:
    """The page's option controls come from each metric's OPTIONS: same order, a control per
    type, the declared default (or the example's value) as the initial value."""
    import gradio as gr

    from shared.kit.registry import METRICS

    control = {"bool": gr.Checkbox, "int": gr.Number, "float": gr.Number, "json": gr.Textbox,
               "text": gr.Textbox}
    for name, panel in demo.jm_panels.items():
        spec = METRICS[name]
        declared = [option for option in spec.options if option.kind is not None]
        assert panel.options == declared
        for option in declared:
            field = panel.option_fields[option.name]
            if option.choices:  # a dropdown of the declared values, so no other can be typed
                assert isinstance(field, gr.Dropdown), (name, option.name)
                offered = [value for _, value in field.choices]
                assert [c for c in offered if c != ""] == list(option.choices)
                assert ("" in offered) == (option.nullable or option.default is None)
            elif option.kind in ("int", "float") and option.default is None:
                # a number that may be unset: a text box, empty for unset (a Number shows 0)
                assert isinstance(field, gr.Textbox), (name, option.name)
            else:
                assert isinstance(field, control[option.kind])
            initial = panel.initial[panel.option_fields[option.name]]
            expected = spec.example.options.get(option.name, option.default)
            if option.kind == "json" and expected is None:  # unset: an empty box, the default
                assert initial == ""
            elif option.kind == "json":
                assert json.loads(initial) == list(expected)
            elif option.kind == "text" or isinstance(field, gr.Textbox):
                assert initial == ("" if expected is None else expected)
            else:
                assert initial == expected
    assert "tokenizer" not in demo.jm_panels["rouge"].option_fields  # a function: no field
    assert [o.name for o in demo.jm_panels["l3score"].options] == ["exact", "examples"]


def test_accuracy_mode_is_a_dropdown_whose_choice_reaches_the_metric(demo: Any) -> None:
    import gradio as gr

    accuracy = demo.jm_panels["accuracy"]
    mode = accuracy.option_fields["mode"]
    assert isinstance(mode, gr.Dropdown) and mode.value == "exact"
    table = pd.DataFrame({"prediction": ["It is Paris, I think"], "reference": ["Paris"]})
    assert headline(run(accuracy, table)["aggregate"], "accuracy") == "0.0000"
    assert headline(run(accuracy, table, {"mode": "contains"})["aggregate"],
                    "accuracy") == "1.0000"


def test_an_upload_that_never_ends_is_refused_by_its_name(tmp_path: Path) -> None:
    """A named pipe and a link to /dev/zero, uploaded to a metric's panel and to the Compare
    tab: one message naming the file, never its server path (a child process with a timeout,
    so a regression cannot hang the suite)."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.csv"
    zero.symlink_to("/dev/zero")
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": 1, "accuracy": 1.0}\n', encoding="utf-8")
    code = (
        "import sys\n"
        "from shared.demo.compare_tab import handle\n"
        "from shared.demo.inputs import DemoInputError, read_batch_file\n"
        "for path in sys.argv[1:3]:\n"
        "    try: read_batch_file(path)\n"
        "    except DemoInputError as error: print(error)\n"
        "    print(handle(path, sys.argv[3])[0])\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(fifo), str(zero), str(good)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "pipe.jsonl: a named pipe, not a regular file; give a file"
    assert "A pipe.jsonl: a named pipe, not a regular file" in html.unescape(lines[1])
    assert lines[2] == "zero.csv: a device, not a regular file; give a file"
    assert "A zero.csv: a device, not a regular file" in html.unescape(lines[3])
    assert str(tmp_path) not in done.stdout


def test_choices_are_a_dropdown_and_criteria_a_text_box() -> None:
    """An option with declared choices is a dropdown of them; g_eval's required criteria is a
    text box holding the example's criteria; blank, the run says criteria is required."""
    import gradio as gr

    from shared.kit.registry import METRICS

    page = build_demo(["accuracy", "g_eval"])
    mode = page.jm_panels["accuracy"].option_fields["mode"]
    assert isinstance(mode, gr.Dropdown)
    assert [choice for choice, _ in mode.choices] == list(
        next(o for o in METRICS["accuracy"].options if o.name == "mode").choices)
    assert run(page.jm_panels["accuracy"], options={"mode": "contains"})["raw"]["accuracy"] \
        is not None
    g_eval = page.jm_panels["g_eval"]
    criteria = g_eval.option_fields["criteria"]
    assert isinstance(criteria, gr.Textbox) and criteria.lines == 3
    assert g_eval.initial[criteria] == METRICS["g_eval"].example.options["criteria"]
    out = run(g_eval, options={"criteria": "  "})
    assert "jm-error" in out["status"] and "criteria is required" in out["status"]
    out = run(g_eval, pd.DataFrame({"prediction": ["Read the FAQ."]}),
              options={"score_range": "[1, 3]", "criteria": "Is the reply polite?"})
    assert "jm-ok" in out["status"], out["status"]
    assert 0.0 <= float(headline(out["aggregate"], "g_eval")) <= 1.0
    assert list(out["raw"]["details"][0]["probabilities"]) == ["1", "2", "3"]


def test_accuracy_seed_example(demo: Any) -> None:
    out = run(demo.jm_panels["accuracy"])
    # benchwise's card: Paris/London/Tokyo vs Paris/London/Berlin -> 66.67%, 2 correct of 3
    assert headline(out["aggregate"], "accuracy") == f"{2 / 3:.4f}"
    assert out["raw"]["correct"] == 2 and out["raw"]["total"] == 3
    rows = out["rows"]
    assert list(rows["row"]) == [1, 2, 3] and list(rows["scores"]) == [1.0, 1.0, 0.0]
    assert out["chart"]["rows"].sum() == 3
    assert "jm-ok" in out["status"]


def test_options_reach_the_metric(demo: Any) -> None:
    table = pd.DataFrame({"prediction": ["Pariss", "Rome"], "reference": ["Paris", "Berlin"]})
    ratio = fuzz.ratio("pariss", "paris") / 100
    assert ratio >= 0.8
    exact = run(demo.jm_panels["accuracy"], table)
    fuzzy = run(demo.jm_panels["accuracy"], table, {"fuzzy_match": True, "fuzzy_threshold": 0.8})
    assert headline(exact["aggregate"], "accuracy") == "0.0000"
    assert headline(fuzzy["aggregate"], "accuracy") == "0.5000"
    assert list(fuzzy["rows"]["match_types"]) == ["fuzzy", "none"]


def test_rouge_matches_rouge_score(demo: Any) -> None:
    rows, _ = EXAMPLES["rouge"]
    out = run(demo.jm_panels["rouge"])
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"])
    scores = [scorer.score(r, p) for p, r in zip(rows["prediction"], rows["reference"],
                                                 strict=True)]
    for key in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        expected = sum(s[key].fmeasure for s in scores) / len(scores)
        assert out["raw"][key] == pytest.approx(expected, abs=1e-9)
        assert headline(out["aggregate"], key) == f"{expected:.4f}"
        assert list(out["rows"][key]) == pytest.approx([s[key].fmeasure for s in scores],
                                                       abs=5e-5)  # shown to 4 decimals


def test_tool_calls_are_json_cells_and_a_malformed_one_a_message() -> None:
    """tool_call_correctness's table cells hold JSON text (its example: one row right, one with
    a float where an integer is declared); a cell that is not JSON is a message naming it."""
    panel = build_demo(["tool_call_correctness"]).jm_panels["tool_call_correctness"]
    assert panel.columns == ["expected_tool_calls", "tool_calls", "messages", "tools"]
    out = run(panel)
    assert headline(out["aggregate"], "tool_call_correctness") == "0.5000"
    assert list(out["rows"]["scores"]) == [1.0, 0.0]
    rows, _ = EXAMPLES["tool_call_correctness"]
    table = pd.DataFrame({**rows, "tool_calls": ['[{"name": "get_weather", "arguments": "{"}]',
                                                 rows["tool_calls"][1]]})
    out = run(panel, table)
    assert "arguments are not valid JSON" in all_text(out) and "jm-ok" not in out["status"]


def test_bad_input_is_a_message_not_a_crash(demo: Any) -> None:
    accuracy = demo.jm_panels["accuracy"]
    out = run(accuracy, options={"fuzzy_threshold": 1.5})
    assert "jm-error" in out["status"] and "fuzzy_threshold" in out["status"]
    assert out["aggregate"] == ""

    empty_cell = pd.DataFrame({"prediction": ["a", "b"], "reference": ["a", "  "]})
    out = run(accuracy, empty_cell)
    assert "jm-error" in out["status"]
    assert "table row 2" in out["status"] and "reference" in out["status"]

    out = run(accuracy, pd.DataFrame({"prediction": [""], "reference": [""]}))
    assert "no rows" in out["status"]

    out = run(demo.jm_panels["rouge"],
              pd.DataFrame({"prediction": ["x"], "reference": ['["unclosed", ']}))
    assert "jm-error" in out["status"] and "JSON list" in out["status"]

    out = run(demo.jm_panels["rouge"], options={"rouge_types": "[rouge1"})
    assert "jm-error" in out["status"] and "rouge_types" in out["status"]

    out = run(demo.jm_panels["l3score"], judge={"provider": "openai-compatible"})
    assert "jm-error" in out["status"] and "base_url" in out["status"]
    # the panel still works after all of that
    assert "jm-ok" in run(accuracy)["status"]


def test_upload_fills_the_table(demo: Any, tmp_path: Path) -> None:
    rouge = demo.jm_panels["rouge"]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join(json.dumps(r) for r in [
        {"prediction": "the cat sat", "reference": ["the cat sat", "a cat sat"], "id": 1},
        {"predictions": "hello there", "references": "hello"},
    ]) + "\n")
    loaded = rouge.load_file(str(batch))
    table = loaded[rouge.table]
    assert list(table.columns) == ["prediction", "reference"] and len(table) == 2
    assert json.loads(table["reference"][0]) == ["the cat sat", "a cat sat"]
    out = run(rouge, table)
    assert "jm-ok" in out["status"] and len(out["rows"]) == 2
    assert out["rows"]["rouge1"][0] == pytest.approx(1.0)  # best of the two references

    csv_file = tmp_path / "batch.csv"
    csv_file.write_text("prediction,answer\nParis,Paris\n")
    loaded = rouge.load_file(str(csv_file))
    status = html.unescape(loaded[rouge.outputs["status"]])
    assert "jm-error" in status and "'reference'" in status and rouge.table not in loaded


def test_upload_reads_as_strictly_as_the_cli(demo: Any, tmp_path: Path) -> None:
    """An unterminated quote would merge the rows after it into one cell: refused by line."""
    rouge = demo.jm_panels["rouge"]
    broken = tmp_path / "broken.csv"
    broken.write_text('prediction,reference\na,"unterminated\nb,b\nc,c\n')
    loaded = rouge.load_file(str(broken))
    status = html.unescape(loaded[rouge.outputs["status"]])
    assert "jm-error" in status and "broken.csv, line 2" in status and "unterminated" in status
    assert str(tmp_path) not in status and rouge.table not in loaded


def test_load_example_restores_the_example_and_its_options(demo: Any) -> None:
    accuracy = demo.jm_panels["accuracy"]
    loaded = accuracy.load_example()
    rows, _ = EXAMPLES["accuracy"]
    assert loaded[accuracy.table].to_dict("list") == rows
    # accuracy's declared option (metrics/accuracy/README.md): fuzzy_threshold defaults to 0.8
    assert loaded[accuracy.option_fields["fuzzy_threshold"]] == pytest.approx(0.8)
    assert "Example loaded" in loaded[accuracy.outputs["status"]]


@pytest.mark.server
def test_judge_metric_against_llama_server(demo: Any, llama_server: str) -> None:
    l3score = demo.jm_panels["l3score"]
    table = pd.DataFrame({"question": ["What is the capital of France?"],
                          "prediction": ["Paris"], "reference": ["Paris"]})
    with FaultProxy(llama_server) as proxy:
        out = run(l3score, table, judge={"provider": "openai-compatible", "base_url": proxy.url,
                                         "model": "smollm2", "api_key": FAKE_KEY})
        authorizations = [v for s in proxy.seen for k, v in s.headers.items()
                          if k.lower() == "authorization"]
    assert "jm-ok" in out["status"], out["status"]
    value = float(headline(out["aggregate"], "L3Score"))
    assert 0.0 <= value <= 1.0
    assert list(out["rows"]["scores"]) == [pytest.approx(value, abs=5e-5)]
    assert out["raw"]["usage"]["calls"] == 1 and "calls 1" in out["usage"]
    # the key was used for the request, and is nowhere in what the page gets back
    assert authorizations == [f"Bearer {FAKE_KEY}"]
    assert FAKE_KEY not in all_text(out)
    # and the process keeps no judge client holding it
    assert not any(backend.uses_api_key(FAKE_KEY) for backend in live_backends()
                   if hasattr(backend, "uses_api_key"))


@pytest.fixture()
def key_echo_server() -> Iterator[KeyEchoServer]:
    server = KeyEchoServer()
    yield server
    server.stop()


def test_wrong_key_and_unreachable_server(demo: Any, key_echo_server: KeyEchoServer) -> None:
    l3score = demo.jm_panels["l3score"]
    out = run(l3score, judge={"provider": "openai-compatible", "base_url": key_echo_server.url,
                              "model": "judge", "api_key": FAKE_KEY, "use_cache": False})
    assert key_echo_server.authorizations[0] == f"Bearer {FAKE_KEY}"
    assert "jm-warning" in out["status"] and "No row could be measured" in out["status"]
    assert "401" in out["status"] and "401" in out["unmeasured"]
    assert "None (no row measured)" in out["aggregate"]
    assert FAKE_KEY not in all_text(out)

    out = run(l3score, judge={"provider": "openai-compatible", "base_url": closed_port_url(),
                              "model": "judge", "use_cache": False})
    assert "jm-warning" in out["status"] and "No row could be measured" in out["status"]
    assert "table row 1" in out["unmeasured"] and "table row 2" in out["unmeasured"]


def test_a_space_loads_its_metric_from_its_own_folder(tmp_path: Path) -> None:
    from shared.demo import caller_metric_dir
    from shared.kit.registry import METRICS_DIR
    from shared.spaces import BUNDLE_MODULE, build_space

    space = build_space("l3score", tmp_path)
    assert caller_metric_dir("l3score", str(space / "app.py")) == space.resolve()
    assert caller_metric_dir("l3score", str(METRICS_DIR / "l3score" / "app.py")) == (
        METRICS_DIR / "l3score").resolve()
    assert caller_metric_dir("l3score", str(tmp_path / "app.py")) is None
    assert caller_metric_dir("l3score", None) is None
    assert f"from {BUNDLE_MODULE} import launch_metric_demo" in (space / "app.py").read_text()

    demo = build_demo(["l3score"], {"l3score": space})
    panel = demo.jm_panels["l3score"]
    # the Space's metric runs on the vendored copy of shared, not on this repo's package
    bases = {cls.__module__ for cls in type(panel.metric).__mro__}
    assert any(m.startswith("_judge_shared_vendored") for m in bases), bases
    assert not any(m.startswith("shared.") for m in bases), bases
    out = run(panel, judge={"dry_run": True})
    assert "Dry run of 2 rows" in out["status"] and "requests 2" in out["usage"]
    assert out["aggregate"] == "" and out["unmeasured"] == ""


def test_a_conversation_is_a_json_list_in_a_table_cell() -> None:
    """A conversation metric's page: the example's conversations are JSON text in the messages
    column, scored on the embedded judge; a cell that is no conversation is a message naming
    its row."""
    panel = build_demo(["task_completion"]).jm_panels["task_completion"]
    assert panel.columns == ["messages", "task"]
    rows = EXAMPLES["task_completion"][0]["messages"]
    assert isinstance(json.loads(rows[0]), list)
    out = run(panel, judge={"provider": "local"})
    assert "jm-ok" in out["status"], out["status"]
    assert all(0.0 <= s <= 1.0 for s in out["rows"]["scores"])
    bad = pd.DataFrame({"messages": [rows[0], '[{"role": "robot", "content": "beep"}]'],
                        "task": ["", ""]})
    out = run(panel, bad)
    assert "jm-error" in out["status"] and "messages[1]" in out["status"], out["status"]


def test_trajectory_match_runs_its_example_with_its_options() -> None:
    """trajectory_match's panel: two JSON trajectory columns, its example's options (unordered,
    superset) filled in: the agent that made both calls matches, the one that skipped the
    flights does not."""
    panel = build_demo(["trajectory_match"]).jm_panels["trajectory_match"]
    assert panel.columns == ["messages", "reference_messages"]
    out = run(panel)
    assert headline(out["aggregate"], "trajectory_match") == "0.5000"
    assert list(out["rows"]["scores"]) == [1.0, 0.0]
