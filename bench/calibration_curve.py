"""How many labels buy how much interval width (`make calibration-curve`).

Scores the EVOUNA answer-equivalence set (``bench/agreement/data/``, 600 rows with a human
0/1 label) with ``accuracy`` in three modes (no judge: the numbers are exact and fast), then,
for each number of labelled rows from 20 to 300, draws seeded uniformly random splits: the
labelled rows keep their label, the others are scored only. Per split it computes
``shared.prediction_powered_mean`` and the labels-alone interval, and it reports the mean width
of each, their ratio (and the ratio of the interval before the change, the reference
implementation's normal one), and how often each interval covered the full set's mean label.
Writes the table into docs/CALIBRATION.md (between its ``calibration-curve`` markers) and the
curve as docs/calibration_curve.svg; then the simulated coverage against the number of labels,
old and new interval (``bench/ppi_coverage.py``), between its ``ppi-coverage`` markers.

    .venv/bin/python bench/calibration_curve.py [--splits N] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import re

import numpy as np
from _repo import REPO as ROOT
from ppi_coverage import measure, old_interval
from ppi_coverage import table as coverage_table
from scipy.stats import norm

from shared import prediction_powered_mean, score_dataset
from shared.analysis.ppi import classical_mean

DATA = ROOT / "bench" / "agreement" / "data" / "answer_equivalence_evouna_nq.jsonl"
DOC = ROOT / "docs" / "CALIBRATION.md"
SVG = ROOT / "docs" / "calibration_curve.svg"
LABELS = (20, 40, 60, 100, 150, 200, 300)
MODES = ("contains", "f1", "exact")
START, END = "<!-- calibration-curve:start -->", "<!-- calibration-curve:end -->"
COVERAGE = "<!-- ppi-coverage:start -->", "<!-- ppi-coverage:end -->"


def scores(rows: list[dict], mode: str) -> np.ndarray:
    import datasets

    dataset = datasets.Dataset.from_list([{k: r[k] for k in ("question", "prediction",
                                                              "reference")} for r in rows])
    scored, _ = score_dataset(dataset, ["accuracy"], show_progress=False,
                              metric_options={"accuracy": {"mode": mode}})
    return np.array(scored["accuracy"], dtype=np.float64)


def curve(y: np.ndarray, s: np.ndarray, splits: int, seed: int) -> list[dict]:
    truth = float(y.mean())
    found = []
    for n in LABELS:
        ppi_widths, classical_widths, ppi_cover, classical_cover = [], [], 0, 0
        old_widths, old_classical = [], []
        rng = np.random.default_rng([seed, n])
        for _ in range(splits):
            order = rng.permutation(y.size)
            labelled, unlabelled = order[:n], order[n:]
            ppi = prediction_powered_mean(s[labelled], y[labelled], s[unlabelled])
            classical = classical_mean(y[labelled])
            ppi_widths.append(ppi["high"] - ppi["low"])
            old = old_interval(s[labelled][None], y[labelled][None], s[unlabelled][None])
            old_widths.append(float(old[1][0] - old[0][0]))
            old_classical.append(2 * norm.ppf(0.975) * y[labelled].std() / np.sqrt(n))
            classical_widths.append(classical["high"] - classical["low"])
            ppi_cover += ppi["low"] <= truth <= ppi["high"]
            classical_cover += classical["low"] <= truth <= classical["high"]
        found.append({"labels": n, "ppi_width": float(np.mean(ppi_widths)),
                      "classical_width": float(np.mean(classical_widths)),
                      "ratio": float(np.mean(ppi_widths) / np.mean(classical_widths)),
                      "old_ratio": float(np.mean(old_widths) / np.mean(old_classical)),
                      "ppi_coverage": ppi_cover / splits,
                      "classical_coverage": classical_cover / splits})
    return found


def table(results: dict[str, list[dict]], rows: int, splits: int, seed: int) -> str:
    lines = [f"Measured by `make calibration-curve` (bench/calibration_curve.py) on the {rows} "
             f"EVOUNA rows, {splits} seeded splits per point (seed {seed}); the width is the "
             "mean width of the 95% interval, coverage the share of splits whose interval "
             "held the full set's mean label; in brackets the ratio to the labels alone's "
             "width, and after the slash that ratio for the interval before this round's "
             "change (the reference's normal interval, both sides normal).", "",
             "| labels | labels alone: width | " + " | ".join(
                 f"`mode={m}`: width (ratio)" for m in MODES) + " | coverage (labels alone; "
             + ", ".join(MODES) + ") |",
             "|---:|---:|" + "---:|" * len(MODES) + "---|"]
    first = results[MODES[0]]
    for i, point in enumerate(first):
        cells = [str(point["labels"]), f"{point['classical_width']:.3f}"]
        cells += [f"{results[m][i]['ppi_width']:.3f} ({results[m][i]['ratio']:.2f}x / "
                  f"{results[m][i]['old_ratio']:.2f}x)" for m in MODES]
        coverage = [f"{point['classical_coverage']:.3f}"] + [
            f"{results[m][i]['ppi_coverage']:.3f}" for m in MODES]
        cells.append("; ".join(coverage))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(results: dict[str, list[dict]]) -> None:
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=72)
    first = results[MODES[0]]
    x = [p["labels"] for p in first]
    ax.plot(x, [p["classical_width"] for p in first], "o-", color="black",
            label="labels alone")
    for mode in MODES:
        ax.plot(x, [p["ppi_width"] for p in results[mode]], "o-",
                label=f"prediction-powered, accuracy mode={mode}")
    ax.set_xlabel("labelled rows")
    ax.set_ylabel("width of the 95% interval")
    ax.set_title("EVOUNA (600 rows): labels against interval width")
    ax.legend(frameon=False, fontsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    with matplotlib.rc_context({"svg.hashsalt": "calibration-curve", "svg.fonttype": "path"}):
        fig.savefig(SVG, format="svg", metadata={"Date": None}, bbox_inches="tight")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    y = np.array([float(r["label"]) for r in rows])
    results = {mode: curve(y, scores(rows, mode), args.splits, args.seed) for mode in MODES}
    text = DOC.read_text(encoding="utf-8")
    block = f"{START}\n{table(results, len(rows), args.splits, args.seed)}\n{END}"
    coverage = (f"{COVERAGE[0]}\n{coverage_table(measure(2000, args.seed), 2000, args.seed)}"
                f"\n{COVERAGE[1]}")
    for (start, end), new in (((START, END), block), (COVERAGE, coverage)):
        text = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _, new=new: new, text,
                      flags=re.DOTALL)
    DOC.write_text(text, encoding="utf-8")
    plot(results)
    print(block)
    print(coverage)


if __name__ == "__main__":
    main()
