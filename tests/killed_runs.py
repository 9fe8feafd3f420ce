"""A `score` job killed with SIGKILL half-way through its judge calls, then run again: the
rerun must send only the calls whose answers the call cache did not get. Shared by the
one-process and the Ray engine's tests; the judge is the real llama.cpp server behind a
FaultProxy that answers the first calls and holds the rest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from faultproxy import FaultProxy

from shared.engine.cache import CallCache

REPO = Path(__file__).resolve().parents[1]

# six sums, every other one answered wrong: l3score has something to judge on each row
SUM_ROWS = [{"question": f"What is {a} plus {b}?", "prediction": str(a + b + i % 2),
             "reference": str(a + b)} for i, (a, b) in enumerate(
                 [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10), (11, 12)])]


def completions(proxy: FaultProxy) -> int:
    """The chat-completion requests the proxy has seen."""
    return sum(s.path.endswith("/chat/completions") for s in proxy.seen)


def cached(cache_dir: str) -> int:
    """The answers in the call cache at ``cache_dir``."""
    cache = CallCache(cache_dir)
    try:
        return len(cache)
    finally:
        cache.close()


def kill_half_way_then_rerun(source: Path, out: Path, server: str, cache_dir: str,
                             engine_args: list[str], answered: int = 2
                             ) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``score SOURCE --metric l3score --out OUT`` (plus ``engine_args``) against
    ``server``; SIGKILL it once ``answered`` answers are cached and later requests are in
    flight (nothing written then); rerun it. Returns the rerun and the requests it sent. One
    proxy for both runs: the call cache key includes the server's address."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "JUDGE_METRICS_CACHE_DIR": cache_dir}

    def command(url: str) -> list[str]:
        return [sys.executable, "-m", "judge_metrics", "score", str(source), "--metric", "l3score",
                "--out", str(out), "--provider", "openai-compatible", "--base-url", url,
                "--model", "smollm2", "--max-concurrency", "2", "--timeout", "600", "--quiet",
                *engine_args]

    with FaultProxy(server, schedule=["pass"] * answered, default="hang") as proxy:
        process = subprocess.Popen(command(proxy.url), cwd=REPO, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 300  # generous: a loaded machine starts slowly
            while time.monotonic() < deadline and not (
                    completions(proxy) > answered and cached(cache_dir) >= answered):
                assert process.poll() is None, process.communicate()
                time.sleep(0.1)
            assert cached(cache_dir) == answered, "the job never got half-way"
        finally:
            process.send_signal(signal.SIGKILL)
            process.communicate(timeout=30)
        assert process.returncode == -signal.SIGKILL
        assert not out.exists() and not list(out.parent.glob(f".{out.name}*"))

        proxy.default = "pass"
        before = completions(proxy)
        rerun = subprocess.run(command(proxy.url), cwd=REPO, env=env, capture_output=True,
                               text=True, timeout=600)
        return rerun, completions(proxy) - before
