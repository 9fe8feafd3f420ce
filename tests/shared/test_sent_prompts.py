"""Which prompts a metric sends has one answer (shared.kit.sent_prompts): for every judge metric,
g_eval with its criteria (and its reason's prompt with ``explain``) and pairwise among them, the
run report's prompt versions, the ``prompts`` property of ``assert_metric``'s JUnit record, an
alignment profile's prompt record and a judge card's prompts are the one declared set; and that
set is what the metric really sends: every request a recording judge is given carries a declared
prompt id and the declared text with the row's texts in its fields, and every declared prompt
is sent by some input the metric takes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from dry_runs import RecordingJudge
from judgeserver import JudgeServer

from shared.analysis.alignment_few_shot import few_shot_scores
from shared.analysis.alignment_profile import changed_prompts
from shared.analysis.report import write_score_html
from shared.certification.card import check_card, read_card, write_card
from shared.certification.report import build_report
from shared.engine.config import judge_config
from shared.integrations.assertions import prompt_digests
from shared.kit.registry import METRICS, load, metric_class
from shared.kit.sent_prompts import metric_prompts, prompt_records, records_text
from shared.runs.chunks import score_column_names

JUDGE_METRICS = [name for name in METRICS if METRICS[name].judge]
JUDGE = {"provider": "openai", "model": "gpt-4o-mini", "api_key": "sk-a-test-key"}
G_EVAL_OPTIONS = {"criteria": "Is the reply polite?", "evaluation_steps": ["Read it.", "Rate."],
                  "rubric": {"1": "rude", "5": "warm"}, "score_range": [1, 5], "explain": True}
# every judge metric with its example's options, and the two whose prompts are written from
# their options with options of their own
CASES = [(name, dict(METRICS[name].example.options)) for name in JUDGE_METRICS] + [
    ("g_eval", G_EVAL_OPTIONS), ("pairwise", {"criteria": "Which answer is shorter?"})]


def _case_id(case: tuple[str, dict[str, Any]]) -> str:
    return case[0] + ("-" + "-".join(sorted(case[1])) if case[1] else "")


# --- every place that shows them shows the declared set --------------------------------------

def report_prompts(metric: str, options: dict[str, Any], tmp_path: Path) -> list[str]:
    """The run report's "prompt versions" of a run of ``metric`` with ``options``."""
    column = next(iter(score_column_names(metric, METRICS[metric]).values()))
    low, high = METRICS[metric].score_range
    html = write_score_html([{"question": "q", column: low}, {"question": "r", column: high}],
                            None, tmp_path / "report.html",
                            metric_options={metric: options})
    shown = re.search(r"<dt>prompt versions</dt><dd>(.*?)</dd>", html)
    assert shown, "the report names no prompt versions"
    return shown.group(1).split(", ")


def card_prompts(metric: str, options: dict[str, Any], tmp_path: Path) -> list[dict[str, str]]:
    """The prompts of a judge card of ``metric`` with ``options``, written and read back (and
    accepted for a run with the same judge and options)."""
    scorer = SimpleNamespace(config=judge_config(**JUDGE), metric_options=options, usage={},
                             judges=0)
    report = build_report({"judge": []}, SimpleNamespace(skipped={}), [{"row": 1}], metric,
                          METRICS[metric], scorer, {}, seed=0, repeats=1, tolerance=0.05,
                          delta=0.1)
    path = tmp_path / "card.md"
    write_card(report, path)
    check_card(path, [metric], {**JUDGE, **options})  # the run's prompts are the card's
    return read_card(path)["prompts"]


def profile_prompts(metric: str, options: dict[str, Any]) -> list[dict[str, str]]:
    """The prompt record ``align --few-shot`` saves in a profile (a run where the judge agreed
    with every label: no row is scored again)."""
    scores = np.array([1.0, 0.0, 1.0, 0.0])
    found = few_shot_scores(None, SimpleNamespace(column_names=[]), metric, "label", scores,
                            [1.0, 0.0, 1.0, 0.0], 1, np.array([0, 0, 1, 1]), 0.5, 0,
                            {"metric_options": options, **JUDGE})
    assert changed_prompts(found["prompt"], metric, options) == []  # score --profile reads it
    return found["prompt"]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_reports_junit_profile_and_card_show_the_declared_prompts(
        case: tuple[str, dict[str, Any]], tmp_path: Path) -> None:
    metric, options = case
    declared = prompt_records(metric, options)
    assert declared, f"{metric} declares no prompt"
    ids = [f"{r['name']}@{r['version']}" for r in declared]
    assert report_prompts(metric, options, tmp_path) == ids
    assert prompt_digests(metric, {**JUDGE, **options}) == records_text(declared)
    assert profile_prompts(metric, options) == declared
    assert card_prompts(metric, options, tmp_path) == declared


def test_g_eval_s_and_pairwise_s_prompts_are_declared_and_follow_their_options() -> None:
    assert [r["name"] for r in prompt_records("g_eval", G_EVAL_OPTIONS)] == [
        "g_eval", "g_eval_reason"]
    assert [r["name"] for r in prompt_records("pairwise")] == ["pairwise"]
    polite = metric_prompts("g_eval", G_EVAL_OPTIONS)[0].text
    assert "Is the reply polite?" in polite and "1. Read it." in polite and "5: warm" in polite
    assert "{criteria}" in metric_prompts("g_eval")[0].text  # no criteria: a placeholder
    shorter = prompt_records("pairwise", {"criteria": "Which answer is shorter?"})
    assert shorter != prompt_records("pairwise")  # other criteria, another prompt text
    assert prompt_records("rouge") == [] and prompt_records("accuracy") == []
    # a judge option, or a key the metric does not take, changes nothing
    assert prompt_records("pairwise", {**JUDGE, "no_such_option": 1}) == prompt_records(
        "pairwise")


