"""Under load: the same rows through the same rate-limited judge, by this project, DeepEval and
RAGAS; writes bench/LOAD.md (``make bench-load``).

The judge is tests/fakes/rate_limited.py: OpenAI-compatible, a token bucket (``rate`` requests a
second, ``burst``, ``latency`` per answer) that refuses with HTTP 429, ``Retry-After`` and
OpenAI's ``x-ratelimit-*`` headers (the last load without them: 429 and ``Retry-After`` only).
Each load runs the three sides at once, each against its own fake (same settings), each in its
own process: ours is ``python -m judge_metrics score --metric l3score`` with its defaults (16
requests in flight); the peers run through bench/load_peers.py under .venv-agreement's Python,
with their own defaults. Every side sends one judge request per row. Figures per side: rows
scored and lost (no number), requests refused (429) and answered, and the wall time the judge
was busy with the side (from its first request to its last answer; interpreter and import
start-up left out) against the bound, rows / rate: no client can be faster than the limit
allows (the burst aside). A side still running at ``CAP`` x the bound + :data:`START_UP`
seconds is stopped and its row says so.

``python bench/bench_load.py`` (``BENCH_LOAD_ONLY=ours`` for one side).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO / "tests"))
from fakes.rate_limited import RateLimitedFake  # noqa: E402  (tests/fakes/rate_limited.py)

PEER_PYTHON = REPO / ".venv-agreement" / "bin" / "python"
#: (rate per second, burst, latency in seconds, rows, whether the judge announces its limit in
#: x-ratelimit-* headers; without them it says only 429 and Retry-After)
LOADS = [(3.0, 3, 0.5, 300, True), (10.0, 10, 0.2, 300, True), (2.0, 1, 1.5, 120, True),
         (3.0, 3, 0.5, 150, False)]
Load = tuple[float, int, float, int, bool]
SIDES = ("ours", "DeepEval", "RAGAS")
CAP = 2.5
START_UP = 90.0
MODEL = "rate-limited"
ONLY = [s for s in os.environ.get("BENCH_LOAD_ONLY", "").split(",") if s]


def rows(n: int) -> list[dict[str, str]]:
    return [{"question": f"Question {i}: what is {i} plus {i}?", "prediction": str(2 * i),
             "reference": str(2 * i + i % 2)} for i in range(n)]


def run_ours(url: str, data: list[dict[str, str]], folder: Path, limit: float) -> dict[str, Any]:
    source, out = folder / "rows.jsonl", folder / "scored.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    command = [sys.executable, "-m", "judge_metrics", "score", "--metric", "l3score", str(source),
               "--out", str(out), "--provider", "openai-compatible", "--base-url", url,
               "--model", MODEL, "--cache-dir", str(folder / "cache"), "--quiet"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=limit,
                          check=False)
    scored = 0
    if out.exists():
        for line in out.read_text(encoding="utf-8").splitlines():
            scored += isinstance(json.loads(line).get("l3score"), (int, float))
    from importlib.metadata import version

    report = {"version": f"judge-metrics {version('judge-metrics')}", "scored": scored}
    if done.returncode not in (0, 3):  # 3: scored, with unmeasured rows
        report["error"] = f"exit {done.returncode}: {done.stderr.strip()[-200:]}"
    return report


def run_peer(peer: str, url: str, data: list[dict[str, str]], folder: Path,
             limit: float) -> dict[str, Any]:
    if not PEER_PYTHON.exists():
        return {"scored": 0, "error": ".venv-agreement is missing (make bench-load builds it)"}
    job, out = folder / "job.json", folder / "out.json"
    job.write_text(json.dumps({"peer": peer, "base_url": url, "model": MODEL, "rows": data}),
                   encoding="utf-8")
    subprocess.run([str(PEER_PYTHON), str(BENCH / "load_peers.py"), str(job), str(out)],
                   cwd=folder, capture_output=True, text=True, timeout=limit, check=False)
    if not out.exists():
        return {"scored": 0, "error": "the peer wrote no report"}
    report = json.loads(out.read_text(encoding="utf-8"))
    report["version"] = f"{peer.lower()} {report.get('version', '?')}"
    return report


def measure(load: Load) -> dict[str, dict[str, Any]]:
    rate, burst, latency, n, announce = load
    data, bound = rows(n), n / rate
    limit = CAP * bound + START_UP
    results: dict[str, dict[str, Any]] = {}

    def side(name: str) -> None:
        with tempfile.TemporaryDirectory() as tmp, \
                RateLimitedFake(rate=rate, burst=burst, latency=latency,
                                announce=announce) as fake:
            started = time.monotonic()
            try:
                if name == "ours":
                    report = run_ours(fake.url, data, Path(tmp), limit)
                else:
                    report = run_peer(name, fake.url, data, Path(tmp), limit)
            except subprocess.TimeoutExpired:
                report = {"scored": 0, "error": f"stopped after {limit:.0f} s"}
            report["process_seconds"] = time.monotonic() - started
            report.update(fake.stats())
        report["lost"] = n - report["scored"]
        results[name] = report

    threads = [threading.Thread(target=side, args=(name,)) for name in SIDES
               if not ONLY or name in ONLY]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def table(load: Load, results: dict[str, dict[str, Any]]) -> list[str]:
    rate, burst, latency, n, announce = load
    bound = n / rate
    says = "" if announce else ", no x-ratelimit-* headers (429 and Retry-After only)"
    lines = [f"### {rate:g} requests/s, burst {burst}, {latency:g} s latency{says}: {n} rows, "
             f"bound {bound:.0f} s", "",
             "| side | rows scored | rows lost | refused (429) | answered | judge busy (s) | "
             "x bound | note |", "|---|---|---|---|---|---|---|---|"]
    for name in SIDES:
        r = results.get(name)
        if r is None:
            continue
        ratio = r["busy"] / bound if r["scored"] else float("nan")
        lines.append(f"| {r.get('version', name)} | {r['scored']} | {r['lost']} | "
                     f"{r['refused']} | {r['answered']} | {r['busy']:.1f} | {ratio:.2f} | "
                     f"{r.get('error', '')} |")
    return [*lines, ""]


INTRO = """# Under load: a rate-limited judge

