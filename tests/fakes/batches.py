"""Fakes of the two batch APIs, after their public references, on 127.0.0.1, each item answered
by the real OpenAI-compatible server (the ``llama_server`` fixture):

- OpenAI Files + Batches: ``POST /v1/files`` (multipart, ``purpose=batch``), ``POST /v1/batches``
  (its ``metadata`` kept and returned), ``GET /v1/batches/{id}``, ``GET /v1/batches`` (a cursor
  page, newest first, ``limit`` and ``after``), ``GET /v1/files/{id}/content``; input lines
  ``{"custom_id", "method", "url", "body"}``, output lines
  ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``, failed
  items in the error file.
- Anthropic Message Batches: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``,
  ``GET /v1/messages/batches/{id}/results`` (JSONL of ``{"custom_id", "result": {"type", ...}}``).

Batches are worked on in a thread; ``fail_once`` names custom ids answered with an error the
first time they are seen; ``create_pause`` holds the answer to a batch's creation that many
seconds after the batch exists (the instant a client may die before it learns the id). Direct
``/v1/chat/completions`` and ``/v1/messages`` requests are counted in ``direct`` (a batch run
must send none).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .anthropic import FakeAnthropic
from .translating import GetPostHandler, LocalServer, Reply, chat_completion


class FakeBatches(LocalServer):
    handler = GetPostHandler

    def __init__(self, upstream: str, api_key: str = "sk-test", delay: float = 0.0,
                 fail_once: tuple[str, ...] = (), create_pause: float = 0.0) -> None:
        self.upstream = upstream
        self.anthropic = FakeAnthropic(upstream, api_key)
        self.delay = delay
        self.fail_once = set(fail_once)
        self.create_pause = create_pause
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.created: list[str] = []
        self.direct = 0

    # -- the work

    def _openai_item(self, line: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        cid = line["custom_id"]
        if cid in self.fail_once:
            self.fail_once.discard(cid)
            return {"id": f"batch_req_{uuid.uuid4().hex}", "custom_id": cid,
                    "response": {"status_code": 500, "request_id": "req_x",
                                 "body": {"error": {"message": "The server had an error",
                                                    "type": "server_error"}}},
                    "error": None}, False
        body = chat_completion(self.upstream, line["body"])
        return {"id": f"batch_req_{uuid.uuid4().hex}", "custom_id": cid,
                "response": {"status_code": 200, "request_id": "req_x", "body": body},
                "error": None}, True

    def _work_openai(self, batch_id: str) -> None:
        batch = self.batches[batch_id]
        lines = [json.loads(x) for x in self.files[batch["input_file_id"]].decode().splitlines()
                 if x.strip()]
        batch["request_counts"]["total"] = len(lines)
        out, err = [], []
        time.sleep(self.delay)
        for line in lines:
            entry, ok = self._openai_item(line)
            (out if ok else err).append(entry)
            batch["request_counts"]["completed" if ok else "failed"] += 1
        for name, entries in (("output_file_id", out), ("error_file_id", err)):
            if entries:
                file_id = f"file-{uuid.uuid4().hex[:24]}"
                self.files[file_id] = "".join(json.dumps(e) + "\n" for e in entries).encode()
                batch[name] = file_id
        batch["status"] = "completed"
        batch["completed_at"] = int(time.time())

    def _work_anthropic(self, batch_id: str, requests: list[dict[str, Any]]) -> None:
        batch = self.batches[batch_id]
        time.sleep(self.delay)
        results = []
        for item in requests:
            cid, params = item["custom_id"], item["params"]
            counts = batch["request_counts"]
            counts["processing"] -= 1
            if cid in self.fail_once:
                self.fail_once.discard(cid)
                results.append({"custom_id": cid, "result": {"type": "errored", "error": {
                    "type": "error", "error": {"type": "api_error",
                                               "message": "Internal server error"}}}})
                counts["errored"] += 1
                continue
            chat, forced = self.anthropic.translate(params, "2023-06-01")
            message = self.anthropic.message(params, chat_completion(self.upstream, chat), forced)
            results.append({"custom_id": cid, "result": {"type": "succeeded",
                                                         "message": message}})
            counts["succeeded"] += 1
        self.results[batch_id] = results
        batch["processing_status"] = "ended"
        batch["ended_at"] = "2026-01-01T00:00:00Z"
        batch["results_url"] = f"{self.url}/v1/messages/batches/{batch_id}/results"

    # -- the routes

    def post(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        if path in ("/v1/chat/completions", "/v1/messages"):
            self.direct += 1
            return 400, {"error": {"message": "this fake only takes batches"}}
        if path == "/v1/files":
            boundary = headers["content-type"].split("boundary=")[1].encode()
            data = b""
            for part in raw.split(b"--" + boundary):
                if b'name="file"' in part:
                    data = part.split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n", 1)[0]
            file_id = f"file-{uuid.uuid4().hex[:24]}"
            self.files[file_id] = data
            return 200, {"id": file_id, "object": "file", "bytes": len(data),
                         "created_at": int(time.time()), "filename": "input.jsonl",
                         "purpose": "batch", "status": "processed"}
        body = json.loads(raw)
        if path == "/v1/batches":
            batch_id = f"batch_{uuid.uuid4().hex[:24]}"
            self.batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": body["endpoint"],
                "errors": None, "input_file_id": body["input_file_id"],
                "completion_window": body["completion_window"], "status": "in_progress",
                "output_file_id": None, "error_file_id": None,
                "created_at": int(time.time()), "metadata": body.get("metadata"),
                "request_counts": {"total": 0, "completed": 0, "failed": 0}}
            self.created.append(batch_id)
            threading.Thread(target=self._work_openai, args=(batch_id,), daemon=True).start()
            time.sleep(self.create_pause)
            return 200, self.batches[batch_id]
        if path == "/v1/messages/batches":
            batch_id = f"msgbatch_{uuid.uuid4().hex[:24]}"
            self.batches[batch_id] = {
                "id": batch_id, "type": "message_batch", "processing_status": "in_progress",
                "request_counts": {"processing": len(body["requests"]), "succeeded": 0,
                                   "errored": 0, "canceled": 0, "expired": 0},
                "ended_at": None, "created_at": "2026-01-01T00:00:00Z",
                "expires_at": "2026-01-02T00:00:00Z", "archived_at": None,
                "cancel_initiated_at": None, "results_url": None}
            self.created.append(batch_id)
            threading.Thread(target=self._work_anthropic, args=(batch_id, body["requests"]),
                             daemon=True).start()
            return 200, self.batches[batch_id]
        return 404, {"error": {"message": f"not found: {path}"}}

    def list_openai(self, query: dict[str, list[str]]) -> dict[str, Any]:
        ids = [b for b in reversed(self.created) if b.startswith("batch_")]  # newest first
        after = query.get("after", [None])[0]
        if after in ids:
            ids = ids[ids.index(after) + 1:]
        limit = int(query.get("limit", ["20"])[0])
        page = [self.batches[b] for b in ids[:limit]]
        return {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None, "has_more": len(ids) > limit}

    def get(self, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        if parts == ["v1", "batches"]:
            return 200, self.list_openai(query)
        if parts[:2] == ["v1", "batches"] and parts[2] in self.batches:
            return 200, self.batches[parts[2]]
        if parts[:2] == ["v1", "files"] and parts[-1] == "content" and parts[2] in self.files:
            return 200, self.files[parts[2]]
        if parts[:3] == ["v1", "messages", "batches"] and parts[3] in self.batches:
            if len(parts) == 5 and parts[4] == "results":
                lines = "".join(json.dumps(r) + "\n" for r in self.results[parts[3]])
                return 200, lines.encode()
            return 200, self.batches[parts[3]]
        return 404, {"error": {"message": f"not found: {path}"}}

    # -- the server

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        if method == "POST":
            return Reply(*self.post(path.split("?")[0], headers, raw))
        url = urlsplit(path)
        return Reply(*self.get(url.path, parse_qs(url.query)))
