"""Fakes of the three batch APIs, after their public references, on 127.0.0.1, each item answered
by the real OpenAI-compatible server (the ``llama_server`` fixture):

- OpenAI Files + Batches: ``POST /v1/files`` (multipart, ``purpose=batch``), ``POST /v1/batches``
  (its ``metadata`` kept and returned), ``GET /v1/batches/{id}``, ``GET /v1/batches`` (a cursor
  page, newest first, ``limit`` and ``after``), ``GET /v1/files/{id}/content``; input lines
  ``{"custom_id", "method", "url", "body"}``, output lines
  ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``, failed
  items in the error file.
- Anthropic Message Batches: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``,
  ``GET /v1/messages/batches/{id}/results`` (JSONL of ``{"custom_id", "result": {"type", ...}}``).
- Gemini Batch Mode: ``POST /v1beta/models/{model}:batchGenerateContent`` (``{"batch":
  {"displayName", "inputConfig": {"requests": {"requests": [{"request": GenerateContentRequest,
  "metadata"}]}}}}``, protobuf's JSON mapping: camelCase or snake_case field names), answered
  with an ``Operation`` (``name`` ``batches/{id}``, ``metadata`` a ``GenerateContentBatch``:
  ``model``, ``displayName``, ``state`` ``BATCH_STATE_PENDING/RUNNING/SUCCEEDED``, ``batchStats``
  with its int64 counts as strings, ``createTime``, ``updateTime``, ``endTime``, and once done
  ``output.inlinedResponses.inlinedResponses``, each ``{"response": GenerateContentResponse,
  "metadata"}`` or ``{"error": google.rpc.Status, "metadata"}`` in request order; ``done`` and
  ``response`` once it has ended); ``GET /v1beta/batches/{id}``; ``GET /v1beta/batches``
  (``pageSize``, ``pageToken``; ``{"operations", "nextPageToken"}``). Each request is answered
  through :mod:`.gemini`'s translation.

Batches are worked on in a thread; ``fail_once`` names custom ids answered with an error the
first time they are seen, ``fail_always`` every time (Gemini's inline requests carry no id:
there ``r{n}`` names a batch's n-th request); ``keep_metadata=False`` leaves each Gemini
response without its request's metadata (only its position tells whose it is);
``expire_first`` ends the first Gemini batch ``BATCH_STATE_EXPIRED`` with no output (the
reference: a batch still pending or running after 48 hours);
``fail_batches`` answers every item of that many first batches with an error (a provider
that is down, then recovers); ``garble_first`` writes the first OpenAI batch's output file as
text that is no JSON; ``duplicate`` names custom ids whose output line comes twice the first time;
``never_end`` keeps every batch ``in_progress``; ``no_usage`` leaves the ``usage`` out of
every OpenAI answer; ``memo`` (a dict, shared by a test module's
fakes) keeps each OpenAI item's real answer by its body, so a body asked again (the
deterministic judge answers it the same) costs no second completion;
``create_pause`` holds the answer to a batch's creation that many
seconds after the batch exists (the instant a client may die before it learns the id). Direct
``/v1/chat/completions``, ``/v1/messages`` and ``:generateContent`` requests are counted in
``direct`` (a batch run
must send none).
"""

from __future__ import annotations

import collections
import json
import re
import threading
import time
import uuid
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .anthropic import FakeAnthropic
from .gemini import to_chat_completion, to_generate_content_response
from .translating import GetPostHandler, LocalServer, Reply, chat_completion

GEMINI_BATCH = re.compile(r"^/v1beta/models/([^/:]+):batchGenerateContent$")
GEMINI_DIRECT = re.compile(r"^/v1beta/models/[^/:]+:generateContent$")
GEMINI_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta."
NOW = "2026-01-01T00:00:00Z"


