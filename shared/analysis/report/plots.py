"""The report's plots as inline SVG (matplotlib's SVG backend, text drawn as paths: no font
files, no network). Every label is a metric or score column name or a fixed word, never a cell
of the data."""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

_COUNTER = itertools.count()
_A, _B = "#4c72b0", "#dd8452"
_WIN, _TIE, _LOSS = "#55a868", "#c9c9c9", "#c44e52"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("svg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _svg(fig: Any) -> str:
    """The figure as an ``<svg>`` element (no XML prolog, no DOCTYPE, ids unique in the page)."""
    import matplotlib

    plt = _pyplot()
    buffer = io.StringIO()
    # ids of clip paths and markers hash this salt: two plots in one page never share an id
    with matplotlib.rc_context({"svg.hashsalt": f"jm-plot-{next(_COUNTER)}",
                                "svg.fonttype": "path"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    text = buffer.getvalue()
    start = text.find("<svg")
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text[start:], count=1, flags=re.DOTALL)
    return text.replace("<svg ", '<svg class="plot" ', 1)


def histogram(values: np.ndarray, column: str, *, other: np.ndarray | None = None) -> str:
    """Distribution of one score column's measured values (with ``other``: A and B overlaid)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 2.4), dpi=72)
    data = [v[np.isfinite(v)] for v in ([values] if other is None else [values, other])]
    everything = np.concatenate(data) if data else np.array([])
    if everything.size == 0:
        ax.text(0.5, 0.5, "no measured row", ha="center", va="center", transform=ax.transAxes)
    else:
        low, high = float(everything.min()), float(everything.max())
        if low == high:
            low, high = low - 0.5, high + 0.5
        bins = np.linspace(low, high, 21)
        if other is None:
            ax.hist(data[0], bins=bins, color=_A)
            ax.axvline(float(data[0].mean()), color="black", linewidth=1, linestyle="--")
        else:
            ax.hist(data[0], bins=bins, histtype="step", linewidth=1.5, color=_A, label="A")
            ax.hist(data[1], bins=bins, histtype="step", linewidth=1.5, color=_B, label="B")
            ax.legend(frameon=False, fontsize=8)
    ax.set_title(column, fontsize=10)
    ax.set_ylabel("rows", fontsize=8)
    ax.tick_params(labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return _svg(fig)


def forest(labels: Sequence[str], deltas: Sequence[float | None],
           lows: Sequence[float | None], highs: Sequence[float | None],
           title: str = "delta B - A with its interval", zero_line: bool = True) -> str:
    """One row per score: the point estimate and its interval, a line at zero (unless
    ``zero_line`` is false)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 0.45 * len(labels) + 1.0), dpi=72)
    y = np.arange(len(labels))[::-1]
    for row, delta, low, high in zip(y, deltas, lows, highs, strict=True):
        if delta is None:
            continue
        if low is not None and high is not None:
            ax.plot([low, high], [row, row], color="black", linewidth=1.5)
        ax.plot([delta], [row], "o", color=_B)
    if zero_line:
        ax.axvline(0.0, color="grey", linewidth=1, linestyle="--")
    ax.set_yticks(y)
    ax.set_yticklabels(list(labels), fontsize=9)
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.set_title(title, fontsize=10)
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return _svg(fig)


def wins_ties_losses(labels: Sequence[str], wins: Sequence[int], ties: Sequence[int],
                     losses: Sequence[int]) -> str:
    """Stacked bars per score: share of pairs where B is better, equal, worse."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 0.45 * len(labels) + 1.0), dpi=72)
    y = np.arange(len(labels))[::-1]
    total = np.maximum(np.asarray(wins) + np.asarray(ties) + np.asarray(losses), 1)
    w, t, lo = (np.asarray(x) / total for x in (wins, ties, losses))
    ax.barh(y, w, color=_WIN, label="B better")
    ax.barh(y, t, left=w, color=_TIE, label="tie")
    ax.barh(y, lo, left=w + t, color=_LOSS, label="B worse")
    ax.set_yticks(y)
    ax.set_yticklabels(list(labels), fontsize=9)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of measured pairs", fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.legend(frameon=False, fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.25))
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return _svg(fig)


def reliability_diagram(before: Sequence[dict[str, float]],
                        after: Sequence[dict[str, float]] | None) -> str:
    """Mean label against mean prediction per bin, the raw score and (held-out) the
    calibrated one; the diagonal is perfect calibration, a marker's area the bin's rows."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 4.0), dpi=72)
    ax.plot([0, 1], [0, 1], color="grey", linewidth=1, linestyle="--")
    for points, colour, name in ((before, _A, "raw score"), (after, _B, "calibrated")):
        if not points:
            continue
        x = [p["predicted"] for p in points]
        y = [p["observed"] for p in points]
        sizes = [12 + 4 * p["rows"] for p in points]
        ax.plot(x, y, color=colour, linewidth=1)
        ax.scatter(x, y, s=sizes, color=colour, label=name, alpha=0.8)
    ax.set_xlim(-0.04, 1.04)
    ax.set_ylim(-0.04, 1.04)
    ax.set_xlabel("predicted P(label)", fontsize=8)
    ax.set_ylabel("observed share labelled 1", fontsize=8)
    ax.set_title("reliability (labelled rows)", fontsize=10)
    ax.tick_params(labelsize=8)
    ax.legend(frameon=False, fontsize=8, loc="upper left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return _svg(fig)
