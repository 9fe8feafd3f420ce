"""One conversation format for every metric over conversations and tool calls: OpenAI's chat
messages (``messages``: checking and normalising, the turns, the calls made, a transcript for a
judge's prompt) and converters from inspect_ai, RAGAS and DeepEval (``converters``)."""

from __future__ import annotations

from .converters import (
    calls_from_deepeval,
    calls_from_ragas,
    from_deepeval,
    from_inspect,
    from_ragas,
)
from .messages import (
    ROLES,
    assistant_turns,
    check_calls,
    check_messages,
    render,
    tool_calls_made,
    user_turns,
)

__all__ = ["ROLES", "assistant_turns", "calls_from_deepeval", "calls_from_ragas", "check_calls",
           "check_messages",
           "from_deepeval", "from_inspect", "from_ragas", "render", "tool_calls_made",
           "user_turns"]
