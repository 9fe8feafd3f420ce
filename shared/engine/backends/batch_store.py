"""Where a batch round's id is kept: a small SQLite file (``judge-batches.sqlite3``) in the
calling judge's cache folder, keyed by a hash of the round's requests (:mod:`.batching`)."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

__all__ = ["STORE_FILE", "BatchStore"]

STORE_FILE = "judge-batches.sqlite3"


class BatchStore:
    """Batch ids by the hash of their requests, in a small SQLite file beside the call cache."""

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        from ..cache import default_cache_dir

        self.path = Path(directory) if directory else default_cache_dir()

    def _connect(self) -> sqlite3.Connection:
        self.path.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path / STORE_FILE, timeout=30)
        db.execute("CREATE TABLE IF NOT EXISTS batches (key TEXT PRIMARY KEY, provider TEXT, "
                   "batch_id TEXT, created REAL, token TEXT)")
        columns = {row[1] for row in db.execute("PRAGMA table_info(batches)")}
        if "token" not in columns:  # a store written before submissions carried a token
            db.execute("ALTER TABLE batches ADD COLUMN token TEXT")
        return db

    def get(self, key: str) -> tuple[str | None, str | None] | None:
        """``(batch_id, token)`` of the round ``key``; batch_id None while it is submitting."""
        with self._connect() as db:
            row = db.execute("SELECT batch_id, token FROM batches WHERE key = ?",
                             (key,)).fetchone()
        return (row[0], row[1]) if row else None

    def put(self, key: str, provider: str, batch_id: str | None, token: str | None) -> None:
        """Store the round ``key``: its batch id, or None while it is being submitted."""
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO batches (key, provider, batch_id, created, token) "
                       "VALUES (?, ?, ?, ?, ?)", (key, provider, batch_id, time.time(), token))

    def forget(self, key: str) -> None:
        with self._connect() as db:
            db.execute("DELETE FROM batches WHERE key = ?", (key,))
