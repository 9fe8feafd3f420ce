"""The persistent judge-call cache: one SQLite file in WAL mode.

Every successful judge answer is stored under a key that hashes everything that decides the
answer (see :func:`call_key`), as soon as it arrives. Several threads and several processes may
read and write the same cache at once: SQLite serialises the writers (WAL journal, busy timeout)
and each commit is durable once it returns, so a killed run keeps every answer stored before it
died.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CACHE_ENV = "JUDGE_METRICS_CACHE_DIR"
CACHE_FILE = "judge-calls.sqlite3"
KEY_VERSION = 1  # bump when the key or the stored value format changes


def default_cache_dir() -> Path:
    """``$JUDGE_METRICS_CACHE_DIR``, else the user cache folder (``~/.cache/judge-metrics`` on
    Linux, ``~/Library/Caches/judge-metrics`` on macOS, ``%LOCALAPPDATA%\\judge-metrics`` on
    Windows)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "judge-metrics"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def call_key(
    *,
    operation: str,
    kind: str,
    host: str,
    model: str,
    messages: Iterable[tuple[str, str]],
    sampling: dict[str, Any],
    prompt_id: str,
    extra: dict[str, Any],
) -> str:
    """sha256 hex digest identifying one judge call.

    ``extra`` holds the operation's own parameters (``top_k``; the schema and ``max_tokens``).
    The API key is deliberately not a parameter: it never enters a key or the cache file.
    """
    payload = {
        "v": KEY_VERSION,
        "operation": operation,
        "kind": kind,
        "host": host,
        "model": model,
        "messages": [[role, content] for role, content in messages],
        "sampling": sampling,
        "prompt_id": prompt_id,
        "extra": extra,
    }
    return hashlib.sha256(_canonical(payload).encode("utf-8", "surrogatepass")).hexdigest()


class CallCache:
    """Key -> JSON value store in ``<directory>/judge-calls.sqlite3``; thread- and process-safe."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).expanduser()
        self.path = self.directory / CACHE_FILE
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid = -1

    def _connect(self) -> sqlite3.Connection:
        # A connection must not cross a fork: a child process opens its own.
        if self._connection is None or self._pid != os.getpid():
            self.directory.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                self.path, timeout=60.0, isolation_level=None, check_same_thread=False
            )
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS calls ("
                "key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
            )
            self._connection, self._pid = connection, os.getpid()
        return self._connection

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """The stored values of those keys that are present."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, Any] = {}
        with self._lock:
            connection = self._connect()
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = connection.execute(
                    f"SELECT key, value FROM calls WHERE key IN ({marks})", chunk
                ).fetchall()
                found.update((key, json.loads(value)) for key, value in rows)
        return found

    def get(self, key: str) -> Any | None:
        return self.get_many([key]).get(key)

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serialisable) and commit at once."""
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        with self._lock:
            self._connect().execute(
                "INSERT OR REPLACE INTO calls (key, value, created) VALUES (?, ?, ?)",
                (key, text, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._connect().execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None


_OPEN: dict[Path, CallCache] = {}
_OPEN_LOCK = threading.Lock()


def open_cache(directory: str | os.PathLike[str] | None = None) -> CallCache:
    """The process-wide :class:`CallCache` of ``directory`` (default: :func:`default_cache_dir`)."""
    path = Path(directory).expanduser() if directory else default_cache_dir()
    path = path.resolve()
    with _OPEN_LOCK:
        if path not in _OPEN:
            _OPEN[path] = CallCache(path)
        return _OPEN[path]
