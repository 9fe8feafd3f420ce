"""``judge-metrics score``: score every row of a dataset file with metrics and write the rows
with their per-row scores (and, with ``--html``, a report of the run)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..analysis.alignment_profile import profile_columns, profile_for_run
from ..analysis.calibration_maps import calibrated_column, check_map
from ..analysis.gates import GATE_ON
from ..analysis.score_gates import ScoreGates
from ..analysis.trials import TrialOptions
from ..base.errors import UserInputError
from ..certification.card import check_card
from ..runs.batch import check_installed, check_metric_names, score_dataset, select_metrics
from ..runs.engines import ENGINES, Engine, LocalEngine, choose_engine
from ..runs.files import check_output_paths
from ..runs.options import check_run_options
from .common import (
    add_input_argument,
    add_out_arguments,
    add_profile_argument,
    add_scoring_arguments,
    check_at_least_one,
    check_judge_capabilities,
    judge_options,
    parse_metric_options,
    quiet_libraries,
    write_json,
)
from .judge_notes import note_embedded_judge, print_run_summary
from .score_traces import add_trace_arguments, run_traces, wants_traces

HELP = "score every row of a dataset file; write the rows with per-row scores"
DESCRIPTION = (
    "Score every row of INPUT with the given metrics and write OUTPUT: the input columns "
    "plus <metric> (per-row score) and <metric>_details (JSON) for every metric. "
    "Columns: question, prediction, reference, contexts, source, expected."
)


def add_arguments(score: argparse.ArgumentParser) -> None:
    add_input_argument(score, optional=True)  # none with --phoenix
    score.add_argument("--metric", "-m", action="append", required=True, metavar="NAME",
                       help="a metric name (repeat for several), or 'all'")
    add_out_arguments(score, metavar="OUTPUT",
                      help="where to write the scored rows (.jsonl, .csv or .parquet)")
    score.add_argument("--overwrite-input", action="store_true",
                       help="allow --out to be the INPUT file itself (it is replaced by the "
                       "scored rows); refused without this flag")
    add_scoring_arguments(score, chunk_help="rows per compute call (default 1000; judge "
                          "metrics 32)")
    score.add_argument("--html", metavar="REPORT",
                       help="also write a self-contained HTML report of the run (opens offline)")
    score.add_argument("--calibration", metavar="FILE",
                       help="a map written by `calibrate --save-calibration`: adds the column "
                       "<score column>_calibrated, P(label) per row")
    add_profile_argument(score, "adds the columns <metric>_calibrated (P(label)) and "
                         "<metric>_decision (0/1) per row")
    engine = score.add_argument_group("engine (docs/SCALING.md)")
    engine.add_argument("--engine", choices=list(ENGINES), default=LocalEngine.name,
                        help="local: this process (default); ray: Ray Data workers (pip install "
                        "'judge-metrics[ray]'); INPUT a .parquet/.jsonl file or folder, OUTPUT "
                        "a folder of .parquet/.jsonl files; --max-concurrency is the whole "
                        "job's, split over the workers")
    engine.add_argument("--address", metavar="ADDR",
                        help="Ray cluster to join (HOST:PORT or ray://HOST:10001; default: "
                        "$RAY_ADDRESS, else a new local cluster)")
    engine.add_argument("--workers", type=int, metavar="N",
                        help="Ray workers (default: the cluster's CPUs; judge metrics: at most "
                        "--max-concurrency)")
    score.add_argument("--json", metavar="SUMMARY",
                       help="also write the run's summary as JSON (each metric's aggregates, "
                       "rows, calls, cost; with --pass-k, pass^k and pass@k)")
    trials = score.add_argument_group("trials per task: pass^k (docs/CONVERSATIONS.md)")
    trials.add_argument("--task", metavar="COLUMN",
                        help="with --pass-k: the column naming each row's task (a row is one "
                        "trial of it)")
    trials.add_argument("--pass-k", metavar="K,K,...",
                        help="report pass^k (all k trials succeed, tau2-bench) and pass@k (at "
                        "least one does, Chen et al.) per k, with a 95%% interval over tasks; "
                        "one --metric; gates pass^K>=X, pass@K>=X")
    trials.add_argument("--success-at", type=float, metavar="X",
                        help="a trial succeeds when its score is >= X (default: the metric's "
                        "highest score, e.g. 1.0)")
    gates = score.add_argument_group("gates for CI (docs/GATES.md)")
    gates.add_argument("--gate", action="append", default=[], metavar="EXPR",
                       help="METRIC[.KEY]>=X or METRIC[.KEY]<=X, e.g. faithfulness>=0.8 or "
                       "rouge.rougeL>=0.3 (repeatable): exit 1 when a gate fails (OUTPUT is "
                       "written either way)")
    gates.add_argument("--gate-on", choices=(*GATE_ON, "corrected"),
                       help="the value gated: estimate (the mean, default), or the lower or "
                       "upper bound of its 95%% interval (the t-interval or Wilson's, the "
                       "wider; a panel's judge_agreement: its bootstrap interval; lower is the "
                       "conservative choice for a >= gate, upper for a <= gate); corrected: "
                       "the conservative end of the prediction-powered estimate's 95%% "
                       "interval, from the labels in --label (docs/CALIBRATION.md)")
    gates.add_argument("--label", metavar="COLUMN",
                       help="with --gate-on corrected: the human labels, blank on the "
                       "unlabelled rows (a uniformly random sample labelled)")
    gates.add_argument("--label-range", metavar="LOW:HIGH",
                       help="with --label: the rating scale's ends (e.g. 1:5), mapped onto the "
                       "metric's score range; needed for labels outside it (never guessed from "
                       "the labels present); a label outside LOW:HIGH is refused")
    gates.add_argument("--max-unmeasured", type=float, metavar="FRACTION",
                       help="a gate also fails when its metric left more than this share of "
                       "the rows unmeasured (default 0.1; 1 turns the bound off; the count "
                       "is always shown)")
    gates.add_argument("--junit-xml", metavar="PATH",
                       help="write the gates as JUnit XML: one testcase per gate")
    gates.add_argument("--card", metavar="FILE",
                       help="a judge card written by `certify --card` for this judge, metric, "
                       "options and prompts (refused otherwise); when it is not certified, a "
                       "gate of its metric that holds is inconclusive (exit 1; docs/CERTIFY.md)")
    add_trace_arguments(score)


# how a metric's compute() refuses an option it does not take (evaluate's, or ours)
_UNKNOWN_OPTION = re.compile(r"unexpected keyword argument|has no option")


def run(args: argparse.Namespace) -> int:
    if wants_traces(args):
        return run_traces(args)
    if args.input is None:
        raise UserInputError("INPUT is required (or --phoenix URL --project NAME)")
    engine = _engine(args)
    out = Path(args.out) if args.out else None
    if out is not None:
        engine.check_output(out)
    engine.check_input(Path(args.input))
    check_output_paths({k: v for k, v in (("INPUT", args.input),
                                          ("--calibration", args.calibration),
                                          ("--card", args.card),
                                          ("--profile", args.profile)) if v},
                       {"--out": out, "--html": args.html, "--junit-xml": args.junit_xml,
                        "--json": args.json},
                       overwrite_input=args.overwrite_input)
    check_metric_names(args.metric)
    trials = TrialOptions.checked(args.task, args.pass_k, args.success_at, args.metric)
    if args.calibration:
        check_map(args.calibration, args.metric)
    options = judge_options(args)
    checked = check_run_options(options)  # the judge, resolved once, and the embedding's
    judge = checked.judge
    profile, metric_options = profile_for_run(
        args.profile, args.metric, parse_metric_options(args.option, args.metric), options)
    gates = ScoreGates.checked(args.gate, args.gate_on, args.label, args.max_unmeasured,
                               args.junit_xml, args.dry_run, label_range=args.label_range,
                               panel=bool(getattr(args, "judges", None)),
                               profiled=profile and profile["metric"],
                               pass_k=trials.ks if trials else ())
    card = check_card(args.card, args.metric, options, metric_options) if args.card else None
    quiet_libraries()
    dataset = engine.read_input(Path(args.input))
    selected, skipped = select_metrics(args.metric, engine.columns(dataset), metric_options)
    if trials:
        trials.check_run(dataset, engine.columns(dataset))
    check_judge_capabilities(judge, selected)
    gates.check_run(dataset, selected, skipped)
    check_installed(selected, judge)
    note_embedded_judge(judge, selected, args.dry_run)
    from ..engine.backends.base import LogprobsUnavailable

    try:
        scored, summary = score_dataset(
            dataset, args.metric, chunk_size=args.chunk_size, show_progress=not args.quiet,
            metric_options=metric_options, engine=engine, judge=judge, **checked.embedding,
        )
    except LogprobsUnavailable as error:
        raise UserInputError(f"the judge model returns no log-probabilities: {error}") from None
    except TypeError as error:
        if args.option and _UNKNOWN_OPTION.search(str(error)):
            raise UserInputError(f"--option: {error}") from None
        raise
    if print_run_summary(summary, judge, "the input"):
        return 0
    assert out is not None
    if args.calibration:
        scored = calibrated_column(scored, args.calibration, args.metric)
    if args.profile:
        scored = profile_columns(scored, args.profile)
    try:
        rows = engine.write_output(scored, out, csv_raw=args.csv_raw)
    except OSError as error:
        raise UserInputError(
            f"cannot write --out {out}: {error.strerror or error}; "
            f"{_cache_note(args.use_cache, args.cache_dir)}"
        ) from None
    print(f"wrote {out} ({rows:,} rows)", file=sys.stderr)
    report = None
    if trials:
        from ..analysis.trials import trial_report

        report = trial_report(scored, trials)
        print(report.table())
    if args.json:
        write_json({**summary.as_dict(), **({"pass_k": report.as_dict()} if report else {})},
                   Path(args.json))
        print(f"wrote {args.json}", file=sys.stderr)
    results = gates.evaluate(scored, summary, report)
    if results.outcomes:
        print(results.table)
    if args.html:
        from ..analysis.report import write_score_html

        write_score_html(scored, summary, args.html, judge=judge,
                         source=args.input, gates=results.html, metric_options=metric_options,
                         pass_k=report.html() if report else None)
        print(f"wrote {args.html}", file=sys.stderr)
    status = gates.status(results.outcomes)
    return card.gate_status(results.outcomes, status) if card else status


def _engine(args: argparse.Namespace) -> Engine:
    """The engine of ``--engine``, chosen once for the whole command, with the flags that
    belong to the other one refused: ``--address`` and ``--workers`` to Ray; ``--html``,
    ``--dry-run``, ``--calibration``, ``--profile`` and ``--pass-k`` to this process; ``--out``
    is required but with ``--dry-run`` (which refuses ``--pass-k`` and ``--json``: no scores),
    and ``--chunk-size`` is at least 1."""
    if args.out is None and not args.dry_run:
        raise UserInputError("--out OUTPUT is required (or --dry-run)")
    for flag, value in (("--pass-k", args.pass_k), ("--json", args.json)):
        if value and args.dry_run:
            raise UserInputError(f"{flag} needs scores: a dry run computes none")
    check_at_least_one(("--chunk-size", args.chunk_size))
    engine = choose_engine(args.engine, workers=args.workers, address=args.address,
                           quiet=args.quiet)
    if engine.in_process:
        for flag, value in (("--address", args.address), ("--workers", args.workers)):
            if value is not None:
                raise UserInputError(f"{flag} needs --engine ray")
        return engine
    if args.workers is not None and args.workers < 1:
        raise UserInputError(f"--workers must be >= 1, got {args.workers}")
    for flag, value in (("--html", args.html), ("--dry-run", args.dry_run),
                        ("--calibration", args.calibration), ("--profile", args.profile),
                        ("--pass-k", args.pass_k)):
        if value:
            raise UserInputError(f"{flag} runs without Ray: drop --engine ray")
    return engine


def _cache_note(use_cache: bool | None, cache_dir: str | None) -> str:
    if use_cache is False:
        return "nothing was cached (--no-cache): a rerun sends every judge request again"
    from ..engine.cache import default_cache_dir

    folder = cache_dir or default_cache_dir()
    return (f"the judge answers are in the call cache ({folder}), so rerunning the same command "
            "with a writable --out is cheap")
