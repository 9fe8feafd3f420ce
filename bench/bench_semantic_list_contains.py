"""semantic_list_contains vs Future AGI's package (`ai-evaluation`, which encodes case by case) on
500 cases x 3 phrases, and vs one batched encode of the distinct texts (the floor).

Both sides use the embedded all-MiniLM-L6-v2 on the CPU, each model loaded before timing. Ours is
timed through ``evaluate`` (validation included). Runs alternate, median of several.

ai-evaluation pins ``openai<2`` and so lives in ``.venv-bench`` (see bench/README.md), not in
``.venv``: when it cannot be imported here and ``.venv-bench`` exists, the whole benchmark, both
sides, reruns there in a subprocess (``--json``), so the two still alternate in one process.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable

from _repo import REPO
from _timing import alternate, row

os.environ.setdefault("HF_HUB_OFFLINE", "1")

N = 500
BENCH_VENV_PYTHON = REPO / ".venv-bench" / "bin" / "python"
IN_BENCH_VENV = "JUDGE_METRICS_BENCH_IN_VENV_BENCH"


def corpus(n: int, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    rng = random.Random(seed)
    nouns = ["fox", "dog", "river", "market", "election", "vaccine", "engine", "forest", "court",
             "budget", "teacher", "storm", "satellite", "harvest", "museum", "bridge", "virus"]
    verbs = ["jumps over", "crosses", "funds", "reports on", "repairs", "protects", "delays"]
    adjectives = ["quick", "lazy", "new", "old", "national", "local", "heavy", "bright", "rural"]

    def phrase() -> str:
        return f"{rng.choice(adjectives)} {rng.choice(nouns)}"

    responses, phrases = [], []
    for _ in range(n):
        words = []
        for _ in range(rng.randint(2, 4)):
            words += ["The", phrase(), rng.choice(verbs), "the", phrase() + rng.choice(",.;")]
        responses.append(" ".join(words))
        phrases.append([phrase() for _ in range(3)])
    return responses, phrases


def load_future_agi() -> tuple[type | None, str]:
    try:
        try:
            from fi.evals.metrics import SemanticListContains
        except ImportError:
            from fi.evals.metrics.heuristics.similarity_metrics import SemanticListContains
    except Exception as error:  # noqa: BLE001 - a missing peer is a result, reported in the row
        return None, f"ai-evaluation unavailable: {type(error).__name__}: {error}"
    return SemanticListContains, "ai-evaluation SemanticListContains.evaluate (per case)"


def peer_runner(peer: object, cases: list[dict], note: str) -> tuple[Callable, str]:
    """``peer.evaluate(cases)``; if the package fails on a case, its per-case ``compute_one``
    run up to the error (the encodes and similarities are done by then), noted in the row."""
    try:
        peer.evaluate(cases[:1])
        return (lambda: peer.evaluate(cases)), note
    except Exception as error:  # noqa: BLE001 - the peer's own bug, reported in the row
        failure, message = type(error), f"{type(error).__name__}: {error}"
    inputs = [peer.input_model.model_validate(case) for case in cases]

    def per_case() -> None:
        for item in inputs:
            try:
                peer.compute_one(item)
            except failure:
                pass

    return per_case, (
        f"{note}; evaluate() fails here ({message}), so its compute_one is timed per case "
        "up to that error, after its two encodes"
    )


def rerun_in_bench_venv() -> list[dict] | None:
    """This benchmark's rows from a run under ``.venv-bench``'s Python (its last stdout line, the
    others echoed); None if that run fails."""
    done = subprocess.run(
        [str(BENCH_VENV_PYTHON), __file__, "--json"], env={**os.environ, IN_BENCH_VENV: "1"},
        stdout=subprocess.PIPE, text=True, check=False,
    )
    lines = done.stdout.strip().splitlines()
    print("\n".join(lines[:-1]), flush=True)
    if done.returncode != 0 or not lines:
        print(f"   .venv-bench run failed (exit {done.returncode})", flush=True)
        return None
    rows = json.loads(lines[-1])
    for measured in rows:
        measured["note"] += "; run in .venv-bench (ai-evaluation pins openai<2)"
    return rows


def main() -> list[dict]:
    peer_class, note = load_future_agi()
    if peer_class is None and BENCH_VENV_PYTHON.exists() and not os.environ.get(IN_BENCH_VENV):
        rows = rerun_in_bench_venv()
        if rows is not None:
            return rows
        note += "; its run in .venv-bench failed (output above)"
    return measure(peer_class, note)


def measure(peer_class: type | None, note: str) -> list[dict]:
    import evaluate
    import torch

    from shared import defaults, load_embedding_model, text

    # both sides get the same torch threads: BENCH_TORCH_THREADS, default torch's own (the cores)
    torch.set_num_threads(int(os.environ.get("BENCH_TORCH_THREADS", torch.get_num_threads())))
    metric = evaluate.load(str(REPO / "metrics" / "semantic_list_contains"))
    responses, phrases = corpus(N)
    model = load_embedding_model()

    def ours() -> dict:
        return metric.compute(predictions=responses, references=phrases)

    distinct = list(dict.fromkeys(
        text.preprocess_phrase(t) for t in [*responses, *(p for ps in phrases for p in ps)]
    ))

    def one_encode() -> object:
        return model.encode(distinct, batch_size=64, normalize_embeddings=True,
                            convert_to_numpy=True, show_progress_bar=False)

    ours()  # warm-up: model load
    rows = []
    if peer_class is None:
        rows.append(row(f"semantic_list_contains {N} cases x 3 phrases vs ai-evaluation",
                        alternate(ours, None)[0], None, note))
    else:
        peer = peer_class(config={"model_name": str(defaults.embedding_model_dir())})
        cases = [{"response": r, "expected_response": p}
                 for r, p in zip(responses, phrases, strict=True)]
        reference, note = peer_runner(peer, cases, note)
        mine, theirs = alternate(ours, reference)
        rows.append(row(f"semantic_list_contains {N} cases x 3 phrases vs ai-evaluation",
                        mine, theirs, note))
    mine, floor = alternate(ours, one_encode)
    rows.append(row(f"semantic_list_contains {N} cases x 3 phrases vs one batched encode",
                    mine, floor,
                    f"reference: one encode of the {len(distinct)} distinct texts; "
                    f"ours / reference = {mine / floor:.2f} (target <= 1.3)"))
    return rows


if __name__ == "__main__":
    if "--json" in sys.argv:
        print(json.dumps(main()))
    else:
        print("| workload | ours (s) | reference (s) | ratio |\n|---|---|---|---|")
        main()