def test_every_scoring_prompt_is_a_declared_prompt() -> None:
    for name in JUDGE_METRICS:
        declared = {t.name for t in metric_prompts(name, METRICS[name].example.options)}
        assert set(METRICS[name].scoring_prompts) <= declared, name


# --- the declared prompts are what is sent ----------------------------------------------------

_MATERIAL = re.compile(r"(?:Question|Source text|Reference answer|Contexts \(JSON list\)):\n"
                       r"<data-(\w+)-[0-9a-f]{12}>\n.*?\n</data-\1-[0-9a-f]{12}>\n\n", re.DOTALL)
_FENCE = re.compile(r"<data-(\w+)-[0-9a-f]{12}>\n.*?\n</data-\1-[0-9a-f]{12}>", re.DOTALL)


def _shape(text: str) -> str:
    """A prompt's text with every fenced text taken out (its fence's name kept) and the
    material a row may or may not show (question, source, reference, contexts) left out."""
    return _FENCE.sub(r"<data-\1>", _MATERIAL.sub("", text))


def fits(template: Any, sent: str) -> bool:
    """``sent`` is ``template``'s text with some values in its fields."""
    declared = template.text if not template.fenced else template.render(
        **{field: "{" + field + "}" for field in template.fields()})
    pattern = re.sub(r"\\\{[a-z_]+\\\}", ".*?", re.escape(_shape(declared)))
    return re.fullmatch(pattern, _shape(sent), re.DOTALL) is not None


def sent_requests(name: str, inputs: dict[str, Any], options: dict[str, Any]
                  ) -> list[tuple[str, str]]:
    """Each request (prompt id, text) a dry run of ``name`` on ``inputs`` gives its judge."""
    metric = metric_class(name)()
    given = metric.validate_inputs(dict(inputs))
    optional = {i.name: given.get(i.name) for i in metric.INPUTS if not i.required}
    judge = RecordingJudge(judge_config(**JUDGE, dry_run=True))
    metric.score_samples(judge, {**given, **optional}, metric.check_options(options))
    return judge.seen


def input_variants(name: str) -> list[dict[str, Any]]:
    """The metric's example, then the example without each optional input it gives."""
    inputs = dict(METRICS[name].example.inputs)
    optional = [i.name for i in metric_class(name).INPUTS if not i.required and i.name in inputs]
    return [inputs] + [{k: v for k, v in inputs.items() if k != o} for o in optional]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_the_declared_prompts_are_the_prompts_sent(case: tuple[str, dict[str, Any]]) -> None:
    name, options = case
    declared = {t.prompt_id: t for t in metric_prompts(name, options)}
    sent_ids = set()
    for inputs in input_variants(name):
        for prompt_id, text in sent_requests(name, inputs, options):
            assert prompt_id in declared, f"{name} sends {prompt_id}, not declared"
            assert fits(declared[prompt_id], text), (name, prompt_id, text)
            sent_ids.add(prompt_id)
    assert sent_ids == set(declared), f"{name} declares {set(declared) - sent_ids}, never sent"


def test_a_fake_judge_receives_g_eval_s_and_pairwise_s_declared_prompts(
        tmp_path: Path) -> None:
    """Over HTTP, as a judge server receives them: g_eval with criteria, steps, a rubric and
    ``explain``; pairwise with its criteria and the materials it shows."""

    def answer(body: dict[str, Any]) -> str:
        text = body["messages"][0]["content"]
        return '{"reason": "It thanks the customer."}' if "say why" in text else (
            "A" if "Answer A:" in text else "4")

    runs = [("g_eval", {"predictions": ["Thanks, your refund is on its way."],
                        "questions": ["Where is my refund?"]}, G_EVAL_OPTIONS),
            ("pairwise", {"predictions": ["Paris."], "baseline_predictions": ["Lyon."],
                          "questions": ["Capital of France?"], "contexts": [["Paris is it."]]},
             {"criteria": "Which answer is shorter?"})]
    for name, inputs, options in runs:
        declared = {t.prompt_id: t for t in metric_prompts(name, options)}
        with JudgeServer(answer) as server:
            load(name).compute(**inputs, **options, provider="openai-compatible",
                               base_url=server.url, model="m", show_progress=False,
                               cache_dir=str(tmp_path / name))
        texts = [body["messages"][0]["content"] for body in server.seen]
        assert texts, name
        matched = {pid for pid, template in declared.items()
                   for text in texts if fits(template, text)}
        assert matched == set(declared), (name, texts)
        assert all(any(fits(t, text) for t in declared.values()) for text in texts)


def test_a_changed_text_does_not_fit_its_declaration() -> None:
    template = metric_prompts("faithfulness")[0]
    sent = template.render(**{field: "x" for field in template.fields()})
    assert fits(template, sent)
    assert not fits(template, sent.replace("Text inside", "Text within"))
    g_eval = metric_prompts("g_eval", G_EVAL_OPTIONS)[0]
    other = metric_prompts("g_eval", {**G_EVAL_OPTIONS, "criteria": "Is it short?"})[0]
    assert not fits(g_eval, other.text.replace("{prediction}", "Hi."))
    assert json.dumps(prompt_records("g_eval", G_EVAL_OPTIONS))  # records are plain JSON
