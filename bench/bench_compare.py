"""`compare` on 100k paired rows x 3 score columns with 2,000 paired-bootstrap resamples.

Scores: a 0/1 column (accuracy-like), a graded column with few values (k/m fractions, as the
judge metrics give) and a continuous one (rouge-like). Ours: ``shared.compare`` on two
DataFrames, end to end (pairing by id, the three bootstrap intervals, the paired tests, Holm).
Reference: ``scipy.stats.bootstrap`` (paired, percentile, ``batch`` bounding its memory) for the
three delta intervals alone, same data, same resample count. After timing, each of our intervals
must lie within Monte-Carlo error of scipy's (asserted). Memory: the peak traced by tracemalloc
for 500 and for 2,000 resamples (flat means the same). And the HTML report of the 100k pairs
(row table sampled to 2,000 rows): time and file size.
"""

from __future__ import annotations

import tempfile
import time
import tracemalloc
from pathlib import Path

import _repo  # noqa: F401  (makes `shared` importable)
import numpy as np
from _timing import alternate, row

N = 100_000
RESAMPLES = 2000
COLUMNS = ("accuracy", "faithfulness", "rouge1")


def runs(n: int = N, seed: int = 0) -> tuple[object, object]:
    import pandas as pd

    rng = np.random.default_rng(seed)
    ids = [f"q{i}" for i in range(n)]
    frames = []
    for shift in (0.0, 0.02):
        frames.append(pd.DataFrame({
            "id": ids,
            "accuracy": (rng.random(n) < 0.6 + shift).astype(float),
            "faithfulness": rng.integers(0, 5, n) / 4 + 0 * shift,
            "rouge1": np.clip(rng.normal(0.5 + shift, 0.2, n), 0, 1),
        }))
    frames[1]["faithfulness"] = np.clip(frames[0]["faithfulness"]
                                        + rng.choice([-0.25, 0, 0, 0.25], n), 0, 1)
    return frames[0], frames[1]


def main() -> list[dict]:
    import scipy.stats as sps

    from shared import compare, stats
    from shared.analysis.report import write_compare_html

    a, b = runs()
    result = {}

    def ours() -> None:
        result["report"] = compare(a, b, n_resamples=RESAMPLES, seed=0)

    def reference() -> None:
        result["scipy"] = [sps.bootstrap(
            (a[c].to_numpy(), b[c].to_numpy()), lambda x, y, axis: np.mean(y - x, axis=axis),
            paired=True, vectorized=True, n_resamples=RESAMPLES, method="percentile",
            batch=40, rng=np.random.default_rng(1)).confidence_interval for c in COLUMNS]

    compare(a.head(1000), b.head(1000), n_resamples=10)  # imports (scipy) untimed
    mine, theirs = alternate(ours, reference, repeats=2)
    report = result["report"]
    for c, interval in zip(COLUMNS, result["scipy"], strict=True):
        column = report.column(c)
        width = interval.high - interval.low
        assert abs(column.low - interval.low) < 0.1 * width, (c, column.low, interval.low)
        assert abs(column.high - interval.high) < 0.1 * width, (c, column.high, interval.high)
    rows = [row(f"compare {N // 1000}k paired rows x 3 scores, {RESAMPLES} resamples "
                "(shared.compare)", mine, theirs,
                "reference: scipy.stats.bootstrap (paired, percentile, batch=40) for the 3 "
                "delta intervals alone; ours also pairs by id and runs McNemar/Wilcoxon and "
                "Holm; every interval within 10% of its width of scipy's (asserted)")]
    d = b["rouge1"].to_numpy() - a["rouge1"].to_numpy()
    peaks = []
    for resamples in (500, 2000):
        tracemalloc.start()
        started = time.perf_counter()
        stats.bootstrap_means(d, n_resamples=resamples, seed=0)
        seconds = time.perf_counter() - started
        peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
    rows.append(row(f"paired bootstrap of a continuous score, {N // 1000}k pairs, 2000 "
                    "resamples: peak memory MiB (500 resamples in the reference column)",
                    peaks[1], peaks[0], f"tracemalloc peak; ratio = 500-resample peak / "
                    f"2000-resample peak (1 = flat); 2000 resamples took {seconds:.2f} s"))
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "report.html"
        started = time.perf_counter()
        write_compare_html(report, target)
        seconds = time.perf_counter() - started
        size = target.stat().st_size / 2**20
    rows.append(row(f"HTML report of the {N // 1000}k-pair comparison (write_compare_html)",
                    seconds, None, f"{size:.1f} MiB; the row table holds a seeded sample of "
                    "2,000 pairs (plus the rows that differ most), said so in the report"))
    return rows


if __name__ == "__main__":
    main()
