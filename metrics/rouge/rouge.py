"""ROUGE with Hugging Face evaluate's ``rouge`` interface, offline, scored by a compiled engine
whose floats are identical to Google's ``rouge_score`` (``rouge-score-rs``; ``rouge_score``
itself when that is not installed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import evaluate
import numpy as np

from shared import Input, ValidatedMetric, text, validation

_CITATION = """\
@inproceedings{lin-2004-rouge,
    title = "{ROUGE}: A Package for Automatic Evaluation of Summaries",
    author = "Lin, Chin-Yew",
    booktitle = "Text Summarization Branches Out",
    month = jul,
    year = "2004",
    address = "Barcelona, Spain",
    publisher = "Association for Computational Linguistics",
    url = "https://www.aclweb.org/anthology/W04-1013",
    pages = "74--81",
}
"""

_DESCRIPTION = """\
ROUGE (Recall-Oriented Understudy for Gisting Evaluation) compares a generated text with one or
more references by overlapping n-grams (rouge1, rouge2, ... rouge9), the longest common
subsequence (rougeL) and the summary-level LCS over newline-separated sentences (rougeLsum).
Each value is an F-measure in [0, 1], identical to Google's rouge_score package (the engine
behind Hugging Face evaluate's rouge); with several references a sample takes, per ROUGE type,
its best reference (rouge_score's score_multi).
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the generated texts (may be empty strings).
    references (list of str or list of list of str): one or several references per prediction.
    rouge_types (list of str): any of "rouge1" ... "rouge9", "rougeL", "rougeLsum". Default
        ["rouge1", "rouge2", "rougeL", "rougeLsum"].
    use_aggregator (bool): return the mean over samples per type (True, default) or the list of
        per-sample values (False).
    use_stemmer (bool): Porter-stem tokens longer than 3 characters. Default False.
    tokenizer (callable or object with .tokenize): replaces rouge_score's default tokenizer
        (lowercase, keep [a-z0-9] runs). Default None.
Returns:
    rouge1, rouge2, rougeL, rougeLsum (float, or list of float with use_aggregator=False): one key
        per requested type.
    scores (list of dict): per sample, {rouge type: F-measure}.
Examples:
    >>> rouge = evaluate.load("metrics/rouge")
    >>> result = rouge.compute(predictions=["hello there", "general kenobi"],
    ...                        references=["hello there", "general kenobi"])
    >>> result["rouge1"], result["rougeLsum"]
    (1.0, 1.0)
"""

DEFAULT_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
VALID_TYPES = frozenset({f"rouge{n}" for n in range(1, 10)} | {"rougeL", "rougeLsum"})


class _CallableTokenizer:
    """Adapts a function ``str -> list[str]`` to rouge_score's tokenizer interface (as HF does)."""

    def __init__(self, function: Callable[[str], list[str]]) -> None:
        self.function = function

    def tokenize(self, text: str) -> list[str]:
        return self.function(text)


def _scorer(rouge_types: list[str], use_stemmer: bool, tokenizer: Any) -> Any:
    try:
        from rouge_score_rs import rouge_scorer
    except ImportError:
        from rouge_score import rouge_scorer
    return rouge_scorer.RougeScorer(rouge_types, use_stemmer=use_stemmer, tokenizer=tokenizer)


def _score_pairs(scorer: Any, targets: list[str], predictions: list[str]) -> list[dict[str, Any]]:
    batch = getattr(scorer, "score_batch", None)
    if batch is not None:
        return batch(targets, predictions)
    return [scorer.score(t, p) for t, p in zip(targets, predictions, strict=True)]


class Rouge(ValidatedMetric):
    INPUTS = (Input("predictions", allow_empty=True), Input("references", kind="texts"))

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=self.input_features(),
            codebase_urls=[
                "https://github.com/google-research/google-research/tree/master/rouge",
                "https://github.com/SyntaxSpirits/rougers",
            ],
            reference_urls=["https://en.wikipedia.org/wiki/ROUGE_(metric)"],
        )

    def _compute(
        self,
        predictions: list[str],
        references: list[list[str]],
        rouge_types: list[str] | None = None,
        use_aggregator: bool = True,
        use_stemmer: bool = False,
        tokenizer: Any = None,
    ) -> dict[str, Any]:
        types = _rouge_types(rouge_types)
        use_aggregator = validation.flag("use_aggregator", use_aggregator)
        use_stemmer = validation.flag("use_stemmer", use_stemmer)
        if tokenizer is not None and not hasattr(tokenizer, "tokenize"):
            if not callable(tokenizer):
                raise TypeError(
                    "tokenizer must be a function str -> list[str] or an object with .tokenize, "
                    f"got {type(tokenizer).__name__}"
                )
            tokenizer = _CallableTokenizer(tokenizer)
        scorer = _scorer(types, use_stemmer, tokenizer)

        n = len(references)
        sizes = np.fromiter((len(refs) for refs in references), dtype=np.intp, count=n)
        if np.all(sizes == 1):
            targets = [refs[0] for refs in references]
            paired = predictions
        else:
            targets = [t for refs in references for t in refs]
            paired = [p for p, n in zip(predictions, sizes.tolist(), strict=True) for _ in range(n)]
        with text.paused_gc():
            raw = _score_pairs(scorer, targets, paired)
            starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
            per_type: dict[str, np.ndarray] = {}
            for key in types:
                values = np.fromiter((s[key].fmeasure for s in raw), dtype=np.float64,
                                     count=len(raw))
                per_type[key] = values if len(raw) == n else np.maximum.reduceat(values, starts)
            columns = {key: values.tolist() for key, values in per_type.items()}
            result: dict[str, Any] = {
                key: (float(values.mean()) if use_aggregator else columns[key])
                for key, values in per_type.items()
            }
            rows = zip(*columns.values(), strict=True)
            result["scores"] = [dict(zip(types, row, strict=True)) for row in rows]
        return result


def _rouge_types(rouge_types: Any) -> list[str]:
    if rouge_types is None:
        return list(DEFAULT_TYPES)
    if isinstance(rouge_types, str):
        rouge_types = [rouge_types]
    items = validation.as_list("rouge_types", rouge_types)
    if not items:
        raise ValueError("rouge_types is empty")
    for i, item in enumerate(items):
        if item not in VALID_TYPES:
            raise ValueError(
                f"rouge_types[{i}] is {item!r}; valid: rouge1 ... rouge9, rougeL, rougeLsum"
            )
    return list(dict.fromkeys(items))
