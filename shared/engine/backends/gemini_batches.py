"""Gemini's Batch Mode (the Gemini API's ``batchGenerateContent``), through the google-genai SDK.

A round's requests go inline: ``client.aio.batches.create(model=..., src=[...], config=
{"display_name": ...})`` posts them to ``/v1beta/models/{model}:batchGenerateContent`` as
``batch.inputConfig.requests.requests``, each ``{"request": GenerateContentRequest,
"metadata"}``. An item's ``contents`` and ``config`` are exactly the synchronous
``generate_content`` call's (:meth:`.gemini.GeminiBackend.content_request`), so the answers are
the same. ``batches.get`` polls ``/v1beta/batches/{id}``; the SDK names its states
``JOB_STATE_PENDING``, ``_RUNNING``, ``_SUCCEEDED``, ``_FAILED``, ``_CANCELLED`` and
``_EXPIRED``. The answers are ``dest.inlined_responses``: each a ``response`` (the
``GenerateContentResponse`` a synchronous call returns, read by the same code) or an ``error``.

Inline requests carry no id, so each answer is matched to its request by the request's
``metadata`` (``{"judge_metrics_id": custom_id}``), which the SDK sends with each inline
request and reads back with each response (``InlinedRequest.metadata``,
``InlinedResponse.metadata``; the API reference: "the metadata associated with the request").
An answer without it is matched by its position: the reference says the responses come "in the
same order as the input requests", and the service has been seen to leave the metadata out of
its responses. The metadata comes first where it is there because it holds even where the
order would not (an answer left out shifts every position after it).

The round's token is the batch's display name; :meth:`GeminiBatches.find` looks it up with
``batches.list``. Progress: the SDK's ``BatchJob`` for the Gemini API carries no per-item counts
(the API's ``batchStats`` is not read into it; ``completion_stats`` is Vertex AI's), so the bar
moves when the batch ends. Inline requests suit rounds under the API's 20 MB request size
(tens of thousands of judge requests); a larger round is refused by the API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .batching import BatchAPI, BatchItemFailed, Status, collect, first_listed

ID_KEY = "judge_metrics_id"  # the metadata key of an item's custom id
NAME_PREFIX = "judge-metrics "  # the display name: this, then the round's token
ENDED = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED",
                   "JOB_STATE_EXPIRED"})


def _state(job: Any) -> str:
    state = getattr(job, "state", None)
    return str(getattr(state, "value", state) or "JOB_STATE_UNSPECIFIED")


def _responses(job: Any) -> list[Any]:
    return list(getattr(getattr(job, "dest", None), "inlined_responses", None) or [])


class GeminiBatches(BatchAPI):
    """Batches through the google-genai SDK client ``client``."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def submit(self, items: list[tuple[str, dict[str, Any]]], token: str) -> str:
        """``items``' bodies are ``generate_content`` keyword arguments, all of one model."""
        models = {body["model"] for _, body in items}
        if len(models) != 1:
            raise ValueError(f"a Gemini batch takes one model, got {sorted(models)}")
        src = [{"contents": body["contents"], "config": body["config"],
                "metadata": {ID_KEY: cid}} for cid, body in items]
        job = await self.client.aio.batches.create(
            model=models.pop(), src=src, config={"display_name": NAME_PREFIX + token})
        return str(job.name)

    async def find(self, token: str) -> str | None:
        """The batch whose display name carries ``token`` (among the first
        :data:`.batching.FIND_LIMIT` that ``batches.list`` gives)."""
        job = await first_listed(await self.client.aio.batches.list(config={"page_size": 100}),
                                 lambda job: job.display_name == NAME_PREFIX + token)
        return None if job is None else str(job.name)

    async def status(self, batch_id: str) -> Status:
        job = await self.client.aio.batches.get(name=batch_id)
        state = _state(job)
        ended = state in ENDED
        answered = len(_responses(job)) if ended else 0
        error = getattr(job, "error", None)
        detail = str(getattr(error, "message", None) or state)
        # a batch that failed, or ended (cancelled, expired) without answers, has none to read
        usable = state != "JOB_STATE_FAILED" and not (ended and not answered)
        return Status(ended=ended, total=0, done=answered, usable=usable, detail=detail, job=job)

    async def results(self, ended: Status, batch_id: str,
                      custom_ids: Sequence[str]) -> dict[str, Any]:
        job = ended.job
        wanted = set(custom_ids)
        entries: list[tuple[str, Any]] = []
        for position, entry in enumerate(_responses(job)):
            cid = (entry.metadata or {}).get(ID_KEY)
            if cid is None and position < len(custom_ids):
                cid = custom_ids[position]
            if cid not in wanted:
                continue
            if entry.error is not None or entry.response is None:
                code = getattr(entry.error, "code", None)
                message = getattr(entry.error, "message", None)
                entries.append((cid, BatchItemFailed(
                    f"batch item failed{f' (code {code})' if code is not None else ''}: "
                    f"{message or 'no answer'}")))
            else:
                entries.append((cid, entry.response))
        return collect(entries, batch_id)
