"""accuracy vs the `benchwise` package's `accuracy` on 100k pairs, fuzzy matching on.

Ours is timed end to end through ``evaluate`` (``compute`` as a user calls it, input validation
included) and, separately, its scoring alone (``_compute``). Runs alternate, median of several.
"""

from __future__ import annotations

import random
import string
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from _timing import alternate, row  # noqa: E402

N = 100_000


def corpus(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Short QA answers; a third exact (after normalisation), a third near misses."""
    rng = random.Random(seed)
    words = ["Paris", "London", "the", "capital", "of", "France", "George", "Orwell", "1984",
             "Tokyo", "Berlin", "river", "Seine", "wrote", "novel", "in", "is", "a", "city"]
    predictions, references = [], []
    for i in range(n):
        ref = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        kind = i % 3
        if kind == 0:
            pred = ref.upper() + "!"
        elif kind == 1:
            chars = list(ref)
            for _ in range(rng.randint(1, 3)):
                chars.insert(rng.randrange(len(chars) + 1), rng.choice(string.ascii_lowercase))
            pred = "".join(chars)
        else:
            pred = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        predictions.append(pred)
        references.append(ref)
    return predictions, references


def load_benchwise() -> tuple[Callable | None, str]:
    try:
        import nltk

        download = nltk.download
        nltk.download = lambda *args, **kwargs: False  # benchwise fetches punkt on import; offline
        try:
            from benchwise import accuracy
        finally:
            nltk.download = download
        import fuzzywuzzy  # noqa: F401  (without it benchwise silently skips fuzzy matching)
    except Exception as error:  # noqa: BLE001 - a missing peer is a result, reported in the row
        return None, f"benchwise unavailable: {type(error).__name__}: {error}"
    return accuracy, "benchwise.accuracy (fuzzywuzzy)"


def main() -> list[dict]:
    import evaluate

    metric = evaluate.load(str(REPO / "metrics" / "accuracy"))
    predictions, references = corpus(N)
    rows = []
    peer, note = load_benchwise()
    reference = None if peer is None else (
        lambda: peer(predictions, references, fuzzy_match=True)
    )

    def ours() -> dict:
        return metric.compute(predictions=predictions, references=references, fuzzy_match=True)

    def ours_core() -> dict:
        return metric._compute(predictions=predictions, references=references, fuzzy_match=True)

    mine, theirs = alternate(ours, reference)
    rows.append(row(f"accuracy {N // 1000}k pairs, fuzzy on (evaluate.compute)", mine, theirs,
                    note))
    mine, theirs = alternate(ours_core, reference)
    rows.append(row(f"accuracy {N // 1000}k pairs, fuzzy on (scoring only)", mine, theirs, note))
    mine, _ = alternate(
        lambda: metric.compute(predictions=predictions, references=references), None
    )
    rows.append(row(f"accuracy {N // 1000}k rows, exact (evaluate.compute)",
                    mine, None, "time only"))
    return rows


if __name__ == "__main__":
    print("| workload | ours (s) | reference (s) | ratio |\n|---|---|---|---|")
    main()
