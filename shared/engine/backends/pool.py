"""The backend pool: :func:`make_backend` turns a :class:`~shared.engine.config.JudgeConfig` into
a :class:`~shared.engine.backends.base.Backend`, reused for the life of the process.

The class comes from the provider registry (:mod:`.registry`: provider name ->
``module:Class``, imported at first use by :func:`backend_class`) and is built by its
:meth:`~.base.Backend.from_config`. Backends are kept per
:meth:`~shared.engine.config.JudgeConfig.backend_settings` (every option but the runner's own:
provider, model, base URL, device, time-out, retries, concurrency, structured-output style,
batch size, the provider's defaults filled in). Two configs that differ only in their API key
get two backends; the pool tells them apart by an HMAC of the key under a random per-process
secret, so neither the key nor a stable hash of it is stored. A local model is loaded once per
process and shared by every local backend that names it
(:func:`shared.engine.backends.local.load_model`).
"""

from __future__ import annotations

import atexit
import hashlib
import hmac
import secrets
import threading
from typing import TYPE_CHECKING

from .base import Backend
from .classes import backend_class

if TYPE_CHECKING:
    from ..config import JudgeConfig

__all__ = ["backend_class", "backend_key", "close_backends", "live_backends", "make_backend",
           "release_backend"]

_BACKENDS: dict[tuple[object, ...], Backend] = {}
_LOCK = threading.Lock()
_KEY_SECRET = secrets.token_bytes(32)


def _key_tag(api_key: str | None) -> str:
    if not api_key:
        return ""
    return hmac.new(_KEY_SECRET, api_key.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def backend_key(config: JudgeConfig) -> tuple[object, ...]:
    """The pool key of ``config``'s backend: its backend settings and a tag of its API key
    (never the key)."""
    return (*sorted(config.backend_settings().items()), _key_tag(config.resolved_api_key()))


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


def live_backends() -> list[Backend]:
    """The backends this process holds now (the demo's tests check none keeps a typed key)."""
    with _LOCK:
        return list(_BACKENDS.values())


def _create(config: JudgeConfig) -> Backend:
    return backend_class(config.provider).from_config(config)


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
