"""What keeps the API key typed into the page from leaking: every string the page gets back is
scrubbed (:mod:`shared.base.redaction`), and the judge backend made for a key is dropped after its
last run."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from ..base.redaction import redact, redact_all


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
def page_key_backend(kwargs: Mapping[str, Any]) -> Iterator[None]:
    """Around a run with an API key typed into the page: when the last such run with that key
    ends, drop the judge backend made for it, so the process keeps no client holding the key."""
    if not kwargs.get("api_key") and not any(j.get("api_key") for j in kwargs.get("judges")
                                             or ()):
        yield
        return
    from ..engine.backends.pool import backend_key, release_backend
    from ..engine.config import judge_config, judge_configs, judge_options_of

    try:
        config = judge_config(judge_options_of(kwargs))
    except (TypeError, ValueError):  # compute reports it
        yield
        return
    keyed = [judge for judge in judge_configs(config) if judge.api_key]  # each judge of a panel
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
