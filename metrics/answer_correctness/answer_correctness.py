"""Answer correctness (RAGAS): the weighted average of a statement-level F1 against the reference
(judged by an LLM) and the embedding similarity of answer and reference."""

from __future__ import annotations

from typing import Any

from judge_metrics import (EMBEDDING_OPTIONS, About, Example, Input, Judge, JudgeMetric, Option,
                           SampleResult, citations, embed_windows, pooled, scoring, steps,
                           validation)

DEFAULT_WEIGHTS = (0.75, 0.25)

_DESCRIPTION = """\
Answer correctness compares an answer with a reference answer. A judge splits both into
statements and classifies them: TP (an answer statement the reference supports), FP (an answer
statement the reference does not support), FN (a reference statement the answer misses). The
factual score is F1 = TP / (TP + 0.5 (FP + FN)), 0 when TP = 0. The answer correctness is the
weighted average of F1 and the cosine similarity of the answer's and the reference's embeddings
(weights=[0.75, 0.25] by default, as RAGAS; weights=[1, 0] gives Valor's F1-only definition and
loads no embedding model). With several references, the best one counts. An optional threshold
turns the score into 1.0 (score >= threshold) or 0.0.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the answers to evaluate.
    references (list of str or list of list of str): per sample, the reference answer or answers.
    questions (list of str, optional): the questions, shown to the judge when given.
Returns:
    answer_correctness (float or None): mean over the measured samples.
    scores, details, unmeasured, usage, Cost: per-sample scores, the statements with their
        TP/FP/FN classification and reasons, F1 and similarity per reference, samples that could
        not be judged, call counts and cost.
"""


class AnswerCorrectness(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.RAGAS,
                  ("https://docs.ragas.io/en/latest/concepts/metrics/",
                   "https://github.com/Striveworks/valor"))
    INPUTS = (
        Input("predictions"),
        Input("references", kind="texts"),
        Input("questions", required=False),
    )
    OPTIONS = (
        Option("weights", list, DEFAULT_WEIGHTS, type_doc="pair of float",
               check=lambda name, value: validation.weights(name, value, 2),
               doc="weights of [F1, similarity]; each >= 0, not both 0; [1, 0]: F1 only (Valor)"),
        Option("threshold", float, None, range=(0, 1), nullable=True,
               doc="report 1.0 when the score reaches it, else 0.0 (None: the score itself)"),
        *EMBEDDING_OPTIONS,
    )
    HEADLINE = ("answer_correctness",)
    ROUNDS = ("statements of the answers and the references", "TP/FP/FN verdicts")
    SCORING_PROMPTS = ("answer_correctness", "answer_correctness_q")
    PROMPTS = (steps.STATEMENTS, steps.STATEMENTS_WITH_QUESTION, steps.CORRECTNESS,
               steps.CORRECTNESS_WITH_QUESTION)
    USES_EMBEDDINGS = True
    EXAMPLE = Example({
        "questions": ["When and where was Einstein born?"] * 2,
        "predictions": ["In 1879, Einstein was born in Germany.",
                        "Einstein was born in Spain in 1879."],
        "references": ["Einstein was born in 1879 in Germany."] * 2,
    })

    def score(self, judge: Judge, predictions: list[str], references: list[list[str]],
              questions: list[str] | None = None, weights: list[float] = DEFAULT_WEIGHTS,
              threshold: float | None = None, embedding_model: str | None = None
              ) -> list[SampleResult]:
        similarities = windowed = None
        if weights[1] > 0 and not steps.is_dry_run(judge):
            similarities, windowed = _similarities(predictions, references, embedding_model)

        n = len(predictions)
        flat_references = [ref for refs in references for ref in refs]
        asked = list(questions) if questions is not None else [None] * n
        statements = steps.extract_statements(  # the question resolves names in the answer
            judge, list(predictions) + flat_references, asked + [None] * len(flat_references))
        answer_steps, reference_steps = statements[:n], statements[n:]
        pairs = [(i, r) for i, refs in enumerate(references) for r in range(len(refs))]

        jobs: list[steps.CorrectnessJob | None] = []
        for (i, r), reference_step in zip(pairs, reference_steps, strict=True):
            answer = steps.items_or_estimate(judge, answer_steps[i], predictions[i])
            reference = steps.items_or_estimate(judge, reference_step, references[i][r])
            jobs.append(None if answer is None or reference is None
                        else steps.CorrectnessJob(answer, reference, asked[i]))
        verdicts = steps.correctness_verdicts(judge, jobs)

        per_sample: dict[int, list[tuple[Any, Any]]] = {}
        for (i, r), reference_step, judged in zip(pairs, reference_steps, verdicts, strict=True):
            similarity = similarities[i][r] if similarities is not None else None
            window = windowed[i][r] if windowed is not None else None
            per_sample.setdefault(i, []).append((reference_step, judged, similarity, window))
        return [
            SampleResult.first_failure(answer_steps[i],
                                       *(s for pair in per_sample[i] for s in pair[:2]))
            or _correctness(answer_steps[i], per_sample[i], weights, threshold)
            for i in range(n)
        ]


def _correctness(answer_step: Any, per_reference: list[tuple[Any, Any, Any, Any]],
                 weights: list[float], threshold: float | None) -> SampleResult:
    """The best reference's weighted F1 and similarity (binarised at ``threshold``)."""
    rows = []
    for reference_step, judged, similarity, window in per_reference:
        counts = judged.value
        f1 = scoring.f1_from_counts(len(counts["TP"]), len(counts["FP"]), len(counts["FN"]))
        rows.append({
            "statements": reference_step.value,
            **{label: steps.verdict_dicts(counts[label]) for label in ("TP", "FP", "FN")},
            "f1": f1,
            "similarity": similarity,
            "score": scoring.weighted_score(f1, similarity, weights),
        })
        if window is not None:
            rows[-1]["similarity_windows"] = window
    best = max(range(len(rows)), key=lambda r: rows[r]["score"])
    raw = rows[best]["score"]
    return SampleResult.measured(
        scoring.binarize(raw, threshold), prediction_statements=answer_step.value,
        references=rows, best_reference=best, score_before_threshold=raw,
        **steps.dropped_details(answer_step, *(pair[0] for pair in per_reference)))


def _similarities(predictions: list[str], references: list[list[str]],
                  embedding_model: str | None
                  ) -> tuple[list[list[float]], list[list[dict[str, Any] | None]]]:
    """Cosine similarity of each prediction with each of its references (normalised rows), and
    per pair how texts longer than the model's window were read (``None`` when both fit).

    A longer text is embedded as the normalised mean of its overlapping windows' embeddings
    (``shared.kit.embeddings``; at most ``MAX_WINDOWS`` windows, beyond that it is cut)."""
    flat = [ref for refs in references for ref in refs]
    vectors, rows, windows = embed_windows(list(predictions) + flat, embedding_model)
    embedded = pooled(vectors, rows)
    out: list[list[float]] = []
    read: list[list[dict[str, Any] | None]] = []
    k = len(predictions)
    for i, refs in enumerate(references):
        out.append([float(embedded[i] @ embedded[k + j]) for j in range(len(refs))])
        read.append([
            {"answer_windows": len(windows[i].parts),
             "reference_windows": len(windows[k + j].parts),
             "cut": windows[i].cut or windows[k + j].cut}
            if windows[i].windowed or windows[k + j].windowed else None
            for j in range(len(refs))
        ])
        k += len(refs)
    return out, read
