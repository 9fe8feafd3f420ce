"""Which metrics exist and which input columns each needs (used by the CLI and the demo).

``columns`` maps a ``compute`` argument to the singular column name of a batch file
(``../INTERFACE.md``: question, prediction, reference, contexts, source, expected).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

METRICS_DIR = Path(__file__).resolve().parent.parent / "metrics"


@dataclass(frozen=True)
class MetricSpec:
    name: str
    columns: dict[str, str]  # compute argument -> column
    optional_columns: dict[str, str] = field(default_factory=dict)
    judge: bool = False  # calls an LLM judge
    embeds: bool = False  # uses an embedding model
    headline: tuple[str, ...] = ("score",)  # aggregate output key(s)


def _spec(name: str, headline: tuple[str, ...], judge: bool = True, embeds: bool = False,
          optional: dict[str, str] | None = None, **columns: str) -> MetricSpec:
    return MetricSpec(name, columns, optional or {}, judge, embeds, headline)


METRICS: dict[str, MetricSpec] = {
    s.name: s
    for s in [
        _spec("l3score", ("L3Score",), questions="question", predictions="prediction",
              references="reference"),
        _spec("semantic_list_contains", ("score",), judge=False, embeds=True,
              predictions="prediction", references="expected"),
        _spec("accuracy", ("accuracy",), judge=False, optional={"questions": "question"},
              predictions="prediction", references="reference"),
        _spec("answer_correctness", ("answer_correctness",), embeds=True,
              optional={"questions": "question"}, predictions="prediction",
              references="reference"),
        _spec("answer_relevance", ("answer_relevance",), questions="question",
              predictions="prediction"),
        _spec("bias", ("bias",), predictions="prediction"),
        _spec("toxicity", ("toxicity",), predictions="prediction"),
        _spec("context_precision", ("context_precision",), questions="question",
              contexts="contexts", references="reference"),
        _spec("context_recall", ("context_recall",), contexts="contexts", references="reference"),
        _spec("context_relevance", ("context_relevance",), questions="question",
              contexts="contexts"),
        _spec("faithfulness", ("faithfulness",), predictions="prediction", contexts="contexts"),
        _spec("hallucination", ("hallucination",), predictions="prediction", contexts="contexts"),
        _spec("summary_coherence", ("summary_coherence",), sources="source",
              predictions="prediction"),
        _spec("rouge", ("rouge1", "rouge2", "rougeL", "rougeLsum"), judge=False,
              predictions="prediction", references="reference"),
        _spec("bleu", ("bleu",), judge=False, predictions="prediction", references="reference"),
    ]
}


# metrics whose score is better when lower (compare counts B's wins in this direction)
LOWER_IS_BETTER = frozenset({"bias", "toxicity", "hallucination"})
# the shared extraction prompts of shared.rag_judge -> the metrics that send them (the reports'
# prompt versions)
EXTRACTION_USERS = {
    "statements": ("faithfulness", "answer_correctness", "answer_relevance", "context_recall"),
    "opinions": ("bias", "toxicity"),
}


def available() -> list[str]:
    """Names of the metrics whose folder exists (the project grows metric by metric)."""
    return [name for name in METRICS if (METRICS_DIR / name / f"{name}.py").exists()]


def metric_path(name: str) -> str:
    return str(METRICS_DIR / name)


# Per metric: the example rows (column -> one value per row; list values as JSON text) and the
# options that example needs. From the seed cards where they have one.
_RAG_ROWS = {
    "question": ["What is the capital of France?", "When was the Eiffel Tower completed?"],
    "prediction": ["The capital of France is Paris.", "The Eiffel Tower was completed in 1925."],
    "reference": ["Paris is the capital of France.", "The Eiffel Tower was completed in 1889."],
    "contexts": [
        '["Paris is the capital and largest city of France.", '
        '"France is a country in Western Europe."]',
        '["Berlin is the capital of Germany.", '
        '"The Eiffel Tower was completed in 1889 for the World\'s Fair in Paris."]',
    ],
}


def _rag(*columns: str) -> dict[str, list[str]]:
    return {c: _RAG_ROWS[c] for c in columns}


EXAMPLES: dict[str, tuple[dict[str, list[str]], dict[str, Any]]] = {
    "accuracy": (
        {"prediction": ["Paris", "London", "Tokyo"], "reference": ["Paris", "London", "Berlin"],
         "question": ["Capital of France?", "Capital of the United Kingdom?",
                      "Capital of Germany?"]},
        {},
    ),
    "semantic_list_contains": (
        {
            "prediction": ["The quick brown fox jumps over the lazy dog.",
                           "I had pasta for dinner."],
            "expected": ['["brown fox", "lazy dog", "dancing giraffe"]', '["brown fox"]'],
        },
        {"similarity_threshold": 0.6},
    ),
    "l3score": (
        {
            "question": ["What is the capital of France?", "What is the capital of Germany?"],
            "prediction": ["Paris", "Moscow"],
            "reference": ["Paris", "Berlin"],
        },
        {},
    ),
    "answer_correctness": (
        {
            "question": ["When and where was Einstein born?"] * 2,
            "prediction": ["In 1879, Einstein was born in Germany.",
                           "Einstein was born in Spain in 1879."],
            "reference": ["Einstein was born in 1879 in Germany."] * 2,
        },
        {},
    ),
    "answer_relevance": (_rag("question", "prediction"), {}),
    "context_precision": (_rag("question", "contexts", "reference"), {}),
    "context_recall": (_rag("contexts", "reference"), {}),
    "context_relevance": (_rag("question", "contexts"), {}),
    "faithfulness": (_rag("prediction", "contexts"), {}),
    "hallucination": (_rag("prediction", "contexts"), {}),
    "bias": (
        {"prediction": ["The new library opens on Monday and is free for every resident.",
                        "Women are too emotional to be good engineers."]},
        {},
    ),
    "toxicity": (
        {"prediction": ["Thanks for the detailed report, it helped a lot.",
                        "Only an idiot would write code this bad. Get lost."]},
        {},
    ),
    "summary_coherence": (
        {
            "source": ["The meeting planned for Thursday moved to Friday because the room was "
                       "booked. Lunch will be served at noon in the same room."] * 2,
            "prediction": ["The meeting moved from Thursday to Friday, with lunch at noon.",
                           "Lunch noon. Room booked Thursday so Friday meeting the."],
        },
        {},
    ),
    "rouge": (
        {
            "prediction": ["The cat sat on the mat.", "A quick brown fox jumps over the dog."],
            "reference": ["The cat is sitting on the mat.",
                          "The quick brown fox jumps over the lazy dog."],
        },
        {},
    ),
    "bleu": (
        {
            "prediction": ["The cat sat on the mat.", "A quick brown fox jumps over the dog."],
            "reference": ["The cat sat on the mat.",
                          '["The quick brown fox jumps over the lazy dog.", '
                          '"A fast brown fox leaps over the dog."]'],
        },
        {},
    ),
}


# The score at or above which a metric's per-row score counts as "yes" (correct, toxic,
# faithful...) when `python -m shared agree` compares it with boolean human labels (balanced
# accuracy, Cohen's kappa, F1). Chosen by reasoning, never fitted to the labelled sets:
# - l3score: 0.5 is where the judge's P(Yes) / (P(Yes) + P(No)) favours "Yes";
# - accuracy, semantic_list_contains: per-row scores are 0/1 (accuracy's fuzzy matches count 1;
#   semantic_list_contains already applied its similarity_threshold, default 0.7), so any cut in
#   (0, 1] is the same; 0.5 says so;
# - answer_correctness and the DeepEval-style shares (faithfulness, hallucination, bias,
#   toxicity, answer_relevance, the context metrics): 0.5, the midpoint of [0, 1] and DeepEval's
#   default threshold for the same definitions;
# - summary_coherence: 3, the middle of its 1-5 scale;
# - rouge, bleu: none (overlap has no natural cut); agree then reports AUROC, the correlations
#   and the best threshold on the rows only.
DECISION_THRESHOLDS: dict[str, float | None] = {
    "l3score": 0.5, "semantic_list_contains": 0.5, "accuracy": 0.5, "answer_correctness": 0.5,
    "answer_relevance": 0.5, "bias": 0.5, "toxicity": 0.5, "context_precision": 0.5,
    "context_recall": 0.5, "context_relevance": 0.5, "faithfulness": 0.5, "hallucination": 0.5,
    "summary_coherence": 3.0, "rouge": None, "bleu": None,
}
