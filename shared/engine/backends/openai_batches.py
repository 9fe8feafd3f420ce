"""OpenAI's Batch API (Files + Batches), as OpenAI and Azure OpenAI serve it.

The round's requests are one ``.jsonl`` file (``purpose="batch"``) of
``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`` lines; the batch
(``completion_window="24h"``, ``metadata`` carrying the round's token, by which
:meth:`OpenAIBatches.find` looks it up with ``batches.list``) is polled with
``batches.retrieve`` and read from its output file (``{"custom_id", "response":
{"status_code", "body"}, "error"}`` lines) and error file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .batching import BatchAPI, BatchItemFailed, Status, collect, first_listed

TOKEN_KEY = "judge_metrics_round"  # the metadata key of the token a rerun finds the batch by
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})


class OpenAIBatches(BatchAPI):
    """Batches through the SDK client ``client``."""

    def __init__(self, client: Any, url: str = "/v1/chat/completions") -> None:
        self.client = client
        self.url = url

    async def submit(self, items: list[tuple[str, dict[str, Any]]], token: str) -> str:
        lines = [json.dumps({"custom_id": cid, "method": "POST", "url": self.url, "body": body},
                            ensure_ascii=False) for cid, body in items]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        file = await self.client.files.create(file=("judge-requests.jsonl", data),
                                              purpose="batch")
        batch = await self.client.batches.create(input_file_id=file.id, endpoint=self.url,
                                                 completion_window="24h",
                                                 metadata={TOKEN_KEY: token})
        return str(batch.id)

    async def find(self, token: str) -> str | None:
        """The newest batch whose metadata carries ``token`` (``batches.list`` lists newest
        first; only the most recent :data:`.batching.FIND_LIMIT` batches are looked at)."""
        batch = await first_listed(
            self.client.batches.list(limit=100),
            lambda batch: (getattr(batch, "metadata", None) or {}).get(TOKEN_KEY) == token)
        return None if batch is None else str(batch.id)

    async def status(self, batch_id: str) -> Status:
        batch = await self.client.batches.retrieve(batch_id)
        counts = batch.request_counts
        total = int(getattr(counts, "total", 0) or 0)
        done = int(getattr(counts, "completed", 0) or 0) + int(getattr(counts, "failed", 0) or 0)
        ended = batch.status in ENDED
        usable = batch.status not in ("failed",) and not (
            ended and not batch.output_file_id and not batch.error_file_id)
        errors = getattr(getattr(batch, "errors", None), "data", None) or []
        detail = "; ".join(str(getattr(e, "message", e)) for e in errors) or str(batch.status)
        return Status(ended=ended, total=total, done=done, usable=usable, detail=detail,
                      job=batch)

    async def results(self, ended: Status, batch_id: str,
                      custom_ids: Sequence[str]) -> dict[str, Any]:
        """The answers of the output and error files; a line that is no JSON object with a
        ``custom_id`` is skipped (its item then has no result and is asked again), an item
        answered twice is trusted in neither answer (:func:`.batching.collect`)."""
        batch = ended.job
        entries: list[tuple[str, Any]] = []
        unreadable = 0
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await self.client.files.content(file_id)
            for line in content.text.splitlines():
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    cid = entry["custom_id"]
                except (ValueError, TypeError, KeyError):
                    unreadable += 1
                    continue
                entries.append((str(cid), _answer(entry)))
        answers = collect(entries, batch_id)
        if unreadable:
            for cid in custom_ids:
                answers.setdefault(cid, BatchItemFailed(
                    f"no readable result in batch {batch_id} ({unreadable} unreadable "
                    "line(s) in its results)"))
        return answers


def _answer(entry: Any) -> Any:
    """One results line's answer: a ``ChatCompletion`` or a :class:`.batching.BatchItemFailed`."""
    from openai.types.chat import ChatCompletion

    response = entry.get("response") or {}
    if not isinstance(response, dict):
        return BatchItemFailed("unreadable batch answer: its response is no object")
    body = response.get("body")
    if entry.get("error") or response.get("status_code") != 200 or not body:
        error = entry.get("error") or (body if isinstance(body, dict) else {}).get("error") or {}
        message = error.get("message") if isinstance(error, dict) else str(error)
        status = response.get("status_code")
        return BatchItemFailed(f"batch item failed{f' (HTTP {status})' if status else ''}: "
                               f"{message or 'no answer'}")
    try:
        return ChatCompletion.model_validate(body)
    except Exception as exc:
        return BatchItemFailed(f"unreadable batch answer: {exc}")
