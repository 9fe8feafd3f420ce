"""ATIF trajectories (the Agent Trajectory Interchange Format, ``schema_version``
``ATIF-v1.0`` ... ``ATIF-v1.7``): a file holds one trajectory (a JSON object), a JSON list of
them, or one per line.

Each agent step that calls an LLM gives one row (a step with ``llm_call_count: 0`` and a step
copied from an earlier trajectory as context, ``is_copied_context``, give none, and stay in the
history): ``messages`` the conversation up to it
(system and user steps as system and user messages, earlier agent steps as assistant messages
with their tool calls, their observations as tool messages) and the step's own reply, so
``question`` is the last user message before it and ``prediction`` its message. ``trace_id`` is
the trajectory's ``session_id`` (else its ``trajectory_id``) and ``span_id`` the step's
``step_id`` (as text); subagent trajectories embedded in ``subagent_trajectories`` give rows of
their own (in their parent's session when they have none);
``conversation_id`` is the ``session_id`` too, so ``--by conversation`` gives one row per
trajectory. A step's ``message`` and an observation's ``content`` may be text or a list of
content parts (their text joined)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..base.errors import UserInputError
from .chat import Message, as_text, captured, joined, last_user_text, message, tool_call
from .rows import Row, iso_time, nanos_of


def is_trajectory(value: Any) -> bool:
    return isinstance(value, Mapping) and str(value.get("schema_version", "")).startswith("ATIF")


def read_trajectories(path: Path) -> list[Mapping[str, Any]]:
    text = path.read_text(encoding="utf-8")
    try:
        document = json.loads(text)
        items = document if isinstance(document, list) else [document]
    except ValueError:
        try:
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as error:
            raise UserInputError(f"{path}: not ATIF JSON: {error}") from None
    for n, item in enumerate(items):
        if not is_trajectory(item) or not isinstance(item.get("steps"), list):
            raise UserInputError(f"{path}: trajectory {n} is not ATIF (a schema_version "
                                 "'ATIF-v1.x' and a steps list)")
    return items


def _text(value: Any) -> str:
    if isinstance(value, list):
        return joined(p.get("text") for p in value if isinstance(p, Mapping)) or ""
    return value if isinstance(value, str) else ""


def trajectory_rows(trajectory: Mapping[str, Any], session: str | None = None
                    ) -> Iterator[Row]:
    """The rows of one trajectory, then of the subagent trajectories embedded in it (one
    without a ``session_id`` is in its parent's session, as Phoenix reads it)."""
    session = str(trajectory.get("session_id") or session or "") or None
    yield from _steps(trajectory, session)
    for child in trajectory.get("subagent_trajectories") or ():
        if isinstance(child, Mapping) and isinstance(child.get("steps"), list):
            yield from trajectory_rows(child, session)


def _steps(trajectory: Mapping[str, Any], session: str | None) -> Iterator[Row]:
    trace = str(trajectory.get("session_id") or trajectory.get("trajectory_id") or session or "")
    default_model = (trajectory.get("agent") or {}).get("model_name")
    history: list[Message] = []
    for step in trajectory["steps"]:
        source = step.get("source")
        text = _text(step.get("message"))
        if source in ("system", "user"):
            history.append(message(source, text))
            continue
        if source != "agent":
            continue
        calls = [tool_call(c.get("tool_call_id"), c.get("function_name"), c.get("arguments"))
                 for c in step.get("tool_calls") or () if isinstance(c, Mapping)]
        reply = message("assistant", text or None, calls)
        if step.get("llm_call_count") == 0 or step.get("is_copied_context"):
            history.append(reply)
            history.extend(_results(step, calls))
            continue
        messages = [*history, reply]
        metrics = step.get("metrics") or {}
        start = nanos_of(step.get("timestamp"))
        ok = captured(messages)
        yield {
            "trace_id": trace, "span_id": str(step.get("step_id")),
            "conversation_id": session, "messages": messages if ok else None,
            "question": last_user_text(history) if ok else None,
            "prediction": text if ok else None,
            "model": step.get("model_name") or default_model,
            "start_time": iso_time(start), "end_time": None, "duration_ms": None,
            "input_tokens": metrics.get("prompt_tokens"),
            "output_tokens": metrics.get("completion_tokens"), "content_captured": ok,
        }
        history.append(reply)
        history.extend(_results(step, calls))


def _results(step: Mapping[str, Any], calls: list[dict[str, Any]]) -> list[Message]:
    """The step's observation results that answer its calls, as tool messages."""
    out = []
    for result in (step.get("observation") or {}).get("results") or ():
        ident = result.get("source_call_id")
        if ident and any(c["id"] == ident for c in calls):
            content = result.get("content")
            out.append(message("tool", _text(content) if isinstance(content, list)
                               else as_text(content or ""), tool_call_id=ident))
    return out
