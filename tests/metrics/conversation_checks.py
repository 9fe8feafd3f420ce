"""Checks the three conversation metrics' tests share: one run on the embedded judge (the
default local provider), scores in [0, 1] or unmeasured with a reason, and a second run that
sends nothing (the call cache)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.base.validation import InputError

BOOKING_CALL = {"id": "call_1", "type": "function",
                "function": {"name": "book_table", "arguments": '{"people": 2, "time": "20:00"}'}}


def trajectory(turns: list[list[tuple[str, dict[str, Any]]]], *, tag: str = "t",
               question: str = "Help me.") -> list[dict[str, Any]]:
    """A user ``question``, then one assistant message per turn making its calls (``(name,
    arguments)`` pairs; parallel calls in one message), each answered by a tool message, then a
    final answer. Call ids are ``{tag}{turn}_{call}``: two trajectories with different tags
    share no id."""
    out: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for t, calls in enumerate(turns):
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"{tag}{t}_{j}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments)}}
            for j, (name, arguments) in enumerate(calls)]})
        out.extend({"role": "tool", "tool_call_id": f"{tag}{t}_{j}", "content": "ok"}
                   for j in range(len(calls)))
    out.append({"role": "assistant", "content": "Done."})
    return out


def booking(result: str, reply: str) -> list[dict[str, Any]]:
    """A user asks for a booking; the assistant calls a tool, gets ``result`` and says
    ``reply``."""
    return [{"role": "user", "content": "Book a table for two at 8 pm."},
            {"role": "assistant", "content": None, "tool_calls": [BOOKING_CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": result},
            {"role": "assistant", "content": reply}]


def run_twice_on_the_embedded_judge(metric: Any, headline: str, cache_dir: str,
                                    **inputs: Any) -> dict[str, Any]:
    """The metric on the default local judge, twice: every row in [0, 1] or unmeasured with its
    reason, the headline the mean of the measured rows, and no request the second time."""
    options = {"cache_dir": cache_dir, "show_progress": False}
    first = metric.compute(**inputs, **options)
    assert first["usage"]["calls"] >= 1
    reasons = {entry["index"]: entry["reason"] for entry in first["unmeasured"]}
    measured = []
    for index, score in enumerate(first["scores"]):
        if score is None:
            assert reasons[index], f"row {index} unmeasured without a reason"
        else:
            assert 0.0 <= score <= 1.0 and index not in reasons
            measured.append(score)
    assert first[headline] == (pytest.approx(sum(measured) / len(measured)) if measured
                               else None)
    second = metric.compute(**inputs, **options)
    assert second["usage"]["calls"] == 0
    assert second["scores"] == first["scores"]
    return first


def refuses_a_malformed_conversation(metric: Any) -> None:
    """A conversation that is not OpenAI chat messages is refused before any work, naming its
    sample index."""
    good = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
    with pytest.raises(InputError, match=r"messages\[1\]"):
        metric.compute(messages=[good, [{"role": "robot", "content": "beep"}]], dry_run=True)
    with pytest.raises(InputError, match=r"messages\[0\]"):
        metric.compute(messages=["[not json"], dry_run=True)


def share_of_yes_verdicts(result: dict[str, Any]) -> list[bool]:
    """The first row's verdicts as booleans ("yes"), checking that its score, when measured, is
    their share; empty when the row is unmeasured."""
    details = result["details"][0]
    if result["scores"][0] is None:
        return []
    yes = [v["verdict"] == "yes" for v in details["verdicts"]]
    assert result["scores"][0] == pytest.approx(sum(yes) / len(yes))
    return yes
