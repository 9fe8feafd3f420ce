"""Anthropic's Message Batches API (``messages.batches.create/retrieve/results``).

Each item is ``{"custom_id", "params"}`` where ``params`` are the Messages API parameters of the
synchronous request (:meth:`.anthropic_messages.AnthropicBackend.message_params`); results are
``succeeded`` (a ``message``), ``errored``, ``canceled`` or ``expired``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .batching import BatchAPI, BatchItemFailed, Status, collect


class AnthropicBatches(BatchAPI):
    """Batches through the SDK client ``client``."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def submit(self, items: list[tuple[str, dict[str, Any]]], token: str) -> str:
        # Message Batches take no metadata: ``token`` is not sent and find stays None
        batch = await self.client.messages.batches.create(
            requests=[{"custom_id": cid, "params": params} for cid, params in items])
        return str(batch.id)

    async def status(self, batch_id: str) -> Status:
        batch = await self.client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        parts = {name: int(getattr(counts, name, 0) or 0)
                 for name in ("processing", "succeeded", "errored", "canceled", "expired")}
        total = sum(parts.values())
        return Status(ended=batch.processing_status == "ended", total=total,
                      done=total - parts["processing"], detail=str(batch.processing_status))

    async def results(self, ended: Status, batch_id: str,
                      custom_ids: Sequence[str]) -> dict[str, Any]:
        entries: list[tuple[str, Any]] = []
        async for entry in await self.client.messages.batches.results(batch_id):
            result = entry.result
            if result.type == "succeeded":
                entries.append((entry.custom_id, result.message))
            else:
                error = getattr(result, "error", None)
                inner = getattr(error, "error", None)
                message = getattr(inner, "message", None) or getattr(error, "message", None)
                entries.append((entry.custom_id, BatchItemFailed(
                    f"batch item {result.type}{f': {message}' if message else ''}")))
        return collect(entries, batch_id)
