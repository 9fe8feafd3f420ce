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
import warnings
from pathlib import Path

import pytest
from tmpfs import mounted_tmpfs

from shared.engine.cache import CACHE_ENV, CallCache, call_key, default_cache_dir, open_cache

REPO = Path(__file__).resolve().parents[2]

BASE = dict(
    operation="yes_no", kind="openai-compatible", endpoint="http://127.0.0.1:8000/v1", model="m",
    messages=[("user", "Is it?")], sampling={"temperature": 0.0, "seed": 0},
    prompt_id="p@1", extra={"top_k": 5},
)


def test_key_changes_with_every_part_and_is_stable():
    base = call_key(**BASE)
    assert len(base) == 64 and call_key(**BASE) == base
    variants = {
        "operation": "structured", "kind": "local", "endpoint": "http://127.0.0.1:8000/route/v1",
        "model": "m2",
        "messages": [("user", "Is it?"), ("assistant", "no")],
        "sampling": {"temperature": 0.0, "seed": 1}, "prompt_id": "p@2", "extra": {"top_k": 4},
    }
    for name, value in variants.items():
        assert call_key(**{**BASE, name: value}) != base, name
    # dict order does not matter
    assert call_key(**{**BASE, "sampling": {"seed": 0, "temperature": 0.0}}) == base
    # the same key in a fresh interpreter (no hash randomisation involved)
    code = f"from shared.engine.cache import call_key; print(call_key(**{BASE!r}))"
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
    from shared.engine.cache import CallCache
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


OPENER = textwrap.dedent("""
    import os, sys, time
    from shared.engine.cache import CallCache
    go = sys.argv[2]
    while not os.path.exists(go):
        time.sleep(0.001)
    cache = CallCache(sys.argv[1])
    for i in range(50):
        cache.put(f"{sys.argv[3]}-{i}", {"i": i})
    print(cache.read_only)
""")


def test_processes_creating_the_cache_together_all_store_their_answers(tmp_path):
    """Four processes open a cache file that does not exist yet at the same moment, many times
    over: SQLite refuses some of their set-ups at once (a lock, not a read-only file), and
    none may fall back to read-only and drop its answers (it did in about one round in five)."""
    for round_ in range(12):
        directory, go = tmp_path / f"cache{round_}", tmp_path / f"go{round_}"
        processes = [subprocess.Popen([sys.executable, "-c", OPENER, str(directory), str(go),
                                       f"p{n}"], cwd=REPO, stdout=subprocess.PIPE, text=True)
                     for n in range(4)]
        time.sleep(0.3)  # every process waits for the signal
        go.touch()
        read_only = [process.communicate(timeout=120)[0].strip() for process in processes]
        assert read_only == ["False"] * 4, round_
        assert len(CallCache(directory)) == 4 * 50, round_


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


# ------------------------------------------------------------------ a broken cache heals


def _filled(cache_dir: str, count: int = 300) -> Path:
    cache = CallCache(cache_dir)
    for i in range(count):
        cache.put(f"k{i}", {"text": "x" * 200, "i": i})
    cache.close()
    path = Path(cache_dir) / "judge-calls.sqlite3"
    assert not Path(f"{path}-wal").exists()  # checkpointed on close: the file holds it all
    return path


def _garbage(path: Path) -> None:
    path.write_bytes(b"this is not an SQLite database\n" * 100)


