"""Answer correctness (RAGAS): the weighted average of a statement-level F1 against the reference
(judged by an LLM) and the embedding similarity of answer and reference."""

from __future__ import annotations

from typing import Any

import evaluate

from shared import (
    EMBEDDING_OPTIONS,
    Example,
    Input,
    Option,
    ValidatedMetric,
    embed_windows,
    get_judge,
    judge_output,
    mean_measured,
    pooled,
    rag_judge,
    scoring,
    split_judge_options,
    validation,
)

DEFAULT_WEIGHTS = (0.75, 0.25)

_CITATION = """\
@article{es2023ragas,
  title={RAGAS: Automated Evaluation of Retrieval Augmented Generation},
  author={Es, Shahul and James, Jithin and Espinosa-Anke, Luis and Schockaert, Steven},
  journal={arXiv preprint arXiv:2309.15217},
  year={2023}
}
"""

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
Examples:
    >>> metric = evaluate.load("metrics/answer_correctness")
    >>> result = metric.compute(predictions=["Einstein was born in Spain in 1879."],
    ...                         references=["Einstein was born in 1879 in Germany."])
    >>> 0.0 <= result["answer_correctness"] <= 1.0
    True
"""


class AnswerCorrectness(ValidatedMetric):
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
    USES_JUDGE = True
    USES_EMBEDDINGS = True
    EXTRACTIONS = ("statements",)
    EXAMPLE = Example({
        "questions": ["When and where was Einstein born?"] * 2,
        "predictions": ["In 1879, Einstein was born in Germany.",
                        "Einstein was born in Spain in 1879."],
        "references": ["Einstein was born in 1879 in Germany."] * 2,
    })

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=self.describe_inputs(_KWARGS_DESCRIPTION),
            features=self.input_features(),
            reference_urls=[
                "https://docs.ragas.io/en/latest/concepts/metrics/",
                "https://github.com/Striveworks/valor",
            ],
        )

    def _compute(self, predictions: list[str], references: list[list[str]],
                 questions: list[str] | None = None, weights: list[float] = DEFAULT_WEIGHTS,
                 threshold: float | None = None, embedding_model: str | None = None,
                 **options: Any) -> dict[str, Any]:
        if questions is not None:  # given to compute() after add_batch, it is checked here
            validation.same_length(predictions=predictions, questions=questions)
        config, options = split_judge_options(options)
        judge = get_judge(config)

        similarities = windowed = None
        if weights[1] > 0 and not rag_judge.is_dry_run(judge):
            similarities, windowed = _similarities(predictions, references, embedding_model)

        n = len(predictions)
        flat_references = [ref for refs in references for ref in refs]
        asked = list(questions) if questions is not None else [None] * n
        steps = rag_judge.extract_statements(  # the question resolves names in the answer
            judge, list(predictions) + flat_references, asked + [None] * len(flat_references))
        answer_steps, reference_steps = steps[:n], steps[n:]
        pairs = [(i, r) for i, refs in enumerate(references) for r in range(len(refs))]

        jobs: list[rag_judge.CorrectnessJob | None] = []
        for (i, r), reference_step in zip(pairs, reference_steps, strict=True):
            answer = rag_judge.items_or_estimate(judge, answer_steps[i], predictions[i])
            reference = rag_judge.items_or_estimate(judge, reference_step, references[i][r])
            question = questions[i] if questions is not None else None
            jobs.append(None if answer is None or reference is None
                        else rag_judge.CorrectnessJob(answer, reference, question))
        verdicts = rag_judge.correctness_verdicts(judge, jobs)

        per_sample: dict[int, list[tuple[rag_judge.Step, rag_judge.Step | None]]] = {}
        for (i, _), reference_step, judged in zip(pairs, reference_steps, verdicts, strict=True):
            per_sample.setdefault(i, []).append((reference_step, judged))

        results = rag_judge.SampleResults(n)
        for i in range(n):
            steps_i = per_sample[i]
            if results.first_error(i, answer_steps[i], *(s for pair in steps_i for s in pair)):
                continue
            per_reference = []
            for r, (reference_step, judged) in enumerate(steps_i):
                counts = judged.value
                f1 = scoring.f1_from_counts(len(counts["TP"]), len(counts["FP"]), len(counts["FN"]))
                similarity = similarities[i][r] if similarities is not None else None
                per_reference.append({
                    "statements": reference_step.value,
                    **{label: rag_judge.verdict_dicts(counts[label])
                       for label in ("TP", "FP", "FN")},
                    "f1": f1,
                    "similarity": similarity,
                    "score": scoring.weighted_score(f1, similarity, weights),
                })
                if windowed is not None and windowed[i][r] is not None:
                    per_reference[-1]["similarity_windows"] = windowed[i][r]
            best = max(range(len(per_reference)), key=lambda r: per_reference[r]["score"])
            raw = per_reference[best]["score"]
            results.score(i, scoring.binarize(raw, threshold),
                          prediction_statements=answer_steps[i].value, references=per_reference,
                          best_reference=best, score_before_threshold=raw,
                          **rag_judge.dropped_details(answer_steps[i],
                                                      *(pair[0] for pair in steps_i)))
        return judge_output({"answer_correctness": mean_measured(results.scores)}, results.scores,
                            results.details, results.unmeasured, judge)


def _similarities(predictions: list[str], references: list[list[str]],
                  embedding_model: str | None
                  ) -> tuple[list[list[float]], list[list[dict[str, Any] | None]]]:
    """Cosine similarity of each prediction with each of its references (normalised rows), and
    per pair how texts longer than the model's window were read (``None`` when both fit).

    A longer text is embedded as the normalised mean of its overlapping windows' embeddings
    (``shared.embeddings``; at most ``MAX_WINDOWS`` windows, beyond that it is cut)."""
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
