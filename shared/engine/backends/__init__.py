"""Judge backends: :func:`make_backend` turns a :class:`~shared.engine.config.JudgeConfig` into a
:class:`~shared.engine.backends.base.Backend`, reused for the life of the process.

Backends are kept per provider, model, base URL and device, plus the non-secret settings that
change how a backend talks to its model (time-out, retries, concurrency, structured-output
style, batch size). Two configs that differ only in their API key get two backends; the
registry tells them apart by an HMAC of the key under a random per-process secret, so neither
the key nor a stable hash of it is stored. A local model is loaded once per process and shared
by every local backend that names it (:func:`shared.engine.backends.local.load_model`).
"""

from __future__ import annotations

import atexit
import hashlib
import hmac
import secrets
import threading
from typing import TYPE_CHECKING

from .base import Backend, LogprobsUnavailable

if TYPE_CHECKING:
    from ..config import JudgeConfig

__all__ = ["Backend", "LogprobsUnavailable", "backend_key", "close_backends", "make_backend",
           "release_backend"]

_BACKENDS: dict[tuple[object, ...], Backend] = {}
_LOCK = threading.Lock()
_KEY_SECRET = secrets.token_bytes(32)


def _key_tag(api_key: str | None) -> str:
    if not api_key:
        return ""
    return hmac.new(_KEY_SECRET, api_key.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def backend_key(config: JudgeConfig) -> tuple[object, ...]:
    """The registry key of ``config``'s backend (never contains the API key)."""
    if config.provider == "local":
        return ("local", config.model or "", config.device or "", config.batch_size)
    return (
        config.provider,
        config.resolved_model(),
        config.resolved_base_url(),
        config.device or "",
        config.resolved_response_format(),
        float(config.timeout),
        config.max_retries,
        config.max_concurrency,
        _key_tag(config.resolved_api_key()),
    )


def make_backend(config: JudgeConfig) -> Backend:
    """The backend for ``config``: created at the first request for it, then reused."""
    key = backend_key(config)
    with _LOCK:
        backend = _BACKENDS.get(key)
        if backend is None:
            backend = _create(config)
            _BACKENDS[key] = backend
        return backend


def release_backend(config: JudgeConfig) -> None:
    """Forget and close ``config``'s backend, if one was made (the demo does this after a run
    with a key typed into the page, so the process keeps no client holding that key)."""
    with _LOCK:
        backend = _BACKENDS.pop(backend_key(config), None)
    if backend is not None:
        try:
            backend.close()
        except Exception:  # closing is best effort
            pass


def _create(config: JudgeConfig) -> Backend:
    if config.provider == "local":
        from .local import LocalBackend

        return LocalBackend(model=config.model, device=config.device,
                            batch_size=config.batch_size)
    from .openai_compat import OpenAICompatBackend

    return OpenAICompatBackend(config)


@atexit.register
def close_backends() -> None:
    """Close every backend of this process (connections; loaded models stay until exit)."""
    with _LOCK:
        backends = list(_BACKENDS.values())
        _BACKENDS.clear()
    for backend in backends:
        try:
            backend.close()
        except Exception:  # closing is best effort
            pass
