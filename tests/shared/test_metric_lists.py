"""The lists of metrics in README.md and docs/*.md are generated (shared/tools/metric_lists.py):
they are current, and a new metric makes them stale until ``make cards`` runs and a person
writes what it measures."""

from __future__ import annotations

import dataclasses
import re

import pytest

from shared.kit.registry import METRICS, available
from shared.tools import cards, metric_lists

README = metric_lists.ROOT / "README.md"


def test_every_metric_list_is_current_and_written() -> None:
    """Run ``make cards`` (``python -m judge_metrics.tools.cards``) after adding a metric."""
    assert metric_lists.write_lists(check=True) == []
    texts = {path.name: path.read_text(encoding="utf-8") for path in metric_lists.documents()}
    assert {path: metric_lists.unwritten(text) for path, text in texts.items()
            if metric_lists.unwritten(text)} == {}
    # the lists the documents hold: README's table and docs/BATCH.md's columns at least
    assert "<!-- metrics:table:start -->" in texts["README.md"]
    assert "<!-- metrics:columns:start -->" in texts["BATCH.md"]
    assert "<!-- metrics:thresholds:start -->" in texts["AGREEMENT.md"]


def test_the_table_lists_every_metric_in_the_registry_order() -> None:
    body = README.read_text(encoding="utf-8").split("<!-- metrics:table:start -->")[1]
    body = body.split("<!-- metrics:table:end -->")[0]
    rows = [line for line in body.splitlines() if line.startswith("| [`")]
    assert [metric_lists.cells(row)[0].split("`")[1] for row in rows] == available()
    for row in rows:  # inputs and headline keys come from the declarations
        name = metric_lists.cells(row)[0].split("`")[1]
        assert metric_lists.cells(row)[3] == ", ".join(f"`{k}`" for k in METRICS[name].headline)


def test_a_new_metric_makes_every_list_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """A made-up metric in the registry: each kind of list changes, and the table and the
    columns ask a person for the cells only a person can write."""
    spec = dataclasses.replace(METRICS["bleu"], name="made_up", judge=False, embeds=False,
                               columns={"predictions": "prediction", "probes": "probe"})
    monkeypatch.setattr(metric_lists, "METRICS", {**METRICS, "made_up": spec})
    monkeypatch.setattr(metric_lists, "available", lambda: [*available(), "made_up"])
    for kind in ("all", "string", "no-judge"):
        start, end = f"<!-- metrics:{kind}:start -->", f"<!-- metrics:{kind}:end -->"
        assert metric_lists.render(f"a ({start}rouge{end})").endswith(f", made_up{end})")
    assert "made_up" not in metric_lists.render(
        "<!-- metrics:judge:start -->x<!-- metrics:judge:end -->")
    for path in metric_lists.documents():
        text = path.read_text(encoding="utf-8")
        if "<!-- metrics:table:start -->" in text:
            rendered = metric_lists.render(text)
            assert rendered != text
            assert "| [`made_up`](metrics/made_up/README.md) | predictions, probes |  |" in rendered
            assert metric_lists.unwritten(rendered) == ["what made_up measures"]
        if "<!-- metrics:columns:start -->" in text:
            rendered = metric_lists.render(text)
            assert "| `probe` |  | made_up |" in rendered
            assert metric_lists.unwritten(rendered) == ["what column probe holds"]
        if "<!-- metrics:thresholds:start -->" in text:
            rendered = metric_lists.render(text)
            assert "| made_up | none |  |" in rendered
            assert metric_lists.unwritten(rendered) == ["why made_up's threshold"]
    # and the check that the test above runs says so: the written documents are out of date
    assert README in metric_lists.write_lists(check=True)


def test_written_cells_are_kept_and_an_unknown_list_is_refused() -> None:
    body = ("\n| metric | inputs | what it measures | headline key(s) |\n|---|---|---|---|\n"
            "| [`bleu`](metrics/bleu/README.md) | old | n-gram precision | old |\n")
    table = metric_lists.metrics_table(body)
    assert "| [`bleu`](metrics/bleu/README.md) | predictions, references | n-gram precision | " \
           "`bleu` |" in table
    assert metric_lists.render(metric_lists.render(f"<!-- metrics:table:start -->{body}"
                                                   "<!-- metrics:table:end -->")) == \
        metric_lists.render(f"<!-- metrics:table:start -->{body}<!-- metrics:table:end -->")
    with pytest.raises(ValueError, match="unknown list <!-- metrics:judges:start -->"):
        metric_lists.render("<!-- metrics:judges:start --><!-- metrics:judges:end -->")


