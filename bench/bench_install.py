"""Install footprint against the peers: writes bench/INSTALL.md (``make bench-install``).

Each candidate (this package's core install and its ``[local]`` extra, from a wheel built here;
deepeval and ragas from the index) is installed into a fresh venv in the same run on the same
machine, one after another, with pip's cache as it is (every candidate gets the same cache, so a
package downloaded once comes from the cache for all): the wall time of ``pip install``, the
venv's installed size (less an empty venv's), the number of distributions, and the median wall
time of ``python -c "import X"`` over several runs (a fresh process each, bytecode written by
the first). Nothing here is fitted: the numbers are what the commands took.

    .venv/bin/python bench/bench_install.py [--runs N] [--out bench/INSTALL.md]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEERS = {"deepeval": "deepeval==4.3.1", "ragas": "ragas==0.4.3"}
# the floor of any evaluate metric module: evaluate and what it brings (datasets, pyarrow, pandas)
FLOOR = ("evaluate", "evaluate==0.4.6")


@dataclass
class Candidate:
    name: str
    requirement: str
    entry: str  # the import a user's first line makes


@dataclass
class Footprint:
    candidate: Candidate
    seconds: float | None
    megabytes: float | None
    distributions: int | None
    import_seconds: float | None
    note: str = ""


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def fresh_venv(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    return folder / "bin" / "python"


def measure(candidate: Candidate, work: Path, baseline: int, runs: int) -> Footprint:
    venv = work / candidate.name.replace(" ", "_").replace("[", "_").replace("]", "")
    python = fresh_venv(venv)
    start = time.perf_counter()
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--disable-pip-version-check", candidate.requirement],
        capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if installed.returncode != 0:
        reason = (installed.stderr.strip().splitlines() or ["pip failed"])[-1][:160]
        return Footprint(candidate, None, None, None, None, f"install failed: {reason}")
    listed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "list",
                             "--format=freeze", "--disable-pip-version-check"],
                            capture_output=True, text=True)
    distributions = len([line for line in listed.stdout.splitlines() if "==" in line])
    megabytes = (folder_bytes(venv) - baseline) / 1e6
    timings = []
    for _ in range(runs + 1):  # the first writes the bytecode: not counted
        start = time.perf_counter()
        imported = subprocess.run([str(python), "-c", f"import {candidate.entry}"],
                                  capture_output=True, text=True, cwd=work)
        timings.append(time.perf_counter() - start)
        if imported.returncode != 0:
            reason = (imported.stderr.strip().splitlines() or ["import failed"])[-1][:160]
            return Footprint(candidate, seconds, megabytes, distributions, None,
                             f"import failed: {reason}")
    shutil.rmtree(venv, ignore_errors=True)
    return Footprint(candidate, seconds, megabytes, distributions, statistics.median(timings[1:]))


def build_wheel(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir",
                    str(out), str(ROOT)], check=True, capture_output=True)
    return next(out.glob("judge_metrics-*.whl"))


def cell(value: float | int | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.{digits}f}"


def report(rows: list[Footprint], runs: int) -> str:
    core = next(r for r in rows if r.candidate.name == "judge-metrics")
    peers = [r for r in rows if r.candidate.name in PEERS and r.megabytes is not None]
    lines = [
        "# Install footprint: judge-metrics against DeepEval and RAGAS",
        "",
        "Written by `make bench-install` (bench/bench_install.py); do not edit by hand.",
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, each candidate into a fresh "
        "venv one after another in the same run, pip's cache shared by all (so download time "
        "is mostly out of it: what is compared is resolving, unpacking and the size).",
        "",
        "| install | pip install (s) | installed size (MB) | distributions | "
        f"`import` (s, median of {runs}) | note |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(f"| `pip install {r.candidate.name}` | "
                     f"{cell(r.seconds)} | {cell(r.megabytes)} | {cell(r.distributions)} | "
                     f"{cell(r.import_seconds, 2)} | {r.note} |")
    if peers and core.megabytes is not None:
        smaller = min(peers, key=lambda r: r.megabytes or 0)
        size_ok = core.megabytes <= (smaller.megabytes or 0)
        time_ok = core.seconds is not None and core.seconds <= (smaller.seconds or 0)
        lines += ["", f"Goal: the core install no larger and no slower than the smaller peer "
                  f"({smaller.candidate.name}): size {'met' if size_ok else 'NOT met'} "
                  f"({core.megabytes:,.0f} MB against {smaller.megabytes:,.0f} MB), install time "
                  f"{'met' if time_ok else 'NOT met'} ({core.seconds:,.0f} s against "
                  f"{smaller.seconds:,.0f} s)."]
    floor = next((r for r in rows if r.candidate.name == FLOOR[0]), None)
    if floor is not None and floor.megabytes is not None and core.megabytes is not None:
        lines += ["", f"`evaluate` alone, the package every metric module here subclasses (the "
                  f"design's binding dependency), installs {floor.megabytes:,.0f} MB "
                  f"({floor.distributions} distributions: datasets, pyarrow, pandas, numpy, "
                  f"huggingface_hub, aiohttp ...): {floor.megabytes / core.megabytes:.0%} of the "
                  "core install. DeepEval depends on none of them, so no evaluate-based package "
                  "can be as small; the rest of the core is scipy (intervals, paired tests), "
                  "scikit-learn (calibrate, align), matplotlib (the reports' plots), nltk "
                  "(BLEU's smoothing), openai and rapidfuzz."]
    lines += ["", "The `[local]` row adds torch, transformers, sentence-transformers and the "
              "embedding model's wheel, resolved as pip does with no other setting: on Linux "
              "that is torch's default build with its CUDA libraries (nvidia-*, several GB), "
              "and xgrammar brings triton (GPU kernels, about 1 GB); a CPU machine that installs "
              "torch's CPU build first skips most of that (docs/INSTALL.md). The judge's GGUF is "
              "not in it: it is fetched once at first use.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "INSTALL.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-install-") as folder:
        work = Path(folder)
        wheel = build_wheel(work / "dist")
        baseline = folder_bytes(fresh_venv(work / "empty").parent.parent)
        candidates = [Candidate("judge-metrics", str(wheel), "judge_metrics"),
                      Candidate("judge-metrics[local]", f"{wheel}[local]", "judge_metrics"),
                      *(Candidate(name, requirement, name) for name, requirement in PEERS.items()),
                      Candidate(*FLOOR, FLOOR[0])]
        rows = []
        for candidate in candidates:
            print(f"installing {candidate.name} ...", flush=True)
            rows.append(measure(candidate, work, baseline, args.runs))
    args.out.write_text(report(rows, args.runs))
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
