"""``judge-metrics calibrate``: a metric's scores on every row and human labels on some,
turned into the corrected mean label with its interval (docs/CALIBRATION.md).

Its arguments and its runner; :mod:`shared.cli.main` registers them. Scoring goes through the
path ``agree`` takes (``shared.analysis.labelled_runs``: call cache, progress, resume), the
statistics through ``shared.analysis.calibration_figures``. Exit codes as ``score``: 0 done, 2
a usage or input error in one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..analysis.corrected import parse_label_range
from ..base.errors import UserInputError
from ..runs import files
from . import common

HELP = ("the corrected mean label from a few human labels and the metric's scores on every row "
        "(prediction-powered, with a valid interval), and a calibration map")
DESCRIPTION = (
    "Score every row of INPUT with one metric. The rows with a label in --label (blank "
    "or null on the others) correct the metric's mean: the prediction-powered (PPI++) "
    "estimate of the mean label over every row, with its interval, beside the labels "
    "alone and the metric alone; and a map from score to P(label), isotonic or Platt, "
    "chosen by cross-validation, with ECE and Brier before and after. The labelled "
    "rows must be a uniformly random sample (--suggest N picks them)."
)


def add_arguments(calibrate: argparse.ArgumentParser) -> None:
    common.add_input_argument(calibrate)
    common.add_labelled_metric_arguments(
        calibrate, "the column of human labels (0/1 or booleans, or numeric ratings), blank or "
        "null on the unlabelled rows", required=False,
        score_key_help="which of the metric's scores (default: its first)")
    common.add_alpha_argument(calibrate, "the interval is 1 - A")
    calibrate.add_argument("--label-range", metavar="LOW:HIGH",
                           help="ratings' scale (e.g. 1:5), mapped onto the scores' 0..1 "
                           "(default: labels within 0..1 as they are, others by the lowest and "
                           "highest label present)")
    common.add_seed_argument(calibrate, "--suggest and of the cross-validation folds")
    calibrate.add_argument("--suggest", type=int, metavar="N",
                           help="print N row ids to label, drawn uniformly at random (seeded) "
                           "from the rows without a label, and stop (nothing is scored)")
    common.add_report_arguments(calibrate)
    calibrate.add_argument("--save-calibration", metavar="FILE",
                           help="write the calibration map (JSON), for `score --calibration`")
    common.add_out_arguments(calibrate)
    common.add_scoring_arguments(calibrate)


def run(args: argparse.Namespace) -> int:
    from ..analysis.calibration_figures import calibrate, report_table, suggest_rows
    from ..runs.batch import check_metric_names

    files.check_input_path(Path(args.input))
    if args.suggest is not None:
        common.quiet_libraries()
        dataset = files.load_input(Path(args.input))
        with common.scoring_errors():
            for row in suggest_rows(dataset, args.suggest, seed=args.seed, label=args.label):
                print(row)
        return 0
    for flag, value in (("--metric", args.metric), ("--label", args.label)):
        if not value:
            raise UserInputError(f"{flag} is required (unless --suggest N)")
    if args.metric == "all":
        raise UserInputError("calibrate takes one metric, not 'all'")
    check_metric_names([args.metric])
    if not 0 < args.alpha < 1:
        raise UserInputError(f"--alpha must be in (0, 1), got {args.alpha}")
    common.check_at_least_one(("--chunk-size", args.chunk_size))
    if args.dry_run:
        raise UserInputError("calibrate cannot dry-run: use `score --dry-run`")
    label_range = parse_label_range(args.label_range)
    columns = common.parse_columns(args.column)
    outputs = {"--out": args.out, "--json": args.json, "--html": args.html,
               "--save-calibration": args.save_calibration}
    _, report = common.labelled_run(args, outputs, lambda dataset, **options: calibrate(
        dataset, args.metric, args.label, alpha=args.alpha, seed=args.seed,
        label_range=label_range, columns=columns, score_key=args.score_key,
        chunk_size=args.chunk_size, **options), report_table)
    from ..analysis.report import write_calibration_html

    common.write_report_files(args, report, write_calibration_html)
    if args.save_calibration:  # last: a map that cannot be saved loses no other output
        from ..analysis.calibration_maps import save_map

        save_map(args.save_calibration, report["calibration"], metric=args.metric,
                 score_key=report["score_key"], column=report["column"], label=args.label,
                 label_range=report["label_range"])
        print(f"wrote {args.save_calibration}", file=sys.stderr)
    return 0
