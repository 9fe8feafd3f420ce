"""A small OpenAI-compatible chat-completions server on 127.0.0.1 whose answers a test writes.

``with JudgeServer(answer) as server: server.url`` serves ``POST /v1/chat/completions``: each
request's body goes to ``answer(body) -> str`` and the string comes back as the assistant's
message, in a real chat-completion envelope (:func:`faultproxy.chat_envelope`). The real
``openai`` client and the project's OpenAI-compatible backend talk to it as to any server; what
the test controls is only what the "model" says. Bodies are recorded in ``seen``.

``JudgeServer(answer, top_logprobs=fn)`` also answers requests asking for log-probabilities:
``fn(body)`` gives the first token's top list as ``[(token, logprob), ...]`` (any JSON values:
a test may send malformed ones), returned in the OpenAI ``logprobs.content`` shape.
``JudgeServer(answer, usage=fn)``: ``fn(body)`` gives the answer's ``usage`` object (None: the
answer carries none).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from fakes.translating import LocalServer, Reply
from faultproxy import chat_envelope

Answer = Callable[[dict[str, Any]], str]
TopLogprobs = Callable[[dict[str, Any]], list[tuple[Any, Any]]]
_FENCED = re.compile(r"<(data-([a-z_]+)-[0-9a-f]{12})>\n(.*?)\n</\1>", re.DOTALL)


def fenced_fields(body: dict[str, Any]) -> dict[str, str]:
    """The fenced user data of the request's first user message, by field name."""
    first = next(m for m in body["messages"] if m["role"] == "user")
    return {name: value for _, name, value in _FENCED.findall(first["content"])}


def is_repair(body: dict[str, Any]) -> bool:
    return len(body["messages"]) > 1


class JudgeServer(LocalServer):
    def __init__(self, answer: Answer, top_logprobs: TopLogprobs | None = None,
                 usage: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.answer = answer
        self.usage = usage
        self.top_logprobs = top_logprobs
        self.seen: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        body = json.loads(raw)
        with self._lock:
            self.seen.append(body)
        try:
            content = self.answer(body)
            envelope = chat_envelope(body, {"role": "assistant", "content": content},
                                     self.logprobs_of(body, content))
            if self.usage is not None:
                envelope["usage"] = self.usage(body)
            return Reply(200, envelope)
        except Exception as exc:  # a bug in the test's answer: a visible 500
            return Reply(500, {"error": {"message": repr(exc)}})

    def logprobs_of(self, body: dict[str, Any], content: str) -> dict[str, Any] | None:
        if self.top_logprobs is None or not body.get("logprobs"):
            return None
        top = self.top_logprobs(body)
        return {"content": [{
            "token": content, "logprob": top[0][1] if top else -0.1, "bytes": None,
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top]}]}

    @property
    def url(self) -> str:
        return f"{super().url}/v1"
