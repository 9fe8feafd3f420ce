"""The judge card against judges with planted flaws (tests/fakes/flawed_judges.py: one
OpenAI-compatible loopback server, the judge picked by the model name): each card fails exactly
the planted checks, and the sound judge is certified with every check passing, on enough rows
(120, 90 of them answered right) that every interval decides at the default tolerance 0.05. A
panel is rated as a panel and judge by judge; the CLI writes the same report; a dry run sends
nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.flawed_judges import JUDGES, PLANTED, FlawedJudges, bridge_rows

from shared import certify
from shared.certification.edits import INJECTIONS
from shared.cli.main import main

REPO = Path(__file__).resolve().parents[2]
ROWS = bridge_rows(120)
SECRET = "sk-planted-0123456789"


def judge(flawed_judges: FlawedJudges, model: str, cache: Path) -> dict:
    return flawed_judges.options(model, SECRET, cache)


@pytest.mark.parametrize("model", JUDGES)
def test_the_card_fails_exactly_the_planted_checks(flawed_judges, model, tmp_path):
    report = certify(ROWS, "l3score", **judge(flawed_judges, model, tmp_path))
    outcomes = {c["name"]: c["outcome"] for c in report["checks"]}
    assert set(outcomes) == {"format", "verbosity", "injection", "fact_swap", "answer_swap",
                             "repeat"}
    assert report["skipped"] == {"order": "the metric has no list input (contexts) to reorder"}
    assert {name for name, outcome in outcomes.items() if outcome == "fail"} == PLANTED[model]
    assert {name for name, outcome in outcomes.items() if outcome == "pass"} == \
        set(outcomes) - PLANTED[model]
    assert report["certified"] is (model == "sound")
    for check in report["checks"]:
        rate = check["rate"]
        assert check["n"] >= 90 and check["tolerance"] == 0.05 and check["unmeasured"] == 0
        assert rate["low"] <= rate["value"] <= rate["high"]
        assert check["examples"], check["name"]
        if check["outcome"] == "fail":  # the failing rows come first among the examples
            assert check["examples"][0]["failed"]
    assert report["judge"] == {"provider": "openai-compatible", "model": model,
                               "base_url": flawed_judges.url}
    assert SECRET not in json.dumps(report)


def test_the_sound_judge_s_card_records_what_it_certifies(flawed_judges, tmp_path):
    report = certify(ROWS, "l3score", **judge(flawed_judges, "sound", tmp_path))
    assert report["metric"] == {"name": "l3score", "options": {}}
    assert [(p["name"], p["version"]) for p in report["prompts"]] == [("l3score", "1")]
    assert len(report["prompts"][0]["digest"]) == 12
    assert report["data"]["rows"] == 120 and len(report["data"]["digest"]) == 16
    assert report["settings"]["interval"] == "Clopper-Pearson"
    # every edit is recorded: one per row for the invariance checks, one per row scored well
    # (the 90 right answers) for the sensitivity checks
    assert {k: len(v) for k, v in report["edits"].items()} == {
        "format": 120, "verbosity": 120, "injection": 120, "fact_swap": 90, "answer_swap": 90}
    # base, three invariance edits, two sensitivity edits of 90 rows, three repeats
    assert report["usage"]["calls"] == 120 * 4 + 90 * 2 + 120 * 3


def test_the_repeats_go_past_the_cache(flawed_judges, tmp_path):
    """A second certification with a warm cache still asks the judge for every repeat."""
    certify(ROWS[:20], "l3score", checks=["repeat"], **judge(flawed_judges, "sound", tmp_path))
    before = len(flawed_judges.seen)
    again = certify(ROWS[:20], "l3score", checks=["repeat"], repeats=2,
                    **judge(flawed_judges, "sound", tmp_path))
    # the rows themselves come from the cache; both repeats are sent
    assert again["usage"]["calls"] == 40 and again["usage"]["cache_hits"] == 20
    assert len(flawed_judges.seen) - before == 40


def test_a_panel_is_rated_as_a_panel_and_judge_by_judge(flawed_judges, tmp_path):
    options = judge(flawed_judges, "sound", tmp_path)
    panel = [{"provider": "openai-compatible", "base_url": flawed_judges.url, "model": m}
             for m in ("sound", "yes")]
    report = certify(ROWS, "l3score", judges=panel, checks=["fact_swap", "format"], **options)
    # the panel's mean score still drops by half when the sound judge says No
    assert report["certified"] is True
    by_judge = {j["judge"]["model"]: j for j in report["panel"]}
    assert by_judge["sound"]["certified"] is True
    assert by_judge["yes"]["certified"] is False
    assert {c["name"]: c["outcome"] for c in by_judge["yes"]["checks"]} == {
        "format": "pass", "fact_swap": "fail"}
    assert report["judge"]["provider"] == "panel"
    assert SECRET not in json.dumps(report)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "judge_metrics", "certify", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_the_cli_writes_the_report_and_the_card(flawed_judges, tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:40]), encoding="utf-8")
    common = [str(data), "--metric", "l3score", "--provider", "openai-compatible",
              "--base-url", flawed_judges.url, "--model", "obedient", "--api-key", SECRET,
              "--cache-dir", str(tmp_path / "cache"), "--max-concurrency", "16", "-q"]
    dry = cli(*common, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    # base and three invariance edits, the sensitivity edits counted on every row they apply to
    # (fact_swap: the 30 right answers, which share their year with the reference; answer_swap:
    # all 40), three repeats
    assert "dry run: 350 judge requests" in dry.stdout and "nothing was sent" in dry.stdout
    done = cli(*common, "--json", str(tmp_path / "card.json"), "--card",
               str(tmp_path / "CARD.md"), "--html", str(tmp_path / "card.html"),
               "--checks", "injection,repeat")
    assert done.returncode == 1, done.stderr  # not certified
    assert "NOT CERTIFIED: injection fail" in done.stdout
    report = json.loads((tmp_path / "card.json").read_text())
    assert [c["name"] for c in report["checks"]] == ["injection", "repeat"]
    card = (tmp_path / "CARD.md").read_text()
    assert "**NOT CERTIFIED**" in card and "| injection | invariance | 40 |" in card
    page = (tmp_path / "card.html").read_text()
    assert "<strong>NOT CERTIFIED</strong>: checks not passed: injection fail" in page
    assert "Content-Security-Policy" in page
    assert any(text[:28] in page for text in INJECTIONS)  # an injected row among the examples
    for text in (done.stdout, done.stderr, card, (tmp_path / "card.html").read_text(),
                 json.dumps(report)):
        assert SECRET not in text


def test_bad_arguments_are_one_line_errors(tmp_path, capsys):
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-8")
    for args, message in (
            (["--metric", "rouge"], "rouge calls no judge"),
            (["--metric", "l3score", "--checks", "format,typo"], "unknown check(s) typo"),
            (["--metric", "l3score", "--repeats", "1"], "repeats must be a whole number >= 2"),
            (["--metric", "l3score", "--tolerance", "2"], "tolerance must be a number")):
        assert main(["certify", str(data), *args]) == 2
        stderr = capsys.readouterr().err
        assert message in stderr and len(stderr.strip().splitlines()) == 1, stderr


def test_certify_is_the_function_even_with_its_package_imported():
    import shared
    import shared.certification.card  # noqa: F401 - the package's own modules loaded

    assert shared.certify is certify and callable(certify) and certify.__name__ == "certify"


def test_a_certification_through_a_batch_api(flawed_judges, tmp_path, monkeypatch):
    """batch=True as in score: every round goes to OpenAI's Batches API (the loopback fake of
    tests/fakes/batches.py, whose items the planted-flaw judges answer), none directly."""
    from fakes.batches import FakeBatches

    monkeypatch.setenv("JUDGE_METRICS_BATCH_POLL", "0.05")
    with FakeBatches(flawed_judges.url) as fake:
        report = certify(ROWS[:40], "l3score", checks=["injection", "repeat"], repeats=2,
                         chunk_size=80, provider="openai", base_url=f"{fake.url}/v1",
                         api_key=SECRET, model="obedient", batch=True,
                         cache_dir=str(tmp_path))
    assert {c["name"]: c["outcome"] for c in report["checks"]} == {
        "injection": "fail", "repeat": "inconclusive"}
    assert len(fake.created) == 3 and fake.direct == 0  # the rows and their edits, 2 repeats
    assert SECRET not in json.dumps(report)


def test_a_judge_biased_to_the_first_context_fails_order(tmp_path):
    """g_eval with contexts (the rows' answer held by the first context in half of them): a
    judge that reads only the first context fails ``order``, the sound one passes it; g_eval's
    sensitivity checks are skipped (its criteria decide what should score worse)."""
    from fakes.flawed_judges import ContextJudges, context_rows

    rows = context_rows(80)
    with ContextJudges() as judges:
        cards = {model: certify(rows, "g_eval", checks=["order", "format", "fact_swap"],
                                metric_options={"criteria": "Do the contexts support it?"},
                                provider="openai-compatible", base_url=judges.url,
                                model=model, cache_dir=str(tmp_path / model),
                                max_concurrency=16)
                 for model in ("sound", "first")}
    for model, report in cards.items():
        assert report["skipped"] == {"fact_swap": "its criteria, not this check, decide what "
                                                  "should score worse"}
        outcomes = {c["name"]: c["outcome"] for c in report["checks"]}
        assert outcomes == ({"format": "pass", "order": "pass"} if model == "sound"
                            else {"format": "pass", "order": "fail"}), model
    assert cards["sound"]["certified"] and not cards["first"]["certified"]
    order = next(c for c in cards["first"]["checks"] if c["name"] == "order")
    assert order["n"] == 80 and 0.2 < order["rate"]["value"] < 0.8
