"""How often does the interval of a mean score cover the true mean? The old gate interval (a
seeded percentile bootstrap, ``stats.bootstrap_ci``, 1,000 resamples, seed 0) against the one
the gates, the HTML report and ``assert_metric`` now share (``stats.t_wilson_interval``).

0/1 scores with P(1) = p: the coverage is exact, summed over the n + 1 possible counts of ones
weighted by their binomial probabilities (the bootstrap's interval for each count is the one
its seed gives, so that too is exact for the gate as it ran). Bounded continuous scores (Beta
draws: a symmetric one, and one skewed to the top as judge scores are): ``--trials`` seeded
samples per n. Each cell: coverage of the nominal 95% interval, mean width in brackets.

    .venv/bin/python bench/interval_coverage.py            # print the table
    .venv/bin/python bench/interval_coverage.py --write    # and put it in docs/GATES.md

tests/shared/test_threshold_interval.py checks the docs' table is this script's output.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.stats import binom

sys.path.insert(0, str(Path(__file__).resolve().parent))  # loaded by the tests too
from _repo import REPO  # noqa: E402, F401  (puts the repository first on the path)

from shared.kit import stats  # noqa: E402

SIZES = (5, 10, 30, 100)
BERNOULLI = (0.5, 0.9, 0.99, 1.0)
BETAS = ((2.0, 2.0), (9.0, 1.0))  # Beta(a, b): mean 0.5 symmetric; mean 0.9 skewed to 1
CONFIDENCE = 0.95
TRIALS = 1000
SEED = 0
DOC = Path(__file__).resolve().parent.parent / "docs" / "GATES.md"
START, END = "<!-- coverage:start -->", "<!-- coverage:end -->"
Interval = Callable[[np.ndarray], tuple[float, float]]
METHODS: dict[str, Interval] = {
    "bootstrap": lambda v: stats.bootstrap_ci(v, confidence=CONFIDENCE),
    "t-Wilson": lambda v: stats.t_wilson_interval(v, confidence=CONFIDENCE),
}


def bernoulli_cell(interval: Interval, n: int, p: float) -> tuple[float, float]:
    """Exact coverage of ``p`` and mean width over the binomial counts of ones."""
    covered = width = 0.0
    for k in range(n + 1):
        weight = float(binom.pmf(k, n, p))
        if weight == 0.0:
            continue
        low, high = interval(np.repeat([1.0, 0.0], [k, n - k]))
        covered += weight * (low <= p <= high)
        width += weight * (high - low)
    return covered, width


def beta_cell(interval: Interval, n: int, a: float, b: float, trials: int,
              seed: int = SEED) -> tuple[float, float]:
    """Simulated coverage of the Beta(a, b) mean and mean width over ``trials`` samples."""
    samples = np.random.default_rng(seed).beta(a, b, size=(trials, n))
    truth = a / (a + b)
    found = np.array([interval(sample) for sample in samples])
    return (float(np.mean((found[:, 0] <= truth) & (truth <= found[:, 1]))),
            float(np.mean(found[:, 1] - found[:, 0])))


def table(trials: int = TRIALS) -> list[dict[str, object]]:
    """One row per (scores, n): each method's (coverage, mean width)."""
    rows: list[dict[str, object]] = []
    for p in BERNOULLI:
        for n in SIZES:
            rows.append({"scores": f"0/1, p = {p:g}", "n": n, **{
                name: bernoulli_cell(method, n, p) for name, method in METHODS.items()}})
    for a, b in BETAS:
        for n in SIZES:
            rows.append({"scores": f"Beta({a:g}, {b:g}), mean {a / (a + b):g}", "n": n, **{
                name: beta_cell(method, n, a, b, trials) for name, method in METHODS.items()}})
    return rows


def markdown(rows: list[dict[str, object]], trials: int = TRIALS) -> str:
    lines = [f"Coverage of the true mean by the nominal {CONFIDENCE:.0%} interval (mean width in "
             f"brackets); 0/1 scores exact, Beta scores {trials:,} seeded samples (seed {SEED}, "
             "standard error about 0.007). Regenerate: "
             "`.venv/bin/python bench/interval_coverage.py --write`.", "",
             "| scores | n | " + " | ".join(f"{name} (old gates)" if name == "bootstrap"
                                           else f"{name} (now)" for name in METHODS) + " |",
             "|---|---:|" + "---:|" * len(METHODS)]
    for row in rows:
        cells = [f"{row[name][0]:.3f} ({row[name][1]:.3f})" for name in METHODS]
        lines.append(f"| {row['scores']} | {row['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_doc(text: str, path: Path = DOC) -> None:
    doc = path.read_text(encoding="utf-8")
    block = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not block.search(doc):
        raise SystemExit(f"{path}: no {START} ... {END} block to fill")
    path.write_text(block.sub(lambda _: f"{START}\n{text}\n{END}", doc), encoding="utf-8")


def doc_block(path: Path = DOC) -> str:
    """The table as docs/GATES.md holds it."""
    doc = path.read_text(encoding="utf-8")
    return doc.split(START, 1)[1].split(END, 1)[0].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=TRIALS)
    parser.add_argument("--write", action="store_true", help="put the table in docs/GATES.md")
    args = parser.parse_args()
    text = markdown(table(args.trials), args.trials)
    print(text)
    if args.write:
        write_doc(text)
        print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
