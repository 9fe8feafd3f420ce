"""A small fault-injecting HTTP proxy for tests.

It sits between a judge client and a real OpenAI-compatible server (the ``llama_server``
fixture), forwards real traffic, and injects faults by schedule: request number ``n`` (1-based,
in arrival order) gets ``schedule[n - 1]`` and every later request gets ``default``; a ``rule``
callable can pick a fault from the request body instead (e.g. "every request whose prompt
contains MARKER gets a 500"). It records what it saw: each request's arrival time, body, headers
and fault, and the largest number of requests in flight at once.

Faults (strings):

``pass``            forward to the upstream server, return its answer unchanged
``synthetic``       answer itself with a valid chat completion carrying top log-probabilities
                    (stress runs: the real server is too slow for thousands of completions)
``status:CODE``     answer ``CODE`` with an OpenAI-style error body (e.g. ``status:503``)
``echo_auth:CODE``  answer ``CODE`` with an error message that quotes the Authorization header
``429``             answer 429 with ``Retry-After: RETRY_AFTER`` seconds
``reset``           drop the connection with a TCP reset, no answer
``hang``            never answer (until the client gives up or the proxy stops)
``truncate``        200 whose body ends after half of its announced ``Content-Length``
``not_json``        200, ``Content-Type: application/json``, body that is not JSON
``html``            200, ``Content-Type: text/html``, an HTML error page
``bad_schema``      200, a valid chat completion whose message content breaks the judge's schema
                    (and whose log-probabilities are not numbers)
``no_logprobs``     forward to the upstream server, then strip the log-probabilities
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlparse

RETRY_AFTER = 1  # seconds, sent with every 429
HANG_SECONDS = 60.0
STATS_PATH = "/__faultproxy/stats"
SYNTHETIC_DELAY = 0.01  # seconds; lets concurrency build up during stress runs

Rule = Callable[[int, dict[str, Any]], "str | None"]


class LoopbackServer(ThreadingHTTPServer):
    """The tests' HTTP server on 127.0.0.1: a thread per request, and a listen backlog that
    holds every connection a run opens at once (the standard library's 5 resets the rest when
    the machine is busy: a panel's two judges, eight requests each, lost rows that way)."""

    request_queue_size = 512
    daemon_threads = True


def canonical(raw: bytes) -> bytes:
    """A JSON body with its keys sorted, no spaces and whole floats as integers (JSON's ``1.0``
    and ``1`` are one number), so two clients that write the same request differently share a
    replay entry; any other body as it is."""
    try:
        body = json.loads(raw, parse_float=lambda text: _number(float(text)))
    except ValueError:
        return raw
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _number(value: float) -> float | int:
    return int(value) if value.is_integer() else value


def messages_key(messages: Any) -> str:
    """The key of a request's ``messages`` (the list of ``{"role", "content"}`` dicts)."""
    text = json.dumps(messages, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass
class Seen:
    """One request as the proxy saw it."""

    number: int
    arrived: float
    path: str
    fault: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def key(self) -> str:
        """Identifies the logical request (its messages), so retries of it share a key."""
        return messages_key(self.body.get("messages"))

    @property
    def prompt(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.body.get("messages") or [])


class Started:
    """A proxy used as a context manager: started on entry, stopped on exit."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class FaultProxy(Started):
    """``with FaultProxy(upstream, schedule=[...], default="pass") as proxy: proxy.url``."""

    upstream: str | None = None  # e.g. "http://127.0.0.1:PORT/v1"; None: synthetic only
    schedule: Sequence[str] = ()
    default: str = "pass"
    rule: Rule | None = None
    # optional memo of upstream answers, keyed by request body: a "pass" whose exact body was
    # forwarded before (by any proxy sharing the dict) is answered with the recorded real answer
    replay: dict[bytes, tuple[int, dict[str, str], bytes]] | None = None
    seen: list[Seen] = field(default_factory=list)
    max_in_flight: int = 0
    _in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _server: ThreadingHTTPServer | None = None

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self) -> FaultProxy:
        proxy = self

        class Handler(_Handler):
            owner = proxy

        server = LoopbackServer(("127.0.0.1", 0), Handler)
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        """The proxy's base URL, with the upstream's path (``/v1``)."""
        assert self._server is not None, "proxy not started"
        port = self._server.server_address[1]
        path = urlparse(self.upstream).path.rstrip("/") if self.upstream else "/v1"
        return f"http://127.0.0.1:{port}{path}"

    # ---- what was seen ---------------------------------------------------------------------
    @property
    def count(self) -> int:
        with self._lock:
            return len(self.seen)

    def attempts(self) -> Counter[str]:
        """Requests per logical request (messages), i.e. 1 + the retries of each."""
        with self._lock:
            return Counter(s.key for s in self.seen)

    def faults(self) -> Counter[str]:
        with self._lock:
            return Counter(s.fault for s in self.seen)

    def stats(self) -> dict[str, Any]:
        """What :class:`SubprocessProxy` reads over HTTP: counts and each request's fault and
        key, in arrival order."""
        with self._lock:
            return {"count": len(self.seen), "max_in_flight": self.max_in_flight,
                    "seen": [[s.fault, s.key] for s in self.seen]}

    # ---- internals -------------------------------------------------------------------------
    def _admit(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Seen:
        with self._lock:
            number = len(self.seen) + 1
            fault = None
            if self.rule is not None:
                fault = self.rule(number, body)
            if fault is None:
                fault = self.schedule[number - 1] if number <= len(self.schedule) else self.default
            seen = Seen(number, time.monotonic(), path, fault, body, headers)
            self.seen.append(seen)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            return seen

    def _release(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def forward(
        self, method: str, path: str, raw: bytes, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        if not self.upstream:
            raise RuntimeError("no upstream configured for a 'pass' fault")
        memo_key = method.encode() + path.encode() + b"\n" + canonical(raw)
        if self.replay is not None and memo_key in self.replay:
            return self.replay[memo_key]
        target = urlparse(self.upstream)
        conn = http.client.HTTPConnection(target.hostname, target.port, timeout=300)
        try:
            keep = {k: v for k, v in headers.items()
                    if k.lower() in ("content-type", "authorization", "accept")}
            conn.request(method, path, body=raw or None, headers=keep)
            response = conn.getresponse()
            data = response.read()
            out = {k: v for k, v in response.getheaders()
                   if k.lower() not in ("content-length", "transfer-encoding", "connection")}
            if self.replay is not None and response.status == 200:
                self.replay[memo_key] = (response.status, out, data)
            return response.status, out, data
        finally:
            conn.close()


class _Handler(BaseHTTPRequestHandler):
    owner: FaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        if self.path == STATS_PATH:
            self._send(200, json.dumps(self.owner.stats()).encode())
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {}
        headers = {k: v for k, v in self.headers.items()}
        seen = self.owner._admit(self.path, body if isinstance(body, dict) else {}, headers)
        try:
            self._fault(seen, method, raw, headers)
        finally:
            self.owner._release()

    # ---- faults ----------------------------------------------------------------------------
    def _fault(self, seen: Seen, method: str, raw: bytes, headers: dict[str, str]) -> None:
        fault = seen.fault
        if fault == "pass":
            status, out, data = self.owner.forward(method, self.path, raw, headers)
            self._send(status, data, out.get("Content-Type", "application/json"))
        elif fault == "no_logprobs":
            status, out, data = self.owner.forward(method, self.path, raw, headers)
            if status == 200:
                answer = json.loads(data)
                for choice in answer.get("choices", []):
                    choice["logprobs"] = None
                data = json.dumps(answer).encode()
            self._send(status, data)
        elif fault == "synthetic":
            time.sleep(SYNTHETIC_DELAY)
            self._send(200, json.dumps(synthetic_completion(seen.body)).encode())
        elif fault == "429":
            self._send(429, _error_body("Rate limit reached, slow down", "rate_limit_exceeded"),
                       extra={"Retry-After": str(RETRY_AFTER)})
        elif fault.startswith("echo_auth:"):
            code = int(fault.split(":", 1)[1])
            auth = headers.get("Authorization") or headers.get("authorization") or ""
            self._send(code, _error_body(f"Incorrect API key provided: {auth}", "invalid_api_key"))
        elif fault.startswith("status:"):
            code = int(fault.split(":", 1)[1])
            self._send(code, _error_body(f"injected fault {code}", "server_error"))
        elif fault == "reset":
            self._reset()
        elif fault == "hang":
            self.owner._stop.wait(HANG_SECONDS)
            self._reset()
        elif fault == "truncate":
            data = json.dumps(synthetic_completion(seen.body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self._reset()
        elif fault == "not_json":
            self._send(200, b'{"id": "chatcmpl-broken", "choices": [{"message": ')
        elif fault == "html":
            self._send(200, b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")
        elif fault == "bad_schema":
            self._send(200, json.dumps(bad_schema_completion(seen.body)).encode())
        else:
            raise ValueError(f"unknown fault {fault!r}")

    def _send(self, status: int, data: bytes, content_type: str = "application/json",
              extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _reset(self) -> None:
        """Close with RST (SO_LINGER 0) instead of an orderly FIN."""
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass
        self.close_connection = True


def _error_body(message: str, code: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": code, "code": code}}).encode()


def chat_envelope(body: dict[str, Any], message: dict[str, Any], logprobs: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-faultproxy",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or "smollm2",
        "choices": [{"index": 0, "message": message, "logprobs": logprobs,
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51},
    }


def synthetic_top_logprobs(body: dict[str, Any]) -> list[tuple[str, float]]:
    """A deterministic top-5 list for a request (depends on its messages)."""
    digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).digest()
    yes = -0.05 - digest[0] / 64.0
    no = -0.05 - digest[1] / 64.0
    first, second = (("Yes", yes), ("No", no)) if yes >= no else (("No", no), ("Yes", yes))
    return [first, second, (" yes", -6.0), ("The", -7.0), ("Maybe", -8.0)]


def synthetic_completion(body: dict[str, Any]) -> dict[str, Any]:
    """A valid chat completion with the first token's top log-probabilities."""
    top = synthetic_top_logprobs(body)
    token, logprob = top[0]
    logprobs = {"content": [{
        "token": token, "logprob": logprob, "bytes": list(token.encode()),
        "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top],
    }]}
    return chat_envelope(body, {"role": "assistant", "content": token}, logprobs)


def bad_schema_completion(body: dict[str, Any]) -> dict[str, Any]:
    """A well-formed chat completion whose content fits no judge schema and whose
    log-probabilities are not numbers."""
    logprobs = {"content": [{
        "token": "Yes", "logprob": "high", "bytes": None,
        "top_logprobs": [{"token": "Yes", "logprob": "very"}, {"token": None, "logprob": []}],
    }]}
    return chat_envelope(body, {"role": "assistant",
                                "content": '{"verdicts": "not a list", "x": 1}'}, logprobs)


class SubprocessProxy(Started):
    """A :class:`FaultProxy` in a child process, for load tests: the proxy's work then does not
    compete with the client under test for the GIL. Counters come from its stats endpoint; the
    child stops when this object stops (or when the parent dies and closes its stdin)."""

    def __init__(self, upstream: str | None = None, schedule: Sequence[str] = (),
                 default: str = "pass") -> None:
        self.args = ["--default", default, "--schedule", ",".join(schedule)]
        if upstream:
            self.args += ["--upstream", upstream]
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> SubprocessProxy:
        self.process = subprocess.Popen(
            [sys.executable, __file__, *self.args], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self.stop()
            raise RuntimeError("fault proxy subprocess did not start")
        return self

    def stats(self) -> dict[str, Any]:
        root = self.url.split("/", 3)
        with urllib.request.urlopen(f"{root[0]}//{root[2]}{STATS_PATH}", timeout=30) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


def main(argv: Sequence[str] | None = None) -> None:
    """Run a proxy until stdin closes; print its URL first."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--upstream", default=None)
    parser.add_argument("--schedule", default="")
    parser.add_argument("--default", default="pass")
    args = parser.parse_args(argv)
    schedule = [f for f in args.schedule.split(",") if f]
    with FaultProxy(args.upstream, schedule=schedule, default=args.default) as proxy:
        print(proxy.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
