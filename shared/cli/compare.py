"""``judge-metrics compare A B``: its arguments and its runner (:mod:`shared.cli.main`
registers them).

A and B are per-row outputs of ``score``, or inputs scored first when ``--metric`` is given
(through ``shared.runs.batch.score_dataset``, with the judge options of ``score``). Exit codes as
``score``: 0 done, 2 a usage or input error in one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..analysis.junit import write_junit_xml
from ..base.errors import UserInputError
from . import common

HELP = "is run B better than run A? paired comparison with intervals and p-values"
DESCRIPTION = (
    "Pair the rows of A and B (outputs of `score`) by --key and compare every score "
    "column both have: mean A, mean B, delta B-A with a seeded paired-bootstrap "
    "interval, an exact McNemar test (0/1 scores) or a Wilcoxon signed-rank test "
    "(graded scores), B's wins/ties/losses and Holm-adjusted p-values. Rows in one "
    "run only and rows unmeasured in either are counted and excluded. With --metric, A "
    "and B are inputs and are scored first."
)


def add_arguments(compare: argparse.ArgumentParser) -> None:
    compare.add_argument("a", metavar="A", help="run A: .jsonl, .csv, .parquet or a saved "
                         "Dataset folder (the baseline)")
    compare.add_argument("b", metavar="B", help="run B, compared against A")
    compare.add_argument("--metric", "-m", action="append", metavar="NAME",
                         help="score A and B with this metric first (repeat, or 'all'); "
                         "without it A and B must already hold score columns")
    compare.add_argument("--key", metavar="COLUMN",
                         help="column pairing the rows (default: id, else a hash of the task "
                         "columns both runs share)")
    common.add_report_arguments(
        compare, json_help="write the comparison as JSON",
        html_help="write a self-contained HTML report (opens offline)")
    compare.add_argument("--label", metavar="COLUMN",
                         help="human labels on some rows (blank on the others, the same rows "
                         "labelled in A and B): also the prediction-powered difference of the "
                         "mean label B - A with its interval, beside the judge-only delta "
                         "(docs/CALIBRATION.md)")
    compare.add_argument("--label-range", metavar="LOW:HIGH",
                         help="with --label: the rating scale's ends (e.g. 1:5), mapped onto "
                         "0..1; needed for labels outside 0..1 (never guessed from the labels "
                         "present); a label outside LOW:HIGH is refused")
    common.add_profile_argument(
        compare, "applied to both runs' scores first, so that <metric>_calibrated and "
        "<metric>_decision are compared too (refused when a run has them)")
    common.add_seed_argument(compare, "the paired bootstrap")
    common.add_resamples_argument(compare, 2000)
    common.add_scoring_arguments(
        compare, chunk_help="rows per compute call when scoring (default as in score)")
    gates = compare.add_argument_group("gates for CI (docs/GATES.md)")
    gates.add_argument("--fail-on-regression", action="store_true",
                       help="exit 1 when a score of B is worse than A in the metric's direction "
                       "with a Holm-adjusted p below --alpha and |delta| >= --min-delta (the "
                       "reports are written either way)")
    common.add_alpha_argument(gates, "significance level of a regression")
    gates.add_argument("--min-delta", type=float, default=0.0, metavar="D",
                       help="the smallest |delta| that counts as a regression (default 0)")
    gates.add_argument("--max-unmeasured", type=float, default=0.5, metavar="FRACTION",
                       help="a score also fails when more than this share of the rows were not "
                       "compared (unmeasured in A or B, or in one run only; default 0.5: a "
                       "gate that cannot see does not pass)")
    gates.add_argument("--junit-xml", metavar="PATH",
                       help="write JUnit XML: one testcase per compared score, failed when B "
                       "regressed on it")


def run(args: argparse.Namespace) -> int:
    from ..analysis.gates import check_max_unmeasured
    from ..analysis.regressions import (
        check_alpha,
        check_min_delta,
        regression_checks,
        regressions_html,
        regressions_text,
    )
    from ..runs.files import check_input_path, check_output_paths, load_input

    common.check_at_least_one(("--resamples", args.resamples), ("--chunk-size", args.chunk_size))
    if args.dry_run:
        raise UserInputError("compare cannot dry-run: use `score --dry-run` on each input")
    check_alpha(args.alpha)
    check_min_delta(args.min_delta)
    check_max_unmeasured(args.max_unmeasured, "--max-unmeasured")
    options = common.judge_options(args)
    metric_options = _metric_options(args)
    if args.metric:
        common.check_judge_options(options)
    elif options:
        raise UserInputError(
            f"judge options ({', '.join('--' + k.replace('_', '-') for k in sorted(options))}) "
            "apply only with --metric (scoring A and B first)")
    check_input_path(Path(args.a), "A")
    check_input_path(Path(args.b), "B")
    check_output_paths({k: v for k, v in (("A", args.a), ("B", args.b),
                                          ("--profile", args.profile)) if v},
                       {"--json": args.json, "--html": args.html, "--junit-xml": args.junit_xml})
    common.quiet_libraries()
    # each run is read once: the checks below and the comparison take the same datasets
    run_a, run_b = load_input(Path(args.a), "A"), load_input(Path(args.b), "B")
    columns = (run_a.column_names, run_b.column_names)
    if args.fail_on_regression and args.metric:
        _check_shared_scores(args, columns, metric_options)
    if args.label:
        _check_label(args, columns)
    profile, metric_options = _profile(args, columns, metric_options, options)
    from ..analysis.comparison import compare
    from ..engine.backends.base import LogprobsUnavailable

    try:
        report = compare(run_a, run_b, names=(Path(args.a).name, Path(args.b).name),
                         metrics=args.metric, key=args.key, seed=args.seed,
                         n_resamples=args.resamples, chunk_size=args.chunk_size,
                         show_progress=not args.quiet, metric_options=metric_options,
                         profile=profile, **options)
    except LogprobsUnavailable as error:
        raise UserInputError(f"the judge model returns no log-probabilities: {error}") from None
    print(report.table())
    corrected = _corrected(report, args.label, args.label_range)
    checks = regression_checks(report, alpha=args.alpha, min_delta=args.min_delta,
                               max_unmeasured=args.max_unmeasured)
    print(regressions_text(checks))
    if args.json:
        common.write_json({**report.as_dict(), "regressions": [c.as_dict() for c in checks],
                    **({"corrected": corrected} if corrected is not None else {})},
                   Path(args.json))
        print(f"wrote {args.json}", file=sys.stderr)
    if args.html:
        from ..analysis.report import write_compare_html

        write_compare_html(report, args.html, gates=regressions_html(checks),
                           metric_options=metric_options)
        print(f"wrote {args.html}", file=sys.stderr)
    if args.junit_xml:
        write_junit_xml(args.junit_xml, "judge-metrics compare: regressions", checks,
                        classname="judge-metrics.compare", failure_type="Regression")
        print(f"wrote {args.junit_xml}", file=sys.stderr)
    return 1 if args.fail_on_regression and not all(c.passed for c in checks) else 0


def _metric_options(args: argparse.Namespace) -> dict | None:
    """``--option`` values for the metrics of ``--metric`` (``None`` without ``--metric``)."""
    from ..runs.batch import check_metric_names
    if not args.metric:
        if args.option:
            raise UserInputError("--option applies only with --metric (scoring A and B first)")
        return None
    check_metric_names(args.metric)
    return common.parse_metric_options(args.option, args.metric)


def _profile(args: argparse.Namespace, columns: tuple[list[str], list[str]],
             metric_options: dict | None, options: dict) -> tuple[dict | None, dict | None]:
    """``--profile``, checked before any scoring, and the metric options A and B are scored
    with: with ``--metric``, fitted for one of them with its options (its few-shot examples
    added to its options) and this run's judge; without, both runs hold its score column and
    neither its columns (whose judge scored them is not known here: said on stderr)."""
    from ..analysis.alignment_profile import check_runs, load_profile, profile_for_run
    from ..analysis.profile_checks import judge_text

    if args.metric:
        return profile_for_run(args.profile, args.metric, metric_options or {}, options)
    if not args.profile:
        return None, metric_options
    profile = load_profile(args.profile)
    check_runs(profile, *columns)
    for run, names in zip("AB", columns, strict=True):
        if profile["column"] not in names:
            raise UserInputError(f"--profile {args.profile}: run {run} has no {profile['column']!r}"
                                 f" (the {profile['metric']} score it was fitted on)")
    if profile.get("judge"):
        print(f"compare: --profile was fitted on the scores of the judge "
              f"{judge_text(profile['judge'])}; it applies only if that judge scored A and B "
              "(not checked: the runs do not record their judge)", file=sys.stderr)
    return profile, metric_options


def _check_shared_scores(args: argparse.Namespace, columns: tuple[list[str], list[str]],
                         metric_options: dict | None) -> None:
    """--fail-on-regression with --metric: A and B must share a metric, known before either is
    scored (without --metric, ``compare`` finds no shared score column before any work)."""
    from ..analysis.regressions import shared_scores

    if not shared_scores(*columns, args.metric, metric_options):
        raise UserInputError("--fail-on-regression: A and B share no score to compare (no "
                             f"metric of {', '.join(args.metric)} has its columns in both)")


def _corrected(report: Any, label: str | None,
               label_range: str | None) -> list[dict[str, Any]] | None:
    """With --label: the corrected differences, printed under the comparison."""
    if label is None:
        return None
    from ..analysis.corrected import (
        corrected_differences,
        differences_table,
        parse_label_range,
    )
    with common.scoring_errors():
        found = corrected_differences(report, label,
                                      label_range=parse_label_range(label_range))
    print(differences_table(found, label))
    return found


def _check_label(args: argparse.Namespace, columns: tuple[list[str], list[str]]) -> None:
    """--label: both runs hold the column, and the rows pair by a key column (a hash of the
    task columns would hold the labels, so a row labelled in one run only would not pair);
    known before any scoring."""
    from ..analysis.corrected import parse_label_range

    parse_label_range(args.label_range)
    for name, names in zip("AB", columns, strict=True):
        if args.label not in names:
            raise UserInputError(f"--label {args.label!r}: run {name} has no such column")
    if args.key is None and not all("id" in names for names in columns):
        raise UserInputError(f"--label {args.label!r}: pair the rows by a key column (--key, "
                              "or an id column in both runs): a hash of the task columns "
                              "would include the labels")
