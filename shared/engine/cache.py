"""The persistent judge-call cache: one SQLite file in WAL mode.

Every successful judge answer is stored under a key that hashes everything that decides the
answer (see :func:`call_key`), as soon as it arrives. Several threads and several processes may
read and write the same cache at once: SQLite serialises the writers (WAL journal, busy timeout)
and each commit is durable once it returns, so a killed run keeps every answer stored before it
died.

A cache that cannot be used heals or degrades, never stops a run: a file that is not a valid
SQLite database (garbage, truncated) is moved aside to ``judge-calls.sqlite3.broken-<time>``
with a one-line warning and a fresh cache starts; a cache that cannot be written (a read-only
folder or file) is opened read-only, so its answers are still served, with a one-line warning
that new answers are not stored. See docs/RUNNER.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CACHE_ENV = "JUDGE_METRICS_CACHE_DIR"
CACHE_FILE = "judge-calls.sqlite3"
# bump when the key or the stored value format changes (old entries are then never reused)
# 2: the whole endpoint URL (scheme, host, port, path, query) instead of host[:port]
KEY_VERSION = 2
# How long a connection waits for another one's lock (SQLite's busy timeout), and how long
# opening keeps retrying a set-up that SQLite refused at once because of one.
BUSY_SECONDS = 60.0


def user_cache_dir() -> Path:
    """The project's folder in the user cache folder: ``judge-metrics`` in ``~/.cache`` (or
    ``$XDG_CACHE_HOME``) on Linux, ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on
    Windows. The call cache and the local backend's model cache live under it by default."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "judge-metrics"


