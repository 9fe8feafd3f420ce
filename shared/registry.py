"""Which metrics exist and which input columns each needs (used by the CLI and the demo).

``columns`` maps a ``compute`` argument to the singular column name of a batch file
(``../INTERFACE.md``: question, prediction, reference, contexts, source, expected).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

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
        _spec("accuracy", ("accuracy",), judge=False, predictions="prediction",
              references="reference"),
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


def available() -> list[str]:
    """Names of the metrics whose folder exists (the project grows metric by metric)."""
    return [name for name in METRICS if (METRICS_DIR / name / f"{name}.py").exists()]


def metric_path(name: str) -> str:
    return str(METRICS_DIR / name)
