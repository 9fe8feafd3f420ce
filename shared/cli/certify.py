"""``judge-metrics certify``: a judge card for one metric's judge on the user's rows
(:func:`shared.certification.run.certify`; docs/CERTIFY.md). Exit codes: 0 certified (or a dry
run), 1 not certified, 2 a usage or input error in one line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..base.errors import UserInputError
from ..certification.checks import CHECKS, DEFAULT_DELTA
from ..certification.rates import DEFAULT_TOLERANCE
from ..certification.run import DEFAULT_REPEATS
from . import common

HELP = "certify a judge on your rows: format, verbosity, order, injection, sensitivity, repeats"
DESCRIPTION = (
    "Score INPUT with one judge metric, then edited copies of the rows (Markdown, padding, "
    "shuffled contexts, an instruction to the judge, a swapped fact, another row's answer) and "
    "the rows again with the cache off, and rate how often the judge fails each check, with a "
    "95% Clopper-Pearson interval: pass (the whole interval at or under --tolerance), fail "
    "(wholly above) or inconclusive. Certified when every check that applies passes "
    "(docs/CERTIFY.md)."
)


def add_arguments(certify: argparse.ArgumentParser) -> None:
    common.add_input_argument(certify)
    certify.add_argument("--metric", "-m", required=True, metavar="NAME",
                         help="one judge metric name")
    certify.add_argument("--checks", metavar="LIST",
                         help=f"comma-separated checks to run (default: all: "
                         f"{','.join(CHECKS)})")
    certify.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, metavar="K",
                         help=f"repeat: times each row is asked with the cache off (default "
                         f"{DEFAULT_REPEATS})")
    certify.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, metavar="T",
                         help=f"the failure rate a check may reach (default "
                         f"{DEFAULT_TOLERANCE:g})")
    certify.add_argument("--delta", type=float, default=DEFAULT_DELTA, metavar="D",
                         help="how far a score may move, as a share of the metric's score "
                         f"range, before a row fails (default {DEFAULT_DELTA:g})")
    common.add_seed_argument(certify, "the edits")
    common.add_report_arguments(
        certify, json_help="also write the report as JSON",
        html_help="also write the card as a self-contained HTML page (opens offline)")
    certify.add_argument("--card", metavar="CARD.md",
                         help="also write the card as Markdown, for a repository (score --card "
                         "and assert_metric(card=...) read it)")
    common.add_scoring_arguments(certify)


def run(args: argparse.Namespace) -> int:
    from ..certification.card import write_card
    from ..certification.html import write_certify_html
    from ..certification.report import table
    from ..certification.run import certify
    from ..runs import files

    checks = None if args.checks is None else [
        c.strip() for c in args.checks.split(",") if c.strip()]
    files.check_input_path(Path(args.input))
    files.check_output_paths({"INPUT": args.input},
                             {"--json": args.json, "--html": args.html, "--card": args.card})
    common.check_at_least_one(("--chunk-size", args.chunk_size))
    metric_options = common.parse_metric_options(args.option, [args.metric])
    if set(metric_options) - {args.metric}:
        raise UserInputError(f"--option names another metric than {args.metric}")
    options = common.judge_options(args)
    common.check_judge_options(options)
    common.quiet_libraries()
    with common.scoring_errors():
        report = certify(args.input, args.metric, checks=checks, repeats=args.repeats,
                         tolerance=args.tolerance, delta=args.delta, seed=args.seed,
                         metric_options=metric_options.get(args.metric),
                         chunk_size=args.chunk_size, show_progress=not args.quiet, **options)
    if "dry_run" in report:
        plan = report["dry_run"]
        cost = "unknown (no price for this model)" if plan["cost"] is None else (
            f"${plan['cost']:.4f}")
        print(f"dry run: {plan['requests']:,} judge requests ({plan['rows']} rows, "
              f"{plan['edited_rows']} edited copies, the repeats; {plan['note']}), estimated "
              f"cost {cost}; nothing was sent")
        return 0
    print(table(report))
    for path, write in ((args.json, common.write_json), (args.card, write_card),
                        (args.html, write_certify_html)):
        if path:
            write(report, Path(path))
            print(f"wrote {path}", file=sys.stderr)
    return 0 if report["certified"] else 1