def default_cache_dir() -> Path:
    """``$JUDGE_METRICS_CACHE_DIR``, else :func:`user_cache_dir` (``~/.cache/judge-metrics`` on
    Linux, ``~/Library/Caches/judge-metrics`` on macOS, ``%LOCALAPPDATA%\\judge-metrics`` on
    Windows)."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else user_cache_dir()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def call_key(
    *,
    operation: str,
    kind: str,
    endpoint: str,
    model: str,
    messages: Iterable[tuple[str, str]],
    sampling: dict[str, Any],
    prompt_id: str,
    extra: dict[str, Any],
) -> str:
    """sha256 hex digest identifying one judge call.

    ``endpoint``: the server's URL without credentials (scheme, host, port, path and query: two
    gateway routes on one host, or two API versions of one route, may serve different answers);
    ``""`` for the local backend.
    ``extra`` holds the operation's own parameters (``top_k``; the schema and ``max_tokens``).
    The API key is deliberately not a parameter: it never enters a key or the cache file.
    """
    payload = {
        "v": KEY_VERSION,
        "operation": operation,
        "kind": kind,
        "endpoint": endpoint,
        "model": model,
        "messages": [[role, content] for role, content in messages],
        "sampling": sampling,
        "prompt_id": prompt_id,
        "extra": extra,
    }
    return hashlib.sha256(_canonical(payload).encode("utf-8", "surrogatepass")).hexdigest()


def _is_busy(error: sqlite3.Error) -> bool:
    """Another connection holds the lock this one needs. Setting up a new file (its journal
    mode, its table) can get this at once, without the busy timeout's wait, when several
    processes open it together: SQLite refuses rather than risk a deadlock. It passes, so it is
    retried; it is not a file that cannot be written."""
    return (getattr(error, "sqlite_errorcode", 0) & 0xFF) in (sqlite3.SQLITE_BUSY,
                                                                sqlite3.SQLITE_LOCKED)


def _is_corrupt(error: sqlite3.Error) -> bool:
    """A file that is not (or no longer) a database; not a lock, a read-only or I/O refusal."""
    if isinstance(error, sqlite3.OperationalError):
        return False
    return isinstance(error, sqlite3.DatabaseError)


class CallCache:
    """Key -> JSON value store in ``<directory>/judge-calls.sqlite3``; thread- and process-safe.

    ``read_only`` is True once the cache could not be opened for writing: hits are served, new
    answers are not stored."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).expanduser()
        self.path = self.directory / CACHE_FILE
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid = -1
        self.read_only = False
        self._has_table = True
        self._identity: tuple[int, int] | None = None

    def _connect(self) -> sqlite3.Connection:
        # A connection must not cross a fork: a child process opens its own. A file replaced
        # under it (another process moved a broken cache aside) is reopened.
        if self._connection is not None and self._pid == os.getpid() and (
                self._identity is not None and self._file_identity() != self._identity):
            self._connection.close()
            self._connection = None
        if self._connection is None or self._pid != os.getpid():
            try:
                connection = self._open_writable()
            except sqlite3.Error as error:
                if _is_corrupt(error):
                    self._move_aside(error)
                    connection = self._open_writable()
                else:
                    connection = self._open_read_only(error)
            except OSError as error:  # the folder cannot be created
                connection = self._open_read_only(error)
            self._connection, self._pid = connection, os.getpid()
            self._identity = None if self.read_only else self._file_identity()
        return self._connection

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_dev, stat.st_ino

    def _open_writable(self) -> sqlite3.Connection:
        self.directory.mkdir(parents=True, exist_ok=True)
        if not os.access(self.directory, os.W_OK) or (
                self.path.exists() and not os.access(self.path, os.W_OK)):
            raise sqlite3.OperationalError("attempt to write a readonly database")
        deadline = time.monotonic() + BUSY_SECONDS
        while True:
            connection = sqlite3.connect(
                self.path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False
            )
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=NORMAL")
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS calls ("
                    "key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
                )
            except sqlite3.OperationalError as error:
                connection.close()
                if not _is_busy(error) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)  # another process is setting the new file up: try again
                continue
            except BaseException:
                connection.close()
                raise
            self.read_only = False
            return connection

    def _open_read_only(self, why: BaseException) -> sqlite3.Connection:
        """The cache file opened read-only (``mode=ro``; ``immutable=1`` when its WAL side
        files cannot be created either); an empty in-memory store when there is no file."""
        self.read_only = True
        if not self.path.is_file():
            warnings.warn(f"judge call cache {self.directory} cannot be written ({why}); "
                          "answers are not cached in this run", stacklevel=4)
            self._has_table = False
            return sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        last: sqlite3.Error | None = None
        for flags in ("mode=ro", "mode=ro&immutable=1"):
            uri = f"{self.path.resolve().as_uri()}?{flags}"
            try:
                connection = sqlite3.connect(uri, uri=True, timeout=BUSY_SECONDS,
                                             isolation_level=None, check_same_thread=False)
                connection.execute("SELECT COUNT(*) FROM calls").fetchone()
            except sqlite3.Error as error:
                last = error
                continue
            warnings.warn(f"judge call cache {self.path} is read-only ({why}); its answers are "
                          "used, new ones are not stored", stacklevel=4)
            return connection
        warnings.warn(f"judge call cache {self.path} cannot be opened ({last}); answers are not "
                      "cached in this run", stacklevel=4)
        self._has_table = False
        return sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)

    def _move_aside(self, error: sqlite3.Error) -> None:
        """Rename a broken cache file (and its WAL side files) with a timestamp and warn."""
        if self._connection is not None:
            try:
                self._connection.close()
            except sqlite3.Error:
                pass
            self._connection = None
        if self._healthy():  # another process healed it already: use the fresh file
            return
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = self.path.with_name(f"{CACHE_FILE}.broken-{stamp}")
        number = 1
        while target.exists():
            number += 1
            target = self.path.with_name(f"{CACHE_FILE}.broken-{stamp}-{number}")
        try:
            os.replace(self.path, target)
        except FileNotFoundError:  # another process moved it first
            return
        for suffix in ("-wal", "-shm"):
            side = self.path.with_name(CACHE_FILE + suffix)
            try:
                os.replace(side, target.with_name(target.name + suffix))
            except OSError:
                pass
        warnings.warn(f"judge call cache {self.path} was not a valid database ({error}); moved "
                      f"to {target}, a fresh cache starts", stacklevel=5)

    def _healthy(self) -> bool:
        """Whether the file now at ``self.path`` is not corrupt (every page of the table reads;
        a missing file or table is not corruption: opening creates them)."""
        if not self.path.exists():
            return True
        try:
            connection = sqlite3.connect(self.path, timeout=BUSY_SECONDS)
        except sqlite3.Error as error:
            return not _is_corrupt(error)
        try:
            connection.execute("SELECT COUNT(*), MAX(LENGTH(value)) FROM calls").fetchone()
            return True
        except sqlite3.Error as error:
            return not _is_corrupt(error)
        finally:
            connection.close()

    def _execute(self, sql: str, parameters: Iterable[Any] = ()) -> list[Any]:
        """Run one statement; a cache found corrupt is moved aside and the statement retried
        once on a fresh one. Call with ``self._lock`` held."""
        for attempt in (1, 2):
            connection = self._connect()
            try:
                return connection.execute(sql, tuple(parameters)).fetchall()
            except sqlite3.Error as error:
                if attempt == 2 or not _is_corrupt(error) or self.read_only:
                    raise
                self._move_aside(error)
        return []

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """The stored values of those keys that are present."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, Any] = {}
        with self._lock:
            self._connect()
            if not self._has_table:
                return found
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._execute(f"SELECT key, value FROM calls WHERE key IN ({marks})", chunk)
                found.update((key, json.loads(value)) for key, value in rows)
        return found

    def get(self, key: str) -> Any | None:
        return self.get_many([key]).get(key)

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serialisable) and commit at once; nothing when read-only."""
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        with self._lock:
            self._connect()
            if self.read_only:
                return
            self._execute(
                "INSERT OR REPLACE INTO calls (key, value, created) VALUES (?, ?, ?)",
                (key, text, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            self._connect()
            if not self._has_table:
                return 0
            return self._execute("SELECT COUNT(*) FROM calls")[0][0]

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
