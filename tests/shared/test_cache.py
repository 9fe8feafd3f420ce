"""The persistent call cache: a real SQLite file, shared by threads and processes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from shared.cache import CACHE_ENV, CallCache, call_key, default_cache_dir, open_cache

REPO = Path(__file__).resolve().parents[2]

BASE = dict(
    operation="yes_no", kind="openai-compatible", host="127.0.0.1:8000", model="m",
    messages=[("user", "Is it?")], sampling={"temperature": 0.0, "seed": 0},
    prompt_id="p@1", extra={"top_k": 5},
)


def test_key_changes_with_every_part_and_is_stable():
    base = call_key(**BASE)
    assert len(base) == 64 and call_key(**BASE) == base
    variants = {
        "operation": "structured", "kind": "local", "host": "example.com", "model": "m2",
        "messages": [("user", "Is it?"), ("assistant", "no")],
        "sampling": {"temperature": 0.0, "seed": 1}, "prompt_id": "p@2", "extra": {"top_k": 4},
    }
    for name, value in variants.items():
        assert call_key(**{**BASE, name: value}) != base, name
    # dict order does not matter
    assert call_key(**{**BASE, "sampling": {"seed": 0, "temperature": 0.0}}) == base
    # the same key in a fresh interpreter (no hash randomisation involved)
    code = f"from shared.cache import call_key; print(call_key(**{BASE!r}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, check=True)
    assert out.stdout.strip() == base


def test_roundtrip_persists_in_wal_mode(cache_dir):
    cache = CallCache(cache_dir)
    cache.put("a", {"value": [1, "x"]})
    cache.put("b", {"value": None})
    cache.close()
    reopened = CallCache(cache_dir)
    assert reopened.get_many(["a", "b", "c"]) == {"a": {"value": [1, "x"]}, "b": {"value": None}}
    assert reopened.get("c") is None
    assert len(reopened) == 2
    with sqlite3.connect(reopened.path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reopened.close()


def test_nan_is_refused(cache_dir):
    cache = CallCache(cache_dir)
    with pytest.raises(ValueError):
        cache.put("k", {"value": float("nan")})
    assert len(cache) == 0


def test_default_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    assert open_cache(None).directory == (tmp_path / "c").resolve()
    monkeypatch.delenv(CACHE_ENV)
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert default_cache_dir() == tmp_path / "xdg" / "judge-metrics"


WRITER = textwrap.dedent("""
    import sys
    from shared.cache import CallCache
    cache = CallCache(sys.argv[1])
    tag, count = sys.argv[2], int(sys.argv[3])
    for i in range(count):
        cache.put(f"{tag}-{i}", {"i": i})
        print(i, flush=True)
    if len(sys.argv) > 4:
        import time; time.sleep(60)
""")


def test_threads_and_processes_write_together(cache_dir):
    processes = [
        subprocess.Popen([sys.executable, "-c", WRITER, cache_dir, f"p{n}", "40"], cwd=REPO,
                         stdout=subprocess.DEVNULL)
        for n in range(2)
    ]
    cache = CallCache(cache_dir)

    def write(tag: str) -> None:
        for i in range(40):
            cache.put(f"{tag}-{i}", {"i": i})

    threads = [threading.Thread(target=write, args=(f"t{n}",)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for process in processes:
        assert process.wait(timeout=60) == 0
    assert len(cache) == 5 * 40
    assert cache.get("p1-39") == {"i": 39}


def test_entries_survive_kill_9(cache_dir):
    process = subprocess.Popen([sys.executable, "-c", WRITER, cache_dir, "k", "5", "hang"],
                               cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(5):
            assert process.stdout.readline()
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    time.sleep(0.1)
    assert CallCache(cache_dir).get_many([f"k-{i}" for i in range(5)]) == {
        f"k-{i}": {"i": i} for i in range(5)
    }
