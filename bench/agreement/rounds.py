"""The order in which one side of the side-by-side section scores its cells' rows, within its
time share; used by ``run.py`` (ours) and ``peers.py`` (each peer, in its own process).

Row 1 of every cell, then row 2 of every cell that has one, and so on, until the share is spent.
Every cell then reaches the same first rows (a prefix of the seeded permutation, fewer only where
the cell has fewer), whatever its metric costs. Giving each cell its own slice of the share in
turn, as before, cut the first cells short while the later ones left time unused: our
answer_correctness reached 4 of its 8 rows in a run in which our side used 103 s of its 150.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence


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