class FakeBatches(LocalServer):
    handler = GetPostHandler

    def __init__(self, upstream: str, api_key: str = "sk-test", delay: float = 0.0,
                 fail_once: tuple[str, ...] = (), create_pause: float = 0.0,
                 fail_always: tuple[str, ...] = (), keep_metadata: bool = True,
                 expire_first: bool = False, fail_batches: int = 0, garble_first: bool = False,
                 duplicate: tuple[str, ...] = (), never_end: bool = False,
                 memo: dict[str, Any] | None = None, no_usage: bool = False) -> None:
        self.upstream = upstream
        self.anthropic = FakeAnthropic(upstream, api_key)
        self.delay = delay
        self.fail_once = set(fail_once)
        self.fail_always = set(fail_always)
        self.keep_metadata = keep_metadata
        self.expire_first = expire_first
        self.fail_batches = fail_batches
        self.garble_first = garble_first
        self.duplicate = set(duplicate)
        self.never_end = never_end
        self.memo = memo
        self.no_usage = no_usage
        self._down = False  # the batch being worked on is one of the fail_batches
        self.create_pause = create_pause
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.created: list[str] = []
        self.direct = 0
        self.ended_reads: collections.Counter[str] = collections.Counter()
        """GETs of each batch object after it ended (its results endpoint not counted)."""

    # -- the work

    def _fails(self, cid: str) -> bool:
        """Whether the item ``cid`` is answered with an error this time."""
        if self._down:
            return True
        if cid in self.fail_once:
            self.fail_once.discard(cid)
            return True
        return cid in self.fail_always

    def _openai_item(self, line: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        cid = line["custom_id"]
        if self._fails(cid):
            return {"id": f"batch_req_{uuid.uuid4().hex}", "custom_id": cid,
                    "response": {"status_code": 500, "request_id": "req_x",
                                 "body": {"error": {"message": "The server had an error",
                                                    "type": "server_error"}}},
                    "error": None}, False
        if self.memo is None:
            body = chat_completion(self.upstream, line["body"])
        else:
            known = json.dumps(line["body"], sort_keys=True)
            if known not in self.memo:
                self.memo[known] = chat_completion(self.upstream, line["body"])
            body = self.memo[known]
        if self.no_usage:
            body = {k: v for k, v in body.items() if k != "usage"}
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
        if self.never_end:
            return
        self._down = self.fail_batches > 0
        self.fail_batches -= self._down
        for line in lines:
            entry, ok = self._openai_item(line)
            (out if ok else err).append(entry)
            if line["custom_id"] in self.duplicate:  # the first time it is seen
                self.duplicate.discard(line["custom_id"])
                (out if ok else err).append(entry)
            batch["request_counts"]["completed" if ok else "failed"] += 1
        self._down = False
        for name, entries in (("output_file_id", out), ("error_file_id", err)):
            if entries:
                file_id = f"file-{uuid.uuid4().hex[:24]}"
                self.files[file_id] = "".join(json.dumps(e) + "\n" for e in entries).encode()
                if name == "output_file_id" and self.garble_first:
                    self.garble_first = False
                    self.files[file_id] = b"<html><body>502 Bad Gateway</body></html>\n"
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
            if self._fails(cid):
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

    def _gemini_item(self, position: int, item: dict[str, Any], model: str) -> dict[str, Any]:
        """One ``InlinedResponse``: the request's answer, or a ``google.rpc.Status``."""
        entry: dict[str, Any] = {}
        if self.keep_metadata and item.get("metadata") is not None:
            entry["metadata"] = item["metadata"]
        if self._fails(f"r{position}"):
            entry["error"] = {"code": 13, "message": "Internal error encountered."}
            return entry
        try:
            chat = to_chat_completion(item.get("request") or {}, "smollm2")
        except ValueError as exc:
            entry["error"] = {"code": 3, "message": str(exc)}  # INVALID_ARGUMENT
            return entry
        entry["response"] = to_generate_content_response(chat_completion(self.upstream, chat),
                                                         model)
        return entry

    def _work_gemini(self, name: str, requests: list[dict[str, Any]]) -> None:
        # each change is a new dict put in place, never one being written out meanwhile
        def update(**fields: Any) -> dict[str, Any]:
            operation = self.batches[name]
            metadata = {**operation["metadata"], "updateTime": NOW, **fields}
            self.batches[name] = {**operation, "metadata": metadata}
            return metadata

        time.sleep(self.delay)
        if self.expire_first:
            self.expire_first = False
            self.batches[name] = {"name": name, "done": True,
                                  "metadata": update(state="BATCH_STATE_EXPIRED", endTime=NOW)}
            return
        metadata = update(state="BATCH_STATE_RUNNING")
        model = metadata["model"].removeprefix("models/")
        responses, counts = [], {"successfulRequestCount": 0, "failedRequestCount": 0}
        for position, item in enumerate(requests):
            responses.append(self._gemini_item(position, item, model))
            counts["failedRequestCount" if "error" in responses[-1]
                   else "successfulRequestCount"] += 1
            update(batchStats={"requestCount": str(len(requests)),
                               "pendingRequestCount": str(len(requests) - position - 1),
                               **{k: str(v) for k, v in counts.items()}})
        output = {"inlinedResponses": {"inlinedResponses": responses}}
        metadata = update(state="BATCH_STATE_SUCCEEDED", endTime=NOW, output=output)
        self.batches[name] = {"name": name, "metadata": metadata, "done": True,
                              "response": {"@type": GEMINI_TYPE + "GenerateContentBatchOutput",
                                           **output}}

    def _create_gemini(self, model: str, body: dict[str, Any]) -> tuple[int, Any]:
        batch = body.get("batch") or {}
        config = batch.get("inputConfig") or batch.get("input_config") or {}
        requests = (config.get("requests") or {}).get("requests")
        if not isinstance(requests, list) or not requests:
            return 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                   "message": "batch.input_config.requests is required"}}
        name = f"batches/{uuid.uuid4().hex[:20]}"
        self.batches[name] = {"name": name, "done": False, "metadata": {
            "@type": GEMINI_TYPE + "GenerateContentBatch", "name": name,
            "model": f"models/{model}",
            "displayName": batch.get("displayName", batch.get("display_name", "")),
            "state": "BATCH_STATE_PENDING", "createTime": NOW, "updateTime": NOW,
            "batchStats": {"requestCount": str(len(requests)),
                           "pendingRequestCount": str(len(requests))}}}
        operation = self.batches[name]
        self.created.append(name)
        threading.Thread(target=self._work_gemini, args=(name, requests), daemon=True).start()
        time.sleep(self.create_pause)
        return 200, operation

    def list_gemini(self, query: dict[str, list[str]]) -> dict[str, Any]:
        names = [b for b in reversed(self.created) if b.startswith("batches/")]
        start = int(query.get("pageToken", ["0"])[0] or 0)
        size = int(query.get("pageSize", ["50"])[0])
        page = {"operations": [self.batches[b] for b in names[start:start + size]]}
        if start + size < len(names):
            page["nextPageToken"] = str(start + size)
        return page

    # -- the routes

    def post(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        if path in ("/v1/chat/completions", "/v1/messages") or GEMINI_DIRECT.match(path):
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
        if route := GEMINI_BATCH.match(path):
            return self._create_gemini(route.group(1), body)
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

    def read(self, batch_id: str) -> dict[str, Any]:
        """A batch object as a GET returns it, counting the reads of an ended one."""
        batch = self.batches[batch_id]
        if batch.get("done") or batch.get("status") == "completed" or \
                batch.get("processing_status") == "ended":
            self.ended_reads[batch_id] += 1
        return batch

    def get(self, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        if parts == ["v1", "batches"]:
            return 200, self.list_openai(query)
        if parts == ["v1beta", "batches"]:
            return 200, self.list_gemini(query)
        if parts[:2] == ["v1beta", "batches"] and f"batches/{parts[-1]}" in self.batches:
            return 200, self.read(f"batches/{parts[-1]}")
        if parts[:2] == ["v1", "batches"] and parts[2] in self.batches:
            return 200, self.read(parts[2])
        if parts[:2] == ["v1", "files"] and parts[-1] == "content" and parts[2] in self.files:
            return 200, self.files[parts[2]]
        if parts[:3] == ["v1", "messages", "batches"] and parts[3] in self.batches:
            if len(parts) == 5 and parts[4] == "results":
                lines = "".join(json.dumps(r) + "\n" for r in self.results[parts[3]])
                return 200, lines.encode()
            return 200, self.read(parts[3])
        return 404, {"error": {"message": f"not found: {path}"}}

    # -- the server

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        if method == "POST":
            return Reply(*self.post(path.split("?")[0], headers, raw))
        url = urlsplit(path)
        return Reply(*self.get(url.path, parse_qs(url.query)))
