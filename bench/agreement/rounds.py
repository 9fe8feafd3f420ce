"""How one side of the side-by-side section scores its cells' rows within its time share, and
what it records of them; used by ``run.py`` (ours) and ``peers.py`` (each peer, in its own
process), each with its own way of scoring a row.

Row 1 of every cell, then row 2 of every cell that has one, and so on, until the share is spent.
Every cell then reaches the same first rows (a prefix of the seeded permutation, fewer only where
the cell has fewer), whatever its metric costs. Giving each cell its own slice of the share in
turn, as before, cut the first cells short while the later ones left time unused: our
answer_correctness reached 4 of its 8 rows in a run in which our side used 103 s of its 150.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

#: One row's outcome: its score (None = no score), its error text (None = none), requests sent.
RowOutcome = tuple[float | None, str | None, int]


def round_robin(row_counts: Sequence[int], seconds: float) -> Iterator[tuple[int, int]]:
    """``(cell, row)`` indices in rounds (row 0 of each cell, then row 1, ...), while less than
    ``seconds`` have passed since the first pair was asked for; checked before each pair, so a
    row that started in time finishes."""
    deadline = time.monotonic() + seconds
    for row in range(max(row_counts, default=0)):
        for cell, count in enumerate(row_counts):
            if row >= count:
                continue
            if time.monotonic() >= deadline:
                return
            yield cell, row


def score_in_rounds(cells: Sequence[Sequence[Any]], seconds: float,
                    score: Callable[[int, Any], RowOutcome],
                    meter: Callable[[], dict[str, int]] | None = None) -> list[dict[str, Any]]:
    """``score(cell, row)`` on the cells' rows in rounds within ``seconds``; per cell, the
    per-row scores and errors (``None`` where not reached), the rows reached, the requests
    sent and the time spent. With a ``meter`` (running totals of counts, read before and after
    each row: ``meter.py``'s), also ``served``: per row, what the meter counted while it was
    scored (``None`` where not reached)."""
    out = [{"scores": [None] * len(rows), "errors": [None] * len(rows), "reached": 0,
            "requests": 0, "seconds": 0.0} for rows in cells]
    if meter is not None:
        for result, rows in zip(out, cells, strict=True):
            result["served"] = [None] * len(rows)
    for c, i in round_robin([len(rows) for rows in cells], seconds):
        result = out[c]
        result["reached"] = i + 1
        before = meter() if meter is not None else {}
        started = time.perf_counter()
        result["scores"][i], result["errors"][i], requests = score(c, cells[c][i])
        result["seconds"] += time.perf_counter() - started
        result["requests"] += requests
        if meter is not None:
            after = meter()
            result["served"][i] = {k: after[k] - before.get(k, 0) for k in after}
    return out
