"""Each judge metric's declared rounds (``ROUNDS``: what its card and docs/COST.md say a batch
run waits for) against the rounds its ``score`` really sends: a dry run of the real runner on
the metric's example, counting the runner's calls (each becomes one provider batch with
``batch=True``)."""

from __future__ import annotations

from typing import Any

import pytest
from dry_runs import dry_run

from shared.kit.registry import METRICS
from shared.tools import cards

JUDGE_METRICS = [name for name in METRICS if METRICS[name].judge]


def rounds_sent(name: str, **options: Any) -> list[str]:
    """The runner calls of one dry run of ``name`` on its example (with ``options`` added)."""
    return dry_run(name, **options).calls


def test_every_judge_metric_declares_its_rounds() -> None:
    assert JUDGE_METRICS
    for name in JUDGE_METRICS:
        rounds = METRICS[name].rounds
        assert rounds and all(isinstance(r, str) and r for r in rounds), name


@pytest.mark.parametrize("name", JUDGE_METRICS)
def test_declared_rounds_are_the_rounds_sent(name: str) -> None:
    sent = rounds_sent(name)
    assert len(sent) == len(METRICS[name].rounds), (name, sent, METRICS[name].rounds)


def test_counting_sees_an_option_that_adds_a_round() -> None:
    # g_eval's explain option asks for a reason after the score: one round more than declared
    assert len(rounds_sent("g_eval", explain=True)) == len(METRICS["g_eval"].rounds) + 1


def test_card_and_cost_doc_say_the_declared_rounds() -> None:
    table = cards.rounds_table()
    counts = {}
    for row in table.splitlines()[2:]:
        names, count, _ = (cell.strip() for cell in row.strip("|").split("|"))
        counts.update(dict.fromkeys(names.split(", "), int(count)))
    assert counts == {name: len(METRICS[name].rounds) for name in JUDGE_METRICS}
    for name in JUDGE_METRICS:
        assert cards.rounds_line(METRICS[name]) in cards.card_path(name).read_text("utf-8")
    assert table in cards.COST_DOC.read_text("utf-8")
    assert not cards.write_cost_doc(check=True)
