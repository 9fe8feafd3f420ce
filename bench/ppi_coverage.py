"""Does the prediction-powered 95% interval keep its promise at few labels? (`make
calibration-curve` runs this too.)

A seeded simulation, vectorised with numpy: per point, ``--splits`` independent samples of
``n`` labelled and 1,000 unlabelled rows. Labels are 0/1 with P(1) = ``p`` (or graded: 0, 0.25,
.., 1, skewed low); the judge is biased and noisy (its score is 0.35 + 0.35 * label + normal
noise of sd 0.25, cut to [0, 1]: too high on the 0s, too low on the 1s). Per split it computes
the old interval (the reference implementation's: in-sample power tuning, the variance over n,
the normal quantile) and the current ``shared.analysis.ppi.ppi_intervals``, and reports how
often each covered the true mean and the mean width of each.

    .venv/bin/python bench/ppi_coverage.py [--splits N] [--seed S]
"""

from __future__ import annotations

import argparse

import numpy as np
from _repo import REPO  # noqa: F401  (puts the repository first on the path)
from scipy.stats import norm

from shared.analysis.ppi import ppi_intervals

UNLABELLED = 1000
SIZES = (10, 30, 60, 100, 400)
CASES = (("0/1 labels, p = 0.3", "binary", 0.3), ("0/1 labels, p = 0.5", "binary", 0.5),
         ("0/1 labels, p = 0.03", "binary", 0.03), ("0/1 labels, p = 0.97", "binary", 0.97),
         ("graded labels (mean 0.2)", "graded", 0.0))
GRADES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
GRADE_WEIGHTS = np.array([0.45, 0.25, 0.15, 0.1, 0.05])  # mean 0.2


def sample(kind: str, p: float, n: int, splits: int, rng: np.random.Generator
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Labelled scores, labels, unlabelled scores (``(splits, n)``, ``(splits, n)``,
    ``(splits, 1000)``) and the true mean label."""
    shape = (splits, n + UNLABELLED)
    if kind == "binary":
        y, truth = (rng.random(shape) < p).astype(np.float64), p
    else:
        y, truth = rng.choice(GRADES, size=shape, p=GRADE_WEIGHTS), float(GRADES @ GRADE_WEIGHTS)
    f = np.clip(0.35 + 0.35 * y + rng.normal(0.0, 0.25, shape), 0.0, 1.0)
    return f[:, :n], y[:, :n], f[:, n:], truth


def old_interval(f: np.ndarray, y: np.ndarray, f_u: np.ndarray, alpha: float = 0.05
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The interval before (``ppi_py.ppi_mean_ci`` with ``lam=None``): in-sample ``lam``,
    variances over n, the normal quantile."""
    n, big_n = y.shape[1], f_u.shape[1]
    covariance = ((y - y.mean(1, keepdims=True)) * (f - f.mean(1, keepdims=True))).mean(1)
    spread = np.concatenate([f, f_u], axis=1).var(axis=1, ddof=1)
    lam = np.clip(np.divide(covariance, (1 + n / big_n) * spread, out=np.zeros_like(spread),
                            where=spread > 0), 0, 1)
    d = y - lam[:, None] * f
    value = lam * f_u.mean(1) + d.mean(1)
    se = np.sqrt(lam ** 2 * f_u.var(1) / big_n + d.var(1) / n)
    z = norm.ppf(1 - alpha / 2)
    return value - z * se, value + z * se


def measure(splits: int, seed: int) -> list[dict]:
    found = []
    for name, kind, p in CASES:
        for n in SIZES:
            f, y, f_u, truth = sample(kind, p, n, splits, np.random.default_rng([seed, n,
                                                                                 len(found)]))
            old = old_interval(f, y, f_u)
            new = ppi_intervals(f, y, f_u)
            found.append({"case": name, "labels": n,
                          "old_coverage": float(np.mean((old[0] <= truth) & (truth <= old[1]))),
                          "new_coverage": float(np.mean((new["low"] <= truth)
                                                        & (truth <= new["high"]))),
                          "old_width": float(np.mean(old[1] - old[0])),
                          "new_width": float(np.mean(new["high"] - new["low"]))})
    return found


def table(found: list[dict], splits: int, seed: int) -> str:
    lines = [f"Measured by `make calibration-curve` (bench/ppi_coverage.py): {splits} seeded "
             f"splits per point (seed {seed}), {UNLABELLED} unlabelled rows, a biased noisy "
             "judge (score 0.35 + 0.35 x label + noise of sd 0.25, cut to [0, 1]); coverage of "
             "the nominal 95% interval (binomial standard error about 0.005), mean width in "
             "brackets.", "",
             "| labels | " + " | ".join(name for name, _, _ in CASES) + " |",
             "|---:|" + "---|" * len(CASES)]
    for n in SIZES:
        cells = [str(n)]
        for name, _, _ in CASES:
            point = next(r for r in found if r["case"] == name and r["labels"] == n)
            cells.append(f"old {point['old_coverage']:.3f} ({point['old_width']:.3f}); "
                         f"**new {point['new_coverage']:.3f}** ({point['new_width']:.3f})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(table(measure(args.splits, args.seed), args.splits, args.seed))


if __name__ == "__main__":
    main()
