"""The judge card travels: ``certify --card`` writes it, ``score --card`` and
``assert_metric(card=...)`` read it. A card for another judge, metric, options or prompt is
refused in one line; a card that is not certified turns a pass into "inconclusive" with the
reason; a certified one changes nothing. The judges are the planted-flaw fakes
(tests/fakes/flawed_judges.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.flawed_judges import bridge_rows

from shared import assert_metric, certify
from shared.base.errors import UserInputError
from shared.certification.card import MARKER, check_card, read_card, write_card
from shared.cli.main import main

ROWS = bridge_rows(60)
SECRET = "sk-card-secret-42"


@pytest.fixture(scope="module")
def cards(flawed_judges, tmp_path_factory) -> dict[str, Path]:
    """A certified card (the sound judge, 60 rows at tolerance 0.1) and one that is not (the
    same judge on 20 rows at 0.05: every check inconclusive)."""
    folder = tmp_path_factory.mktemp("cards")
    options = flawed_judges.options("sound", SECRET, folder / "cache")
    found = {}
    for name, rows, tolerance in (("certified", ROWS, 0.1), ("uncertified", ROWS[:20], 0.05)):
        report = certify(rows, "l3score", tolerance=tolerance, **options)
        assert report["certified"] is (name == "certified")
        found[name] = folder / f"{name}.md"
        write_card(report, found[name])
    return found


def judge(flawed_judges, model: str = "sound") -> dict:
    return flawed_judges.options(model, SECRET)


def test_the_card_is_markdown_with_its_report(cards):
    text = cards["uncertified"].read_text()
    assert text.startswith("# Judge card: l3score judged by openai-compatible/sound at http://")
    assert "**NOT CERTIFIED** on 20 rows" in text and MARKER in text
    assert "| format | invariance | 20 | 0.000 | [0.000, 0.168] | 0.05 | inconclusive" in text
    assert SECRET not in text
    report = read_card(cards["uncertified"])
    assert report["certified"] is False and report["metric"]["name"] == "l3score"
    assert "examples" not in report["checks"][0]


def test_a_card_for_another_judge_metric_options_or_prompt_is_refused(flawed_judges, cards,
                                                                      tmp_path):
    path, sound, other = cards["certified"], judge(flawed_judges), judge(flawed_judges, "yes")
    assert check_card(path, ["l3score"], sound).reason is None
    for metrics, options, message in (
            (["l3score"], other, "is a card for judge openai-compatible/sound"),
            (["faithfulness"], sound, "is a card for l3score, not faithfulness"),
            (["l3score"], {**sound, "exact": True}, "certifies l3score with options {}"),
            (["l3score"], {**sound, "base_url": "http://127.0.0.1:9/v1"},
             "is a card for judge")):
        with pytest.raises(UserInputError, match=message) as raised:
            check_card(path, metrics, options)
        assert "\n" not in str(raised.value)
    text = path.read_text().replace('"version": "1"', '"version": "0"')
    (tmp_path / "old.md").write_text(text)
    with pytest.raises(UserInputError, match="certifies the prompts l3score@0"):
        check_card(tmp_path / "old.md", ["l3score"], judge(flawed_judges))
    (tmp_path / "plain.md").write_text("# a card\n")
    with pytest.raises(UserInputError, match="not a judge card"):
        check_card(tmp_path / "plain.md", ["l3score"], judge(flawed_judges))


def score(flawed_judges, cards, tmp_path, card: str, model: str = "sound") -> list[str]:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:20]), encoding="utf-8")
    return ["score", str(data), "-m", "l3score", "--provider", "openai-compatible",
            "--base-url", flawed_judges.url, "--model", model, "--api-key", SECRET, "--cache-dir",
            str(tmp_path / "cache"), "-o", str(tmp_path / "out.jsonl"), "-q",
            "--gate", "l3score>=0.5", "--card", str(cards[card])]


def test_score_card_turns_a_holding_gate_inconclusive_when_not_certified(flawed_judges, cards,
                                                                         tmp_path, capsys):
    assert main(score(flawed_judges, cards, tmp_path, "certified")) == 0  # 15 of 20 right: 0.75
    capsys.readouterr()
    assert main(score(flawed_judges, cards, tmp_path, "uncertified")) == 1
    err = capsys.readouterr().err
    assert "gate l3score>=0.5 inconclusive: the judge card" in err
    assert "is not certified (format inconclusive" in err
    assert main(score(flawed_judges, cards, tmp_path, "certified", model="yes")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("judge-metrics: error: --card ") and "is a card for judge" in err
    assert len(err.splitlines()) == 1 and SECRET not in err


def test_assert_metric_with_a_card(flawed_judges, cards, tmp_path):
    options = {**judge(flawed_judges), "cache_dir": str(tmp_path / "cache")}
    rows = ROWS[:20]
    # 20 rows, 15 right: the interval of the mean clears 0.3
    verdict = assert_metric("l3score", rows, at_least=0.3, card=cards["certified"], **options)
    assert verdict.outcome == "pass"
    with pytest.raises(AssertionError, match="inconclusive: .* is not certified"):
        assert_metric("l3score", rows, at_least=0.3, card=cards["uncertified"], **options)
    with pytest.raises(UserInputError, match="is a card for judge"):
        assert_metric("l3score", rows, at_least=0.3, card=cards["certified"],
                      **{**options, "model": "yes"})