Written by `make bench-load` (bench/bench_load.py). The same rows, through the same
rate-limited OpenAI-compatible judge (tests/fakes/rate_limited.py: a token bucket that answers
429 with `Retry-After` and OpenAI's `x-ratelimit-*` headers, or in the last load with
`Retry-After` alone), by this project (`judge-metrics score --metric l3score`, defaults: 16
requests in flight, its rate limiter), DeepEval (`deepeval.evaluate`, G-Eval with fixed steps,
`LocalModel`) and RAGAS (`ragas.evaluate`, `AspectCritic`, `ChatOpenAI`), each with its
defaults and one judge request per row (bench/load_peers.py). The three sides of a load run at
once, each against its own copy of the judge. The judge answers after its latency with a fixed
verdict (no model runs): the figures measure the clients' handling of the limit, not a model.

- **rows lost**: rows without a score at the end of the run.
- **refused (429)**: requests the judge refused; **answered**: requests it answered.
- **judge busy**: seconds from the side's first request to its last answer (start-up left out);
  **x bound**: that over the bound, rows / rate (the fastest any client can be, the burst
  aside). The goal: 0 rows lost, at most 1.15x the bound, fewer refusals than any peer. A side
  that lost rows can finish under the bound: the rows it gave up cost no wait.
"""


def main() -> None:
    sections = [INTRO]
    for load in LOADS:
        results = measure(load)
        lines = table(load, results)
        print("\n".join(lines), flush=True)
        sections.append("\n".join(lines))
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    sections.append(f"Measured {stamp} on {os.cpu_count()} cores (shared with other work).\n")
    (BENCH / "LOAD.md").write_text("\n".join(sections), encoding="utf-8")


if __name__ == "__main__":
    main()
