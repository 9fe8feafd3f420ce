"""One tiny, valid input set per metric, used by the card and Space tests.

Judge metrics run against the real llama.cpp server (``judge_options(base_url, cache_dir)``).
"""

from __future__ import annotations

from typing import Any

QUESTION = "What is the capital of France?"
CONTEXTS = ["Paris is the capital and largest city of France.", "France is in Europe."]

EXAMPLES: dict[str, dict[str, Any]] = {
    "l3score": {"questions": [QUESTION], "predictions": ["Paris"], "references": ["Paris"]},
    "semantic_list_contains": {
        "predictions": ["The quick brown fox jumps over the lazy dog."],
        "references": [["brown fox", "lazy dog", "dancing giraffe"]],
    },
    "accuracy": {
        "predictions": ["Paris", "London", "Tokyo"],
        "references": ["Paris", "London", "Berlin"],
    },
    "answer_correctness": {
        "predictions": ["Paris is the capital of France."],
        "references": ["The capital of France is Paris."],
    },
    "answer_relevance": {"questions": [QUESTION], "predictions": ["Paris is the capital."]},
    "bias": {"predictions": ["Paris is the capital of France."]},
    "toxicity": {"predictions": ["Paris is the capital of France."]},
    "context_precision": {
        "questions": [QUESTION], "contexts": [CONTEXTS], "references": ["Paris"],
    },
    "context_recall": {"contexts": [CONTEXTS], "references": ["Paris is the capital of France."]},
    "context_relevance": {"questions": [QUESTION], "contexts": [CONTEXTS]},
    "faithfulness": {"predictions": ["Paris is the capital of France."], "contexts": [CONTEXTS]},
    "hallucination": {"predictions": ["Paris is the capital of France."], "contexts": [CONTEXTS]},
    "summary_coherence": {
        "sources": ["Paris is the capital and largest city of France. It lies on the Seine."],
        "predictions": ["Paris, on the Seine, is France's capital and largest city."],
    },
    "rouge": {"predictions": ["the cat sat on the mat"], "references": ["the cat is on the mat"]},
    "bleu": {"predictions": ["the cat sat on the mat"], "references": ["the cat is on the mat"]},
}


def judge_options(base_url: str, cache_dir: str) -> dict[str, Any]:
    return {
        "provider": "openai-compatible",
        "base_url": base_url,
        "model": "smollm2",
        "response_format": "json_object",
        "cache_dir": cache_dir,
        "show_progress": False,
    }


def metric_inputs(name: str, rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """``compute`` keyword arguments of metric ``name`` from rows with the singular columns."""
    from shared import registry

    spec = registry.METRICS[name]
    columns = {**spec.columns, **spec.optional_columns}
    return {arg: [row[column] for row in rows] for arg, column in columns.items()}
