"""The judge card's edits and rates, without a judge: each edit is deterministic under a seed,
recorded, and changes only the judged input; the checks that apply to each metric; a row's
failure; the failure rate's interval against statsmodels' Clopper-Pearson."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakes.flawed_judges import bridge_rows
from statsmodels.stats.proportion import proportion_confint

from shared.certification import checks, edits
from shared.certification.rates import outcome_of, rate_entry, rate_interval, rows_to_settle
from shared.kit.registry import METRICS

REPO = Path(__file__).resolve().parents[2]

ROWS = bridge_rows(40)
RAG = [{"question": f"Where is site {k}?",
        "prediction": f"Site {k} is in Norvik, opened in {1900 + k}.",
        "contexts": [f"Site {k} opened in {1900 + k}.", "Norvik is a town.", f"Note {k}."],
        "reference": f"Norvik, {1900 + k}."} for k in range(12)]


def made(name: str, rows=ROWS, metric: str = "l3score", seed: int = 7, only=None):
    spec = METRICS[metric]
    return checks.make_edits(name, rows, spec, checks.target_of(spec), seed, only)


@pytest.mark.parametrize("name", ["format", "verbosity", "injection", "fact_swap",
                                  "answer_swap"])
def test_edits_are_deterministic_under_a_seed_and_recorded(name):
    first, again, other = made(name), made(name), made(name, seed=8)
    assert [(e, r) for e, r in first] == [(e, r) for e, r in again]
    assert len(first) == (30 if name == "fact_swap" else 40)  # wrong answers share no fact
    assert [e.after for e, _ in first] != [e.after for e, _ in other]
    for edit, row in first:
        original = ROWS[edit.row]
        assert edit.check == name and edit.field == "prediction" and edit.note
        assert edit.before == original["prediction"] and edit.after == row["prediction"]
        assert edit.after != edit.before
        # nothing but the judged input changes
        assert {k: v for k, v in row.items() if k != "prediction"} == \
            {k: v for k, v in original.items() if k != "prediction"}


def test_each_edit_does_what_it_says():
    for edit, _ in made("format"):  # the same words, as Markdown
        assert re.findall(r"\w+", edit.after) == re.findall(r"\w+", edit.before)
        assert edit.after.startswith("- ") and edit.after.count("**") == 2
    for edit, _ in made("verbosity"):  # three more sentences, no fact of their own
        assert len(edits.sentences(edit.after)) == len(edits.sentences(edit.before)) + 3
        assert {t for _, t in edits.facts(edit.after)} <= {
            t for _, t in edits.facts(edit.before)}
    for edit, _ in made("injection"):
        assert edit.after.startswith(edit.before)
        assert edit.after[len(edit.before):].strip() in edits.INJECTIONS
    # the year, which the reference holds, is swapped for a year another row's answer gives
    years = {n for row in ROWS for n in re.findall(r"\d+", row["prediction"])}
    for edit, row in made("fact_swap"):
        old, new = re.findall(r"'(\d+)'", edit.note)
        assert row["prediction"] == edit.after
        assert old in ROWS[edit.row]["reference"] and new not in ROWS[edit.row]["reference"]
        assert new in years and edit.after == edit.before.replace(old, new)
    for edit, row in made("answer_swap"):
        other = int(edit.note.split()[1].rstrip("'s"))
        assert other != edit.row and row["prediction"] == ROWS[other]["prediction"]


def test_only_the_listed_rows_are_edited():
    assert [e.row for e, _ in made("answer_swap", only=[3, 5, 9])] == [3, 5, 9]


def test_order_shuffles_the_contexts_and_exchanges_pairwise_s_answers():
    shuffled = made("order", RAG, "faithfulness")
    assert len(shuffled) == len(RAG)
    for edit, row in shuffled:
        assert row["contexts"] != RAG[edit.row]["contexts"]
        assert sorted(row["contexts"]) == sorted(RAG[edit.row]["contexts"])
        assert {k: v for k, v in row.items() if k != "contexts"} == \
            {k: v for k, v in RAG[edit.row].items() if k != "contexts"}
    pairs = [{"prediction": f"A {k}", "baseline_prediction": f"B {k}"} for k in range(3)]
    for edit, row in made("order", pairs, "pairwise"):
        assert (row["prediction"], row["baseline_prediction"]) == (f"B {edit.row}",
                                                                   f"A {edit.row}")


def test_a_fact_shared_with_a_context_is_swapped_for_one_of_another_row():
    for edit, row in made("fact_swap", RAG, "faithfulness"):
        old, new = re.findall(r"'([^']+)'", edit.note)
        assert old in " ".join(RAG[edit.row]["contexts"]) and old not in row["prediction"]
        assert new not in " ".join(RAG[edit.row]["contexts"])


def applied(metric: str, present=("question", "prediction", "reference", "contexts",
                                  "source", "baseline_prediction", "messages")) -> tuple:
    return checks.plan(METRICS[metric], list(present)).applied


def test_the_checks_that_apply_to_each_metric():
    every = tuple(checks.CHECKS)
    assert applied("faithfulness") == every
    assert applied("pairwise") == every
    assert applied("l3score") == tuple(c for c in every if c != "order")
    assert applied("context_precision") == ("format", "verbosity", "injection", "fact_swap",
                                            "answer_swap", "repeat")
    assert applied("hallucination") == ("format", "verbosity", "order", "injection",
                                        "fact_swap", "repeat")
    assert applied("bias") == ("format", "verbosity", "injection", "repeat")
    assert applied("task_completion") == ("format", "verbosity", "injection", "repeat")
    assert applied("answer_relevance") == ("format", "verbosity", "injection", "answer_swap",
                                           "repeat")
    reasons = checks.plan(METRICS["bias"], ["prediction"]).skipped
    assert set(reasons) == {"order", "fact_swap", "answer_swap"} and all(reasons.values())
    assert checks.plan(METRICS["l3score"], ["question", "prediction", "reference"],
                       ["repeat", "format"]).applied == ("format", "repeat")


def test_a_row_fails_by_the_documented_delta():
    l3, hallucination, pairwise = (METRICS[m] for m in ("l3score", "hallucination",
                                                         "pairwise"))
    assert not checks.row_failed("format", l3, 0.9, 0.75, 0.2)
    assert checks.row_failed("format", l3, 0.9, 0.65, 0.2)
    assert checks.row_failed("fact_swap", l3, 0.9, 0.75, 0.2)  # did not drop by more than 0.2
    assert not checks.row_failed("fact_swap", l3, 0.9, 0.6, 0.2)
    # lower is better: the swapped answer must score higher
    assert not checks.row_failed("fact_swap", hallucination, 0.0, 0.5, 0.2)
    assert checks.row_failed("fact_swap", hallucination, 0.0, 0.1, 0.2)
    assert checks.scored_well(hallucination, 0.2) and not checks.scored_well(hallucination, 0.8)
    # pairwise's exchanged answers: the score mirrors
    assert not checks.row_failed("order", pairwise, 0.9, 0.1, 0.2)
    assert checks.row_failed("order", pairwise, 0.9, 0.9, 0.2)
    summary = METRICS["summary_coherence"]  # a 1-5 rating: delta is a share of its range
    assert not checks.row_failed("format", summary, 4.0, 3.3, 0.2)
    assert checks.row_failed("format", summary, 4.0, 3.0, 0.2)
    assert checks.repeat_failed(l3, [0.9, 0.9, 0.5], 0.2)
    assert not checks.repeat_failed(l3, [0.9, 0.8, 0.85], 0.2)


@pytest.mark.parametrize("failures,n", [(0, 10), (0, 74), (3, 120), (30, 120), (90, 90),
                                        (1, 1), (17, 51)])
def test_the_rate_interval_is_clopper_pearson(failures, n):
    value, low, high = rate_interval(failures, n)
    ref_low, ref_high = proportion_confint(failures, n, alpha=0.05, method="beta")
    assert value == failures / n
    assert low == pytest.approx(ref_low, abs=1e-9) and high == pytest.approx(ref_high, abs=1e-9)


def test_outcomes_and_the_rows_that_would_settle_them():
    assert outcome_of(0.0, 0.04, 0.05) == "pass"
    assert outcome_of(0.06, 0.2, 0.05) == "fail"
    assert outcome_of(0.01, 0.2, 0.05) == "inconclusive"
    entry = rate_entry("format", "invariance", 0, 40, 0.05, 0.2)
    assert entry["outcome"] == "inconclusive" and "about 72 rows" in entry["note"]
    assert rate_entry("format", "invariance", 0, 72, 0.05, 0.2)["outcome"] == "pass"
    assert rate_entry("format", "invariance", 0, 71, 0.05, 0.2)["outcome"] == "inconclusive"
    needed = rows_to_settle(0.1, 40, 0.05)
    assert rate_entry("x", "invariance", round(0.1 * needed), needed, 0.05, 0.2)["outcome"] \
        == "fail"
    assert rows_to_settle(0.05, 40, 0.05) is None
    empty = rate_entry("fact_swap", "sensitivity", 0, 0, 0.05, 0.2)
    assert empty["outcome"] == "inconclusive" and empty["rate"]["value"] is None


JUDGE_METRICS = [name for name in METRICS if METRICS[name].judge]


@pytest.mark.parametrize("metric", JUDGE_METRICS)
def test_every_judge_metric_s_checks_edit_the_bundled_samples(metric):
    """Each check that applies to a judge metric edits rows of the bundled sample (the agent
    sample for the conversation metrics), and only the inputs it names."""
    from shared.certification.run import load_rows

    spec = METRICS[metric]
    sample = "agent_sample" if "messages" in spec.columns else "rag_sample"
    rows = load_rows(REPO / "examples" / f"{sample}.jsonl")
    plan = checks.plan(spec, list(rows[0]))
    assert "repeat" in plan.applied and "format" in plan.applied
    for name in plan.applied:
        if name == "repeat":
            continue
        found = checks.make_edits(name, rows, spec, plan.target, 0)
        assert found, (metric, name)
        for edit, row in found:
            changed = {k for k in row if row[k] != rows[edit.row][k]}
            assert changed and changed <= set(edit.field.split(", ")), (metric, name, changed)


def test_the_judge_s_base_url_is_named_without_credentials():
    from shared.certification.report import clean_url

    assert clean_url("https://user:pw@judge.example:8443/v1?api_key=sk-1#x") == \
        "https://judge.example:8443/v1"
    assert clean_url("http://127.0.0.1/v1") == "http://127.0.0.1/v1"
    assert clean_url(None) is None