def _truncated(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


@pytest.mark.parametrize("damage", [_garbage, _truncated])
def test_a_corrupt_cache_file_is_moved_aside_and_a_fresh_one_starts(cache_dir, damage):
    path = _filled(cache_dir)
    damage(path)
    damaged = path.read_bytes()
    cache = CallCache(cache_dir)
    with pytest.warns(UserWarning, match=r"not a valid database.*moved to .*broken-"):
        found = cache.get_many([f"k{i}" for i in range(300)])
    assert found == {}
    moved = list(Path(cache_dir).glob("judge-calls.sqlite3.broken-*"))
    assert len([p for p in moved if not p.name.endswith(("-wal", "-shm"))]) == 1
    assert [p for p in moved if p.read_bytes() == damaged], "the broken file was not kept"
    # a fresh cache works, in this object and in a new one (a later run)
    cache.put("new", {"ok": True})
    cache.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: healed for good
        again = CallCache(cache_dir)
        assert again.get("new") == {"ok": True} and len(again) == 1
        again.close()


@pytest.fixture()
def read_only_cache(tmp_path: Path):
    """A populated cache folder on a real tmpfs remounted read-only (root only): writes fail
    with EROFS even for root, unlike chmod."""
    with mounted_tmpfs(tmp_path / "ro", "4m") as mount_point:
        folder = mount_point / "cache"
        _filled(str(folder), 20)
        subprocess.run(["mount", "-o", "remount,ro", str(mount_point)], check=True)
        yield folder


def test_a_read_only_cache_serves_hits_and_stores_nothing(read_only_cache: Path):
    with pytest.raises(OSError):  # really read-only, even for root
        (read_only_cache / "probe").write_text("x")
    cache = CallCache(read_only_cache)
    with pytest.warns(UserWarning, match="read-only"):
        found = cache.get_many(["k0", "k19", "missing"])
    assert found == {"k0": {"text": "x" * 200, "i": 0}, "k19": {"text": "x" * 200, "i": 19}}
    assert cache.read_only
    cache.put("new", {"i": -1})  # no error: nothing is stored
    assert cache.get("new") is None and len(cache) == 20
    cache.close()


def test_the_key_holds_the_whole_endpoint(cache_dir):
    """Two routes on one host and port are two judges: the second is not served from the first's
    answers (the proxy answers itself on any path: only whether a request is sent matters)."""
    import evaluate
    from faultproxy import FaultProxy

    from shared.kit.registry import metric_path

    metric = evaluate.load(metric_path("l3score"), experiment_id=f"cache-key-{os.getpid()}")
    inputs = {"questions": ["Is it?"], "predictions": ["yes"], "references": ["yes"]}
    with FaultProxy(None, default="synthetic") as proxy:
        root = proxy.url.rsplit("/v1", 1)[0]

        def run(base_url: str) -> dict:
            return metric.compute(**inputs, provider="openai-compatible", model="same-name",
                                  base_url=base_url, cache_dir=cache_dir, show_progress=False)

        first = run(f"{root}/v1")
        again = run(f"{root}/v1/")  # the same endpoint, written differently
        other = run(f"{root}/other-route/v1")
    assert first["usage"]["calls"] == 1 and first["usage"]["cache_hits"] == 0
    assert again["usage"]["calls"] == 0 and again["usage"]["cache_hits"] == 1
    assert other["usage"]["calls"] == 1 and other["usage"]["cache_hits"] == 0
    assert [s.path for s in proxy.seen] == ["/v1/chat/completions",
                                           "/other-route/v1/chat/completions"]


def test_a_healed_cache_is_not_moved_aside_again_by_an_older_connection(cache_dir):
    """Two users of one cache: the first to meet the corruption moves the file aside; the other,
    whose connection still points at the broken file, then uses the fresh file instead of
    moving it aside too."""
    path = _filled(cache_dir, 50)
    older = CallCache(cache_dir)
    assert older.get("k1") == {"text": "x" * 200, "i": 1}  # its connection is open
    with path.open("r+b") as handle:  # corrupt in place: the open connection sees it too
        handle.seek(0)
        handle.write(b"garbage " * 64)
    healer = CallCache(cache_dir)
    with pytest.warns(UserWarning, match="moved to"):
        assert healer.get("k1") is None
    healer.put("fresh", {"ok": 1})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert older.get_many(["fresh", "k2"]) == {"fresh": {"ok": 1}}
    broken = [p for p in Path(cache_dir).glob("judge-calls.sqlite3.broken-*")
              if not p.name.endswith(("-wal", "-shm"))]
    assert len(broken) == 1, broken
    older.close()
    healer.close()
