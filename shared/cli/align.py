"""``judge-metrics align``: tune a metric to human 0/1 labels on training folds (the
calibration map and the decision threshold) and report every figure on the held-out folds
(docs/ALIGNMENT.md).

Its arguments and its runner; :mod:`shared.cli.main` registers them. Scoring goes through the
path ``agree`` takes (``shared.analysis.labelled_runs``: call cache, progress, resume), the
statistics through ``shared.analysis.alignment``. Exit codes as ``score``: 0 done, 2 a usage or
input error in one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..base.errors import UserInputError
from ..runs import files
from ..runs.summary import format_table
from . import common

HELP = ("tune a metric to human labels on training folds (threshold, calibration map) and "
        "report the agreement before and after on the held-out folds")
DESCRIPTION = (
    "Score every row of INPUT with one metric and align it to the 0/1 labels in --label: "
    "on each training fold, fit the calibration map (isotonic or Platt) and the decision "
    "threshold with the best Cohen's kappa; score the held-out fold with them. Kappa, "
    "AUROC, Brier and ECE before and after, each with a bootstrap interval, a paired "
    "bootstrap test of the kappa after against before, the constant answer's baseline; "
    "every figure from rows the tuning never saw. --save-profile writes the tuning fitted "
    "on every labelled row, for `score --profile`."
)


def add_arguments(align: argparse.ArgumentParser) -> None:
    common.add_input_argument(align)
    align.add_argument("--metric", "-m", metavar="NAME", required=True, help="one metric name")
    align.add_argument("--label", metavar="COLUMN", required=True,
                       help="the column of human 0/1 labels (booleans, yes/no, 1/0)")
    align.add_argument("--folds", type=int, default=5, metavar="K",
                       help="cross-validation folds (default 5; fewer when a label has fewer "
                       "rows)")
    align.add_argument("--group", metavar="COLUMN",
                       help="keep the rows of one group (source document, conversation) in "
                       "one fold, and resample whole groups in the bootstrap")
    align.add_argument("--second-label", metavar="COLUMN",
                       help="a second person's 0/1 labels: the human-human kappa beside")
    common.add_alpha_argument(align, "intervals are 1 - A, the paired test's level A")
    align.add_argument("--few-shot", type=int, default=0, metavar="K",
                       help="judge metrics: K rows of each training fold where the judge "
                       "disagreed with the label are shown as examples (before the prompt the "
                       "score is read from) when the held-out fold is scored again (default "
                       "0: none)")
    common.add_column_argument(align)
    align.add_argument("--score-key", metavar="KEY",
                       help="which of the metric's scores (default: its first)")
    common.add_seed_argument(align, "the folds and the bootstrap")
    common.add_resamples_argument(align, 1000)
    common.add_report_arguments(align)
    align.add_argument("--save-profile", metavar="FILE",
                       help="write the tuning fitted on every labelled row (JSON), for "
                       "`score --profile`")
    common.add_out_arguments(align)
    common.add_scoring_arguments(align)


def run(args: argparse.Namespace) -> int:
    from ..analysis.alignment_profile import align, save_profile
    from ..runs.batch import check_metric_names

    files.check_input_path(Path(args.input))
    if args.metric == "all":
        raise UserInputError("align takes one metric, not 'all'")
    check_metric_names([args.metric])
    from ..analysis.alignment_profile import check_few_shot

    check_few_shot(args.metric, args.few_shot)
    if not 0 < args.alpha < 1:
        raise UserInputError(f"--alpha must be in (0, 1), got {args.alpha}")
    if args.resamples < 1:
        raise UserInputError(f"--resamples must be at least 1, got {args.resamples}")
    common.check_at_least_one(("--chunk-size", args.chunk_size))
    if args.dry_run:
        raise UserInputError("align cannot dry-run: use `score --dry-run`")
    outputs = {"--out": args.out, "--json": args.json, "--html": args.html,
               "--save-profile": args.save_profile}
    _, report = common.labelled_run(args, outputs, lambda dataset, **options: align(
        dataset, args.metric, args.label, folds=args.folds, group=args.group, seed=args.seed,
        alpha=args.alpha, other_label=args.second_label, resamples=args.resamples,
        few_shot=args.few_shot, columns=common.parse_columns(args.column),
        score_key=args.score_key, chunk_size=args.chunk_size, **options), report_table)
    if args.save_profile:
        save_profile(args.save_profile, report)
        print(f"wrote {args.save_profile}", file=sys.stderr)
    from ..analysis.report import write_alignment_html

    common.write_report_files(args, report, write_alignment_html)
    return 0


def report_table(report: dict[str, Any]) -> str:
    """The before/after table as the CLI prints it."""
    def cell(figure: dict[str, Any]) -> str:
        if figure["value"] is None:
            return "n/a"
        interval = "" if figure["low"] is None else f" [{figure['low']:.3f}, {figure['high']:.3f}]"
        return f"{figure['value']:.3f}{interval}"

    rows = [[name, cell(report["before"][name]), cell(report["after"][name])]
            for name in ("kappa", "auroc", "brier", "ece")]
    test, base = report["paired_test"], report["baseline"]
    lines = [f"{report['metric']} against {report['label']!r}: {report['n']} rows, "
             f"{len(report['folds'])} folds (every figure on the held-out folds)",
             format_table(["figure", "before", "after"], rows)]
    difference = "n/a" if test["difference"] is None else f"{test['difference']:+.3f}"
    lines.append(f"kappa after - before: {difference} (paired bootstrap p = "
                 f"{test['p_value']:.3g}); improved: {'yes' if report['improved'] else 'no'} "
                 f"at alpha {report['alpha']:g}")
    lines.append(f"constant answer {base['answer']} (base rate {base['base_rate']:.3f}): "
                 f"accuracy {base['accuracy']:.3f}, kappa 0")
    human = report.get("human_agreement")
    if human and human["kappa"] is not None:
        lines.append(f"human-human kappa: {human['kappa']:.3f} ({human['n']} rows)")
    tuning = report["tuning"]
    method = (tuning["calibration"] or {}).get("method", "none")
    lines.append(f"tuned on every row (the profile): calibration {method}, threshold "
                 f"{tuning['threshold']:.4f} on P(label)")
    shots = report.get("few_shot")
    if shots:
        from ..kit.registry import METRICS

        scoring = METRICS[report["metric"]].scoring_prompts  # the record has every prompt
        shown = ", ".join(f"{p['name']} version {p['version']}" for p in shots["prompt"]
                          if p["name"] in scoring)
        lines.append(f"few-shot: {shots['k']} examples per fold from its training folds' "
                     f"disagreements (shown before the prompt {shown}); the profile keeps "
                     f"{len(shots['examples'])}")
    return "\n".join(lines)
