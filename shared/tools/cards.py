"""The generated parts of every metric card (options and provider tables) and of
docs/BACKENDS.md (the provider tables), from the declarations and the provider registry.

Each card (``metrics/<name>/README.md``) holds, under ``## Inputs``, a block between
``<!-- options:start -->`` and ``<!-- options:end -->``: the table of the metric's ``OPTIONS`` and,
for a judge metric, the table of the judge options (``shared.engine.config.JUDGE_OPTIONS``), written
once here for every judge card. ``python -m judge_metrics.tools.cards`` rewrites the blocks;
``python -m judge_metrics.tools.cards --check`` lists the cards that are out of date (exit 1), which
a test runs, so a changed declaration cannot leave its card behind. A judge card whose text holds a
``<!-- providers:start -->`` block gets the provider table (:mod:`.provider_tables`), and
docs/BACKENDS.md its provider tables, the same way. A judge card's options block also says how many
rounds of requests the metric sends (its class's ``ROUNDS``: with ``batch=True`` one provider batch
each), and docs/COST.md's table of every judge metric's rounds is rewritten from the same
declarations. The lists of metrics in README.md and docs/*.md are rewritten with them
(:mod:`.metric_lists`). """

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..base.options import card_table
from ..engine.config import JUDGE_OPTIONS
from ..kit.registry import METRICS, METRICS_DIR, MetricSpec, available, metric_class, metric_path
from . import metric_lists, provider_tables

START = "<!-- options:start -->"
END = "<!-- options:end -->"
_NOTE = ("<!-- generated from the metric's declared options by "
         "`python -m judge_metrics.tools.cards`; do not edit by hand -->")


def options_block(spec: MetricSpec) -> str:
    """The text between (and including) the markers for ``spec``'s card."""
    parts = [START, _NOTE, ""]
    if spec.options:
        parts += ["Options:", "", card_table(spec.options), ""]
    if spec.judge:
        parts += ["Judge options (the same for every judge metric):", "",
                  card_table(JUDGE_OPTIONS), "", rounds_line(spec), ""]
    if not spec.options and not spec.judge:
        parts += ["No options.", ""]
    return "\n".join([*parts, END])


def rounds_line(spec: MetricSpec) -> str:
    """What a judge card says about its rounds of requests (``spec.rounds``)."""
    count = len(spec.rounds)
    steps = ", then ".join(spec.rounds)
    waits = "" if count == 1 else ", each after the one before"
    return (f"Rounds with `batch=True` (`--batch`, docs/COST.md): {count} provider "
            f"batch{'es' if count > 1 else ''}{waits} ({steps}), with the default options.")


ROUNDS_START = "<!-- rounds:start -->"
ROUNDS_END = "<!-- rounds:end -->"
COST_DOC = METRICS_DIR.parent / "docs" / "COST.md"


def rounds_table() -> str:
    """docs/COST.md's table of the judge metrics' rounds, metrics with the same rounds on one
    row, in the registry's order."""
    rows: dict[tuple[str, ...], list[str]] = {}
    for name in available():
        if METRICS[name].judge:
            rows.setdefault(METRICS[name].rounds, []).append(name)
    lines = ["| metric | rounds | steps |", "|---|---|---|"]
    lines += [f"| {', '.join(names)} | {len(rounds)} | {', '.join(rounds)} |"
              for rounds, names in rows.items()]
    return "\n".join(lines)


def replace_between(text: str, start: str, end: str, block: str, where: str) -> str:
    """``text`` with what lies between the ``start`` and ``end`` markers (both included)
    replaced by ``block``; a ``ValueError`` naming ``where`` without them."""
    head, found_start, rest = text.partition(start)
    _, found_end, tail = rest.partition(end)
    if not found_start or not found_end:
        raise ValueError(f"{where} has no {start} ... {end} block")
    return head + block + tail


def write_cost_doc(check: bool = False) -> bool:
    """Rewrite docs/COST.md's rounds table; whether it changed (would change)."""
    text = COST_DOC.read_text(encoding="utf-8")
    block = "\n".join([ROUNDS_START, _NOTE.replace("declared options", "declared rounds"),
                       "", rounds_table(), ROUNDS_END])
    updated = replace_between(text, ROUNDS_START, ROUNDS_END, block, str(COST_DOC))
    if updated != text and not check:
        COST_DOC.write_text(updated, encoding="utf-8")
    return updated != text


def render(card: str, spec: MetricSpec) -> str:
    """``card`` with its options block (and provider block, if it has one) rewritten; a
    ``ValueError`` when it has no options markers."""
    card = replace_between(card, START, END, options_block(spec), f"the {spec.name} card")
    if spec.judge and provider_tables.START in card:
        block = provider_tables.card_block(requirements(spec.name))
        card = provider_tables.replace_block(card, block, f"the {spec.name} card")
    return card


def requirements(name: str, which: str = "REQUIRES") -> tuple[tuple[str, bool | int], ...]:
    """What judge metric ``name`` needs from its provider (its class's ``REQUIRES``; with
    ``which="PREFERS"``, what it uses where the provider has it)."""
    return tuple(getattr(metric_class(name), which, ()))


BACKENDS_DOC = METRICS_DIR.parent / "docs" / "BACKENDS.md"


def write_backends_doc(check: bool = False) -> bool:
    """Rewrite docs/BACKENDS.md's provider block; whether it changed (would change)."""
    text = BACKENDS_DOC.read_text(encoding="utf-8")
    judges = [name for name in available() if METRICS[name].judge]
    block = provider_tables.docs_block({name: requirements(name) for name in judges},
                                       {name: requirements(name, "PREFERS") for name in judges})
    updated = provider_tables.replace_block(text, block, str(BACKENDS_DOC))
    if updated != text and not check:
        BACKENDS_DOC.write_text(updated, encoding="utf-8")
    return updated != text


def card_path(name: str) -> Path:
    return Path(metric_path(name)) / "README.md"


def write_cards(names: list[str] | None = None, check: bool = False) -> list[str]:
    """Rewrite the options block of each card (default: every available metric); return the
    names whose card changed (with ``check=True``: would change; nothing is written)."""
    changed = []
    for name in names or available():
        path = card_path(name)
        card = path.read_text(encoding="utf-8")
        updated = render(card, METRICS[name])
        if updated != card:
            changed.append(name)
            if not check:
                path.write_text(updated, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Rewrite the options section of every metric card from the declarations.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a card is out of date")
    parser.add_argument("--metric", action="append", help="only this metric (repeatable)")
    args = parser.parse_args(argv)
    changed = [card_path(name) for name in write_cards(args.metric, check=args.check)]
    if not args.metric and write_backends_doc(check=args.check):
        changed.append(BACKENDS_DOC)
    if not args.metric and write_cost_doc(check=args.check):
        changed.append(COST_DOC)
    if not args.metric:
        changed += metric_lists.write_lists(check=args.check)
        for path in metric_lists.documents():
            for row in metric_lists.unwritten(path.read_text(encoding="utf-8")):
                print(f"{path}: write {row} in its generated table")
    verb = "out of date" if args.check else "rewrote"
    for path in changed:
        print(f"{verb}: {path}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
