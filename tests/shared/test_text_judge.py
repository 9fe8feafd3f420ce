"""text_judge: the opinion steps of bias and toxicity and the summary rating step, planned in a
dry run (nothing is sent) so the tests check what would be asked."""

from __future__ import annotations

from shared import get_judge, judge_config, prompts, text_judge


def _dry_judge() -> object:
    return get_judge(judge_config(dry_run=True, show_progress=False, use_cache=False))


def test_bias_and_toxicity_ask_for_the_same_opinions() -> None:
    """One opinion extraction per text whichever metric asks, so the call cache shares it."""
    texts = ["I love this city.", "Tax is theft."]
    bias, toxicity = _dry_judge(), _dry_judge()
    text_judge.flagged_opinion_share(bias, texts, prompts.BIAS, "bias")
    text_judge.flagged_opinion_share(toxicity, texts, prompts.TOXICITY, "toxicity")
    assert bias.plan()["requests"] == toxicity.plan()["requests"] == 2 + 2
    assert bias.plan()["prompt_tokens"] > 0


def test_a_dry_run_leaves_every_sample_unmeasured_with_the_step_named() -> None:
    results = text_judge.flagged_opinion_share(_dry_judge(), ["Fine words."], prompts.BIAS,
                                               "bias")
    assert [r.score for r in results] == [None]
    assert results[0].unmeasured_reason.startswith("opinions: dry run")


def test_summary_ratings_are_one_request_per_sample() -> None:
    judge = _dry_judge()
    steps = text_judge.rate_summaries(judge, ["Source one.", "Source two."], ["S1.", "S2."])
    assert [s.ok for s in steps] == [False, False]
    assert all(s.error.startswith("summary_coherence: dry run") for s in steps)
    assert judge.plan()["requests"] == 2
