"""accuracy vs the `benchwise` package's `accuracy` on 100k pairs, fuzzy matching off and on;
and accuracy's mode="f1" vs torchmetrics' port of the official SQuAD F1/EM on the same pairs.

Ours is timed end to end through ``evaluate`` (``compute`` as a user calls it, input validation
included) and, with fuzzy matching, its scoring alone (``_compute``). Runs alternate, median of
several. The match decisions of both sides are compared after timing (``agree``); the SQuAD F1
and EM of both sides are compared too.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable

from _repo import REPO
from _timing import alternate, row

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

    from shared.base.text import paused_gc

    metric = evaluate.load(str(REPO / "metrics" / "accuracy"))
    predictions, references = corpus(N)
    peer, note = load_benchwise()
    # the scoring-only rows time _compute on what compute() hands it: references normalised to
    # one list of aliases per sample (a bare string there would be read as its characters)
    validated = metric.validate_inputs({"predictions": predictions, "references": references})
    rows = []
    for fuzzy_match in (False, True):
        outputs: dict[str, dict] = {}

        def ours(fuzzy_match=fuzzy_match, outputs=outputs) -> None:
            outputs["ours"] = metric.compute(predictions=predictions, references=references,
                                             fuzzy_match=fuzzy_match)

        def ours_core(fuzzy_match=fuzzy_match) -> None:
            with paused_gc():  # as compute() runs it, on the columns its validation returns
                metric._compute(**validated, fuzzy_match=fuzzy_match)

        def reference(fuzzy_match=fuzzy_match, outputs=outputs) -> None:
            outputs["reference"] = peer(predictions, references, fuzzy_match=fuzzy_match)

        fuzzy = "on" if fuzzy_match else "off"
        ours()  # warm-up
        mine, theirs = alternate(ours, None if peer is None else reference)
        agreement = "" if peer is None else "; " + agree(outputs["ours"], outputs["reference"],
                                                          fuzzy_match)
        rows.append(row(f"accuracy {N // 1000}k pairs, fuzzy {fuzzy} (evaluate.compute)",
                        mine, theirs, note + agreement))
        if fuzzy_match:
            mine, theirs = alternate(ours_core, None if peer is None else reference)
            rows.append(row(f"accuracy {N // 1000}k pairs, fuzzy {fuzzy} (scoring only)",
                            mine, theirs, note))
    rows.append(squad_row(metric, predictions, references))
    return rows


def squad_row(metric, predictions: list[str], references: list[str]) -> dict:
    """mode="f1" against torchmetrics' SQuAD (the official script's normalisation and F1), on
    the corpus lowercased: ours also splits words at a lower-to-upper case change ("xParis"), which
    SQuAD does not, and nothing else of its extensions occurs in this corpus."""
    predictions = [p.lower() for p in predictions]
    try:
        from torchmetrics.functional.text.squad import squad
    except Exception as error:  # noqa: BLE001 - a missing peer is a result, reported in the row
        squad, note = None, f"torchmetrics unavailable: {type(error).__name__}: {error}"
    else:
        note = "torchmetrics.functional.text.squad (official SQuAD F1/EM)"
    outputs: dict[str, object] = {}

    def ours() -> None:
        outputs["ours"] = metric.compute(predictions=predictions, references=references,
                                         mode="f1", return_confidence=False)

    def reference() -> None:
        outputs["reference"] = squad(
            [{"prediction_text": p, "id": str(i)} for i, p in enumerate(predictions)],
            [{"answers": {"answer_start": [0], "text": [r]}, "id": str(i)}
             for i, r in enumerate(references)],
        )

    ours()  # warm-up
    mine, theirs = alternate(ours, None if squad is None else reference)
    if squad is not None:
        f1 = float(outputs["reference"]["f1"]) / 100
        em = float(outputs["reference"]["exact_match"]) / 100
        # torchmetrics sums 100k float32 values: equal to about 1e-4 relative
        assert abs(outputs["ours"]["mean_score"] - f1) < 1e-3, (outputs["ours"]["mean_score"], f1)
        assert abs(outputs["ours"]["exact_accuracy"] - em) < 1e-4
        note += (f"; SQuAD F1 {f1:.4f} and EM {em:.4f} equal to ours (asserted; float32 sums "
                 "on their side)")
    return row(f"accuracy {N // 1000}k pairs, mode=f1 (evaluate.compute)", mine, theirs, note)


def agree(ours: dict, reference: dict, fuzzy_match: bool) -> str:
    """Check ours against benchwise on the same pairs and say how far they agree.

    Exact matching must agree on every pair (asserted). With fuzzy matching, fuzzywuzzy rounds
    ``fuzz.ratio`` to a whole percent before the threshold and rapidfuzz does not, so a pair just
    under the threshold can count for benchwise only; those pairs are counted, not asserted away.
    """
    mine, theirs = ours["match_types"], reference["match_types"]
    if not fuzzy_match:
        differing = sum(a != b for a, b in zip(mine, theirs, strict=True))
        assert differing == 0, f"{differing} of {N} exact-match decisions differ from benchwise"
        assert ours["accuracy"] == reference["accuracy"]
        return f"all {N} match decisions and the accuracy equal to benchwise's (asserted)"
    exact_differing = sum((a == "exact") != (b == "exact") for a, b in zip(mine, theirs,
                                                                        strict=True))
    assert exact_differing == 0, f"{exact_differing} exact-match decisions differ from benchwise"
    differing = sum(a != b for a, b in zip(mine, theirs, strict=True))
    why = " (fuzzywuzzy rounds the ratio to a whole percent)" if differing else ""
    return (f"exact matches equal (asserted); fuzzy decisions differ on {differing} of {N} "
            f"pairs{why}; accuracy {ours['accuracy']:.4f} vs {reference['fuzzy_accuracy']:.4f}")


if __name__ == "__main__":
    print("| workload | ours (s) | reference (s) | ratio |\n|---|---|---|---|")
    main()
