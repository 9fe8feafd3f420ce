"""``judge-metrics agree``: a metric's per-row scores against human labels.

Its arguments and its runner; :mod:`shared.cli.main` registers them. Scoring goes through
``shared.runs.batch.score_dataset`` (call cache, progress, resume), the statistics through
``shared.analysis.agreement``. Exit codes as ``score``: 0 done, 2 a usage or input error in one
line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..base.errors import UserInputError
from ..runs import files
from . import common

HELP = "measure a metric against human labels (AUROC, kappa, correlations, intervals)"
DESCRIPTION = (
    "Score INPUT with one metric and compare its per-row scores with the human labels "
    "in --label. Boolean labels: AUROC, balanced accuracy, Cohen's kappa and F1 at the "
    "metric's decision threshold (or --threshold), and the best threshold on these rows. "
    "Numeric labels (ratings): Spearman, Kendall tau-b, Pearson (with --group also the "
    "mean of per-group correlations). Every statistic with a seeded bootstrap 95% "
    "interval; unmeasured rows are counted and left out."
)


def add_arguments(agree: argparse.ArgumentParser) -> None:
    common.add_input_argument(agree)
    common.add_labelled_metric_arguments(
        agree, "the column of human labels (booleans, or numeric ratings)", required=True,
        score_key_help="which aggregate's per-row score to compare (rouge: rouge1, rouge2, "
        "rougeL, rougeLsum; default: the metric's first)")
    agree.add_argument("--group", metavar="COLUMN",
                       help="group rows (e.g. by source document): per-group mean correlations, "
                       "and the bootstrap resamples groups")
    agree.add_argument("--threshold", type=float, metavar="X",
                       help="decision threshold on the score (default: the metric's own)")
    agree.add_argument("--limit", type=int, metavar="N",
                       help="score a seeded random subsample of N rows")
    common.add_profile_argument(
        agree, "also the agreement of its <metric>_calibrated and <metric>_decision with the "
        "labels (in-sample, and said so, when the profile was fitted on these rows)")
    common.add_seed_argument(agree, "the subsample and of the bootstrap")
    common.add_resamples_argument(agree, 1000)
    common.add_out_arguments(agree)
    common.add_report_arguments(agree)
    common.add_scoring_arguments(agree)


def run(args: argparse.Namespace) -> int:
    from ..analysis.agreement import agree
    from ..runs.batch import check_metric_names, score_dataset

    if args.metric == "all":
        raise UserInputError("agree takes one metric, not 'all'")
    check_metric_names([args.metric])
    columns = common.parse_columns(args.column)
    out = Path(args.out) if args.out else None
    if out is not None:
        files.check_output_path(out)
    common.check_at_least_one(("--resamples", args.resamples), ("--chunk-size", args.chunk_size))
    files.check_input_path(Path(args.input))
    files.check_output_paths({k: v for k, v in (("INPUT", args.input),
                                                ("--profile", args.profile)) if v},
                             {"--out": args.out, "--json": args.json, "--html": args.html})
    common.quiet_libraries()
    dataset = files.load_input(Path(args.input))
    metric_options = common.parse_metric_options(args.option, [args.metric])
    if set(metric_options) - {args.metric}:
        raise UserInputError(f"--option names another metric than {args.metric}")
    from ..analysis.alignment_profile import profile_for_run

    options = common.judge_options(args)
    options.pop("dry_run", None)
    common.check_judge_options(options)
    profile, metric_options = profile_for_run(args.profile, [args.metric], metric_options,
                                              options)
    with common.scoring_errors():
        if args.dry_run:
            from ..analysis.agreement import map_columns

            _, summary = score_dataset(map_columns(dataset, columns), [args.metric],
                                       show_progress=False, dry_run=True, **options)
            print(summary.table())
            print("dry run: nothing was sent, nothing compared")
            return 0
        scored, report = agree(
            dataset, args.metric, args.label, columns=columns, score_key=args.score_key,
            group=args.group, threshold=args.threshold, limit=args.limit, seed=args.seed,
            n_resamples=args.resamples, chunk_size=args.chunk_size,
            metric_options=metric_options.get(args.metric),
            show_progress=not args.quiet, **options,
        )
    print(report.table())
    found = report.as_dict()
    if profile is not None:
        from ..analysis.alignment_profile import (
            profile_agreement,
            profile_agreement_text,
            profile_columns,
        )

        scored = profile_columns(scored, profile)
        found["profile"] = profile_agreement(scored, profile, args.label, group=args.group,
                                             seed=args.seed, n_resamples=args.resamples)
        print(profile_agreement_text(found["profile"]))
        if found["profile"]["in_sample"]:
            print("agree: the profile was fitted on these rows: its figures are in-sample, "
                  "not held out", file=sys.stderr)
    if out is not None:
        files.write_output(scored, out, csv_raw=args.csv_raw)
        print(f"wrote {out} ({len(scored):,} rows)", file=sys.stderr)
    if args.json:
        common.write_json(found, Path(args.json))
        print(f"wrote {args.json}", file=sys.stderr)
    if args.html:
        from ..analysis.report import write_agreement_html

        write_agreement_html(found, args.html, rows=scored)
        print(f"wrote {args.html}", file=sys.stderr)
    return 0


