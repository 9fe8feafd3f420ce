"""What keeps the API key typed into the page from leaking: every string the page gets back is
scrubbed (:mod:`shared.base.redaction`), and the judge backend made for a key is dropped after its
last run."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..base.redaction import redact, redact_all

if TYPE_CHECKING:
    from ..engine.config import JudgeConfig


class Scrubber:
    """The page's redaction step: :func:`shared.base.redaction.redact` (API keys, Bearer and Basic
    credentials, URL user-info; a provider's error may quote them) with the key typed into the
    page (each judge's, for a panel) as more secrets."""

    def __init__(self, *secrets: str | None) -> None:
        self.secrets = secrets

    def text(self, value: str) -> str:
        return redact(value, self.secrets)

    def __call__(self, value: Any) -> Any:
        return redact_all(value, self.secrets)


_KEYED_RUNS: dict[tuple[object, ...], int] = {}
_KEYED_LOCK = threading.Lock()


@contextlib.contextmanager
def page_key_backend(config: JudgeConfig) -> Iterator[None]:
    """Around a run of the judge ``config`` (the run's, checked once): when the last run with
    an API key typed into the page ends, drop the judge backend made for that key, so the
    process keeps no client holding it."""
    from ..engine.config import judge_configs

    keyed = [judge for judge in judge_configs(config) if judge.api_key]  # each judge of a panel
    if not keyed:
        yield
        return
    from ..engine.backends.pool import backend_key, release_backend

    keys = [backend_key(judge) for judge in keyed]
    with _KEYED_LOCK:
        for key in keys:
            _KEYED_RUNS[key] = _KEYED_RUNS.get(key, 0) + 1
    try:
        yield
    finally:
        for key, judge in zip(keys, keyed, strict=True):
            with _KEYED_LOCK:
                _KEYED_RUNS[key] -= 1
                last = _KEYED_RUNS[key] == 0
                if last:
                    del _KEYED_RUNS[key]
            if last:
                release_backend(judge)
