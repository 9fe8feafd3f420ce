"""Semantic List Contains (Future AGI): does a response semantically contain any (or all) of a
list of expected phrases? Cosine similarity of sentence embeddings against a threshold.

Texts longer than the model's window (256 word pieces for MiniLM) are read in overlapping
windows: a phrase's similarity is, over the phrase's windows, the lowest of its best match among
the response's windows ("every part of the phrase is somewhere in the response"). With one
window on each side that is the plain cosine similarity, as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from judge_metrics import (EMBEDDING_OPTIONS, About, Example, Input, Option, SampleResult,
                           ValidatedMetric, build_output, embed_windows, text)

_CITATION = """\
@software{futureagi_ai_evaluation,
  title = {ai-evaluation: Future AGI's evaluation SDK (SemanticListContains)},
  url = {https://github.com/future-agi/ai-evaluation},
}
"""

_DESCRIPTION = """\
Checks whether a response contains phrases semantically similar to expected key phrases. The
response and each phrase are lowercased and stripped of ASCII punctuation (both optional),
embedded with a sentence-transformers model (default: the embedded all-MiniLM-L6-v2), and
compared by cosine similarity. A sample scores 1.0 when any phrase (with match_all=True: every
phrase) reaches similarity_threshold, else 0.0; "score" is the mean over samples. A text longer
than the model's window is read in overlapping windows (the response contains the phrase when
every window of the phrase is similar to some window of the response); the details say so.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the responses to check (an empty response scores 0.0).
    references (per sample: list of str, one str, or a JSON list string): the expected phrases.
Returns:
    score (float): mean of the per-sample scores.
    scores (list of float): 1.0 or 0.0 per sample.
    details (list of dict): per sample: similarities {phrase: float}, matches [bool],
        threshold, match_all, reason when the sample was not compared, and windows
        {"response": int, "phrases": [int]} plus cut (bool) when a text was longer than the
        model's window.
Examples:
    >>> slc = evaluate.load("metrics/semantic_list_contains")
    >>> result = slc.compute(predictions=["The quick brown fox jumps over the lazy dog."],
    ...                      references=[["brown fox", "lazy dog", "dancing giraffe"]],
    ...                      similarity_threshold=0.6)
    >>> result["score"], result["details"][0]["matches"]
    (1.0, [True, False, False])
"""

EMPTY_RESPONSE = "Empty response"
NO_PHRASES = "No expected phrases to match"


class SemanticListContains(ValidatedMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION, ("https://docs.futureagi.com/",),
                  codebase_urls=("https://github.com/future-agi/ai-evaluation",))
    INPUTS = (
        Input("predictions", allow_empty=True),
        Input("references", kind="phrases", column="expected"),
    )
    OPTIONS = (
        Option("case_insensitive", bool, True, doc="lowercase texts before embedding"),
        Option("remove_punctuation", bool, True,
               doc="remove ASCII punctuation before embedding"),
        Option("match_all", bool, False,
               doc="require every phrase to match (otherwise any one)"),
        Option("similarity_threshold", float, 0.7, range=(0, 1),
               doc="minimum cosine similarity of a match (typical range 0.5-0.9)"),
        *EMBEDDING_OPTIONS,
        Option("batch_size", int, 64, range=(1, None), doc="encoding batch size"),
    )
    HEADLINE = ("score",)
    USES_EMBEDDINGS = True
    EXAMPLE = Example(
        {"predictions": ["The quick brown fox jumps over the lazy dog.",
                         "I had pasta for dinner."],
         "references": [["brown fox", "lazy dog", "dancing giraffe"], ["brown fox"]]},
        {"similarity_threshold": 0.6},
    )

    def _compute(
        self,
        predictions: list[str],
        references: list[list[str]],
        case_insensitive: bool = True,
        remove_punctuation: bool = True,
        match_all: bool = False,
        similarity_threshold: float = 0.7,
        embedding_model: str | None = None,
        batch_size: int = 64,
    ) -> dict[str, Any]:
        lowercase, drop, threshold = case_insensitive, remove_punctuation, similarity_threshold

        def prep(value: str) -> str:
            return text.preprocess_phrase(value, lowercase=lowercase, drop_punctuation=drop)

        # one row per (sample, phrase) pair: the response's and the phrase's processed text
        measured = [
            i for i, (response, phrases) in enumerate(zip(predictions, references, strict=True))
            if response.strip() and phrases
        ]
        pair_sample: list[int] = []
        pair_texts: list[str] = []
        response_texts: list[str] = []
        for i in measured:
            response_texts.append(prep(predictions[i]))
            for phrase in references[i]:
                pair_sample.append(i)
                pair_texts.append(prep(phrase))
        distinct: dict[str, int] = {}
        for t in (*response_texts, *pair_texts):
            distinct.setdefault(t, len(distinct))
        windows: list[Any] = []
        response_row: dict[int, int] = {}
        if distinct:
            vectors, rows, windows = embed_windows(list(distinct), model=embedding_model,
                                                   batch_size=batch_size)
            # one row per text (its first window); texts that fit are compared as before
            first = vectors[[r[0] for r in rows]]
            response_row = dict(zip(measured, (distinct[t] for t in response_texts), strict=True))
            left = np.asarray([response_row[i] for i in pair_sample], dtype=np.intp)
            right = np.asarray([distinct[t] for t in pair_texts], dtype=np.intp)
            similarity = np.einsum("ij,ij->i", first[left], first[right]).tolist()
            several = np.fromiter((len(r) > 1 for r in rows), dtype=bool, count=len(rows))
            for k in np.flatnonzero(several[left] | several[right]).tolist():
                # every window of the phrase against its best window of the response
                phrase, response = vectors[rows[right[k]]], vectors[rows[left[k]]]
                similarity[k] = float((phrase @ response.T).max(axis=1).min())
        else:
            similarity = []
        any_windowed = any(w.windowed for w in windows)

        scores: list[float] = []
        details: list[dict[str, Any]] = []
        cursor = 0
        measured_set = set(measured)
        for i, (response, phrases) in enumerate(zip(predictions, references, strict=True)):
            detail: dict[str, Any] = {
                "similarities": {}, "matches": [], "threshold": threshold, "match_all": match_all,
            }
            if i not in measured_set:
                detail["reason"] = EMPTY_RESPONSE if not response.strip() else NO_PHRASES
                scores.append(0.0)
                details.append(detail)
                continue
            values = similarity[cursor:cursor + len(phrases)]
            if any_windowed:
                read = [windows[distinct[t]] for t in pair_texts[cursor:cursor + len(phrases)]]
                response_read = windows[response_row[i]]
                if response_read.windowed or any(w.windowed for w in read):
                    detail["windows"] = {"response": len(response_read.parts),
                                         "phrases": [len(w.parts) for w in read]}
                    detail["cut"] = response_read.cut or any(w.cut for w in read)
            cursor += len(phrases)
            matches = [v >= threshold for v in values]
            detail["similarities"] = dict(zip(phrases, values, strict=True))
            detail["matches"] = matches
            hit = all(matches) if match_all else any(matches)
            scores.append(1.0 if hit else 0.0)
            details.append(detail)
        return build_output({"score": float(np.mean(scores))},
                            [SampleResult.measured(s, **d) for s, d in zip(scores, details,
                                                                             strict=True)])