def test_make_cards_rewrites_the_lists_and_check_reports_them(monkeypatch, capsys) -> None:
    """``python -m judge_metrics.tools.cards --check`` exits 1 on a stale list."""
    monkeypatch.setattr(metric_lists, "write_lists", lambda check=False: [README])
    monkeypatch.setattr(cards, "write_cards", lambda names=None, check=False: [])
    monkeypatch.setattr(cards, "write_backends_doc", lambda check=False: False)
    monkeypatch.setattr(cards, "write_cost_doc", lambda check=False: False)
    assert cards.main(["--check"]) == 1
    assert f"out of date: {README}" in capsys.readouterr().out


def named_metrics(text: str) -> list[str]:
    """The metric names ``text`` writes in backticks or as plain words, in registry order."""
    return [name for name in available() if re.search(rf"(?<![\w/]){name}(?![\w/])", text)]


def test_the_lists_written_with_prose_name_their_whole_family() -> None:
    """Two lists stay written by hand, each metric with its own prose: docs/CONVERSATIONS.md's
    metrics over conversations and tool calls, and docs/ALIGNMENT.md's judge metrics by the
    shape of their prompts. Each names exactly its family, so a new metric fails here until it
    is written in."""
    docs = metric_lists.ROOT / "docs"
    conversations = (docs / "CONVERSATIONS.md").read_text(encoding="utf-8")
    section = conversations.split("## The metrics\n")[1].split("\n## ")[0]
    listed = section.split("\n\n")[0]
    assert named_metrics(listed) == metric_lists.family("conversation")
    alignment = (docs / "ALIGNMENT.md").read_text(encoding="utf-8")
    table = alignment.split("| Metric shape | Gets the block | Why |")[1].split("\n\n")[0]
    shapes = [line.split("|")[1] for line in table.splitlines() if line.startswith("| ")]
    assert sorted(n for shape in shapes for n in named_metrics(shape)) == sorted(
        metric_lists.family("judge"))


# the complete family lists written by hand on purpose, each checked above
PROSE_LISTS = {("CONVERSATIONS.md", "conversation")}


def handwritten_family_lists(texts: dict[str, str], least: int = 4) -> list[str]:
    """``file: family`` for each paragraph of prose (not a generated list, a code block or a
    table: measured tables name what they measured) that names every metric of a family of
    ``least`` or more: such a list goes stale when the family grows."""
    found = []
    for name, text in texts.items():
        text = re.sub(r"```.*?```", "", metric_lists.BLOCK.sub("", text), flags=re.S)
        text = re.sub(r"<!-- (\w+):start -->.*?<!-- \1:end -->", "", text, flags=re.S)
        for kind in metric_lists.FAMILIES:
            members = metric_lists.family(kind)
            if len(members) >= least and (name, kind) not in PROSE_LISTS and any(
                    named_metrics(paragraph) and set(members) <= set(named_metrics(paragraph))
                    for paragraph in text.split("\n\n") if not paragraph.lstrip().startswith("|")):
                found.append(f"{name}: {kind}")
    return found


def test_no_family_is_listed_by_hand() -> None:
    """Write a family's names between <!-- metrics:FAMILY:start --> and its end marker."""
    texts = {path.name: path.read_text(encoding="utf-8") for path in metric_lists.documents()}
    assert handwritten_family_lists(texts) == []
    # the check can fail: a sentence naming every string metric by hand is found, the same
    # names between the markers are not
    string = ", ".join(metric_lists.family("string"))
    assert "X.md: string" in handwritten_family_lists(
        {"X.md": f"The string metrics ({string}) are fast."})
    assert handwritten_family_lists({"X.md": "The string metrics (<!-- metrics:string:start -->"
                                             f"{string}<!-- metrics:string:end -->)."}) == []
