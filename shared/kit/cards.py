"""The generated parts of every metric card (options and provider tables) and of
docs/BACKENDS.md (the provider tables), from the declarations and the provider registry.

Each card (``metrics/<name>/README.md``) holds, under ``## Inputs``, a block between
``<!-- options:start -->`` and ``<!-- options:end -->``: the table of the metric's ``OPTIONS``
and, for a judge metric, the table of the judge options (``shared.engine.config.JUDGE_OPTIONS``),
written once here for every judge card. ``python -m shared.kit.cards`` rewrites the blocks;
``python -m shared.kit.cards --check`` lists the cards that are out of date (exit 1), which a test
runs, so a changed declaration cannot leave its card behind. A judge card whose text holds a
``<!-- providers:start -->`` block gets the provider table (:mod:`.provider_tables`), and
docs/BACKENDS.md its provider tables, the same way.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..base.options import card_table
from ..engine.config import JUDGE_OPTIONS
from . import provider_tables
from .registry import METRICS, METRICS_DIR, MetricSpec, available, metric_class, metric_path

START = "<!-- options:start -->"
END = "<!-- options:end -->"
_NOTE = ("<!-- generated from the metric's declared options by `python -m shared.kit.cards`; "
         "do not edit by hand -->")


def options_block(spec: MetricSpec) -> str:
    """The text between (and including) the markers for ``spec``'s card."""
    parts = [START, _NOTE, ""]
    if spec.options:
        parts += ["Options:", "", card_table(spec.options), ""]
    if spec.judge:
        parts += ["Judge options (the same for every judge metric):", "",
                  card_table(JUDGE_OPTIONS), ""]
    if not spec.options and not spec.judge:
        parts += ["No options.", ""]
    return "\n".join([*parts, END])


def render(card: str, spec: MetricSpec) -> str:
    """``card`` with its options block (and provider block, if it has one) rewritten; a
    ``ValueError`` when it has no options markers."""
    head, start, rest = card.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise ValueError(f"the {spec.name} card has no {START} ... {END} block")
    card = head + options_block(spec) + tail
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
    verb = "out of date" if args.check else "rewrote"
    for path in changed:
        print(f"{verb}: {path}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
