"""Trace files made by real instrumentations (tests/traces_app.py in a process of its own,
against the loopback model of tests/fakes/chat_model.py), shared by the trace tests, and the
canonical form in which a test compares a row's messages with what was sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fakes.chat_model import ChatModel

APP = Path(__file__).resolve().parent / "traces_app.py"
_EXPERIMENTAL = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
# mode -> (instrumentation family, environment, extra argument)
MODES: dict[str, tuple[str, dict[str, str], list[str]]] = {
    "genai-events": ("genai", {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}, []),
    "genai-events-off": ("genai", {}, []),
    "genai-span": ("genai", {**_EXPERIMENTAL,
                             "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"},
                   []),
    "genai-event-details": ("genai", {
        **_EXPERIMENTAL, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "event_only",
        "OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT": "true"}, []),
    "genai-span-off": ("genai", _EXPERIMENTAL, []),
    "openinference": ("openinference", {}, []),
    "openinference-hidden": ("openinference", {}, ["--hide"]),
}
CAPTURED = ("genai-events", "genai-span", "genai-event-details", "openinference")
NOT_CAPTURED = ("genai-events-off", "genai-span-off", "openinference-hidden")


def make_trace_file(mode: str, folder: Path) -> tuple[Path, list[tuple[dict, dict]]]:
    """Run the app in ``mode``; the OTLP JSON file it wrote and the model's exchanges
    (request body, reply message), in order."""
    family, environment, extra = MODES[mode]
    out = folder / f"{mode}.jsonl"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENINFERENCE_"))}
    with ChatModel() as model:
        result = subprocess.run([sys.executable, str(APP), family, model.url, str(out), *extra],
                                env={**clean, **environment}, capture_output=True, text=True,
                                timeout=180)
        exchanges = list(model.exchanges)
    assert result.returncode == 0, result.stderr
    return out, exchanges


def canonical(messages: list[dict[str, Any]] | None) -> list[tuple]:
    """Messages compared by what they say: role, text (no content and empty text alike), each
    call's id, name and decoded arguments, the answered call's id."""
    out = []
    for m in messages or ():
        calls = tuple((c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                      for c in m.get("tool_calls") or ())
        out.append((m["role"], m.get("content") or "", calls, m.get("tool_call_id")))
    return out
