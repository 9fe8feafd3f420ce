"""The agreement rows of the metrics judged by the user's own criteria (`make agreement`):
g_eval on SummEval coherence and consistency with G-Eval's own criteria and evaluation steps,
and pairwise on pairs of SummEval summaries of the same article, against the human preference.

G-Eval's texts are those of its SummEval prompts (Liu et al. 2023; github.com/nlpyang/geval,
prompts/summeval/coh_detailed.txt and the consistency prompt's criteria and first three steps;
the repository's current con_scorer.txt adds steps for a multi-agent discussion, left out here).
Only the criteria and the steps are taken: the fencing, the scale line and the one-token answer
are g_eval's own prompt.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import numpy as np

GEVAL_COHERENCE = {
    "criteria": (
        "Coherence (1-5) - the collective quality of all sentences. We align this dimension "
        "with the DUC quality question of structure and coherence whereby \"the summary should "
        "be well-structured and well-organized. The summary should not just be a heap of "
        "related information, but should build from sentence to a coherent body of information "
        "about a topic.\""),
    "evaluation_steps": [
        "Read the news article carefully and identify the main topic and key points.",
        "Read the summary and compare it to the news article. Check if the summary covers the "
        "main topic and key points of the news article, and if it presents them in a clear and "
        "logical order.",
        "Assign a score for coherence on a scale of 1 to 5, where 1 is the lowest and 5 is the "
        "highest based on the Evaluation Criteria.",
    ],
}
GEVAL_CONSISTENCY = {
    "criteria": (
        "Consistency (1-5) - the factual alignment between the summary and the summarized "
        "source. A factually consistent summary contains only statements that are entailed by "
        "the source document. Annotators were also asked to penalize summaries that contained "
        "hallucinated facts."),
    "evaluation_steps": [
        "Read the news article carefully and identify the main facts and details it presents.",
        "Read the summary and compare it to the article. Check if the summary contains any "
        "factual errors that are not supported by the article.",
        "Assign a score for consistency based on the Evaluation Criteria.",
    ],
}
# the human preference between two summaries: the higher mean of the experts' four ratings
DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
PAIRWISE_CRITERIA = ("Which summary is the better summary of the article: coherent, factually "
                     "consistent with the article, fluent, and covering its key points?")


def summeval_pairs(rows: list[dict[str, Any]], seed: int = 0) -> list[dict[str, Any]]:
    """Pairs of summaries of the same article (the article's summaries in file order, taken two
    by two, so no summary is in two pairs), pairs with equal mean ratings skipped; a seeded coin
    decides which summary is the ``prediction``, so the label is not always the same side.
    ``preferred``: whether the people preferred the prediction."""
    rng = np.random.default_rng(seed)
    by_article: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_article[row["article_id"]].append(row)
    pairs = []
    for article, summaries in by_article.items():
        for first, second in zip(summaries[0::2], summaries[1::2], strict=False):
            if rng.random() < 0.5:
                first, second = second, first
            mine, theirs = (float(np.mean([r[d] for d in DIMENSIONS])) for r in (first, second))
            if mine == theirs:
                continue
            pairs.append({"id": f"{first['id']}-vs-{second['id']}", "article_id": article,
                          "source": first["source"], "prediction": first["summary"],
                          "baseline_prediction": second["summary"], "preferred": mine > theirs,
                          "rating_difference": mine - theirs})
    return pairs


def pairwise_note(scored: Any, label: str = "preferred") -> str:
    """Accuracy against the human preference (a score above 0.5 picks the prediction; an exact
    0.5 counts as wrong), position consistency and position bias of the scored pairs."""
    from shared.kit.scoring import Preference, pairwise_summary

    picks, preferences = [], []
    for score, details, preferred in zip(scored["pairwise"], scored["pairwise_details"],
                                         scored[label], strict=True):
        if score is None:
            continue
        orders = json.loads(details)["orders"]
        preferences.append(Preference(*(o["p_prediction"] for o in orders)))
        picks.append(score != 0.5 and (score > 0.5) == bool(preferred))
    if not picks:
        return "no pair measured"
    summary = pairwise_summary(preferences, 0.0)
    return (f"accuracy vs the human preference {sum(picks) / len(picks):.2f} ({len(picks)} "
            f"pairs); position consistency {summary['position_consistency']:.2f}; position "
            f"bias {summary['position_bias']:+.2f}")
