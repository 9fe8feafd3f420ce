"""The options section of every metric card, generated from the declarations.

Each card (``metrics/<name>/README.md``) holds, under ``## Inputs``, a block between
``<!-- options:start -->`` and ``<!-- options:end -->``: the table of the metric's ``OPTIONS``
and, for a judge metric, the table of the judge options (``shared.engine.config.JUDGE_OPTIONS``),
written once here for every judge card. ``python -m shared.kit.cards`` rewrites the blocks;
``python -m shared.kit.cards --check`` lists the cards that are out of date (exit 1), which a test
runs, so a changed declaration cannot leave its card behind.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..base.options import card_table
from ..engine.config import JUDGE_OPTIONS
from .registry import METRICS, MetricSpec, available, metric_path

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
    """``card`` with its options block rewritten; a ``ValueError`` when it has no markers."""
    head, start, rest = card.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise ValueError(f"the {spec.name} card has no {START} ... {END} block")
    return head + options_block(spec) + tail


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
    changed = write_cards(args.metric, check=args.check)
    verb = "out of date" if args.check else "rewrote"
    for name in changed:
        print(f"{verb}: {card_path(name)}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
