"""``judge-metrics score``: score every row of a dataset file with metrics and write the rows
with their per-row scores (and, with ``--html``, a report of the run)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from ..runs.batch import check_metric_names, score_dataset
from ..runs.files import (
    check_input_path,
    check_output_path,
    check_output_paths,
    check_writable_file,
    read_input,
    write_output,
)
from ..runs.summary import BatchInputError, total_plan
from .common import (
    add_csv_raw_argument,
    add_embedding_arguments,
    add_judge_arguments,
    add_option_argument,
    check_judge_options,
    judge_options,
    parse_metric_options,
    print_embedded_judge_notes,
    quiet_libraries,
)


def add_parser(commands: Any) -> argparse.ArgumentParser:
    score = commands.add_parser(
        "score",
        help="score every row of a dataset file; write the rows with per-row scores",
        description=(
            "Score every row of INPUT with the given metrics and write OUTPUT: the input columns "
            "plus <metric> (per-row score) and <metric>_details (JSON) for every metric. "
            "Columns: question, prediction, reference, contexts, source, expected."
        ),
    )
    score.add_argument("input", metavar="INPUT",
                       help=".jsonl, .csv, .parquet, or a folder saved with Dataset.save_to_disk")
    score.add_argument("--metric", "-m", action="append", required=True, metavar="NAME",
                       help="a metric name (repeat for several), or 'all'")
    score.add_argument("--out", "-o", metavar="OUTPUT",
                       help="where to write the scored rows (.jsonl, .csv or .parquet)")
    score.add_argument("--overwrite-input", action="store_true",
                       help="allow --out to be the INPUT file itself (it is replaced by the "
                       "scored rows); refused without this flag")
    add_csv_raw_argument(score)
    add_judge_arguments(score)
    add_embedding_arguments(score)
    score.add_argument("--chunk-size", type=int, metavar="N",
                       help="rows per compute call (default 1000; judge metrics 32, local 8)")
    score.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    score.add_argument("--html", metavar="REPORT",
                       help="also write a self-contained HTML report of the run (opens offline)")
    engine = score.add_argument_group("engine (docs/SCALING.md)")
    engine.add_argument("--engine", choices=["local", "ray"], default="local",
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
    add_option_argument(score)
    return score



# how a metric's compute() refuses an option it does not take (evaluate's, or ours)
_UNKNOWN_OPTION = re.compile(r"unexpected keyword argument|unknown option")


def run(args: argparse.Namespace) -> int:
    if args.out is None and not args.dry_run:
        raise BatchInputError("--out OUTPUT is required (or --dry-run)")
    out = Path(args.out) if args.out else None
    if out is not None and args.engine != "ray":  # Ray writes a folder: _check_engine
        check_output_path(out)
    if args.chunk_size is not None and args.chunk_size < 1:
        raise BatchInputError(f"--chunk-size must be >= 1, got {args.chunk_size}")
    if args.html:
        check_writable_file(Path(args.html), "--html")
    check_metric_names(args.metric)
    check_input_path(Path(args.input))
    check_output_paths({"INPUT": args.input}, {"--out": out, "--html": args.html},
                       overwrite_input=args.overwrite_input)
    _check_engine(args, out)
    options = judge_options(args)
    metric_options = parse_metric_options(args.option, args.metric)
    check_judge_options(options)
    quiet_libraries()
    if args.engine == "ray":
        from ..runs import ray_engine

        ray_engine.connect(args.address, quiet=args.quiet)
        dataset = ray_engine.read_input(Path(args.input))
    else:
        dataset = read_input(Path(args.input))
    _note_local_judge(args)
    from ..engine.backends.base import LogprobsUnavailable

    try:
        scored, summary = score_dataset(
            dataset, args.metric, chunk_size=args.chunk_size, show_progress=not args.quiet,
            metric_options=metric_options, engine=args.engine, workers=args.workers, **options,
        )
    except LogprobsUnavailable as error:
        raise BatchInputError(f"the judge model returns no log-probabilities: {error}") from None
    except TypeError as error:
        if args.option and _UNKNOWN_OPTION.search(str(error)):
            raise BatchInputError(f"--option: {error}") from None
        raise
    if summary.skipped:
        for name, reason in summary.skipped.items():
            print(f"skipped {name}: {reason}", file=sys.stderr)
    if not summary.metrics:
        raise BatchInputError("no metric to run: the input has none of the columns they need")
    print(summary.table())
    print_embedded_judge_notes(summary, args)
    if summary.dry_run:
        plan = total_plan(summary.metrics)
        cost = "unknown (no price for this model)" if plan["cost"] is None else (
            f"${plan['cost']:.4f}")
        print(f"dry run: {plan['requests']:,} requests, estimated cost {cost}; nothing was sent")
        return 0
    assert out is not None
    try:
        if args.engine == "ray":
            rows = ray_engine.write_output(scored, out)
        else:
            write_output(scored, out, csv_raw=args.csv_raw)
            rows = len(scored)
    except OSError as error:
        raise BatchInputError(
            f"cannot write --out {out}: {error.strerror or error}; {_cache_note(args)}"
        ) from None
    print(f"wrote {out} ({rows:,} rows)", file=sys.stderr)
    if args.html:
        from ..analysis.report import write_score_html

        write_score_html(scored, summary, args.html, judge=judge_options(args),
                         source=args.input)
        print(f"wrote {args.html}", file=sys.stderr)
    return 0


def _check_engine(args: argparse.Namespace, out: Path | None) -> None:
    """``--address``/``--workers`` need ``--engine ray``, which takes no --html or --dry-run."""
    if args.engine != "ray":
        for flag, value in (("--address", args.address), ("--workers", args.workers)):
            if value is not None:
                raise BatchInputError(f"{flag} needs --engine ray")
        return
    if args.workers is not None and args.workers < 1:
        raise BatchInputError(f"--workers must be >= 1, got {args.workers}")
    for flag, value in (("--html", args.html), ("--dry-run", args.dry_run)):
        if value:
            raise BatchInputError(f"{flag} runs without Ray: drop --engine ray")
    try:
        import ray  # noqa: F401
    except ImportError:
        raise BatchInputError("--engine ray needs Ray: pip install 'judge-metrics[ray]'"
                              ) from None
    from ..runs import ray_engine

    ray_engine.check_paths(Path(args.input), out)


def _cache_note(args: argparse.Namespace) -> str:
    if args.use_cache is False:
        return "nothing was cached (--no-cache): a rerun sends every judge request again"
    from ..engine.cache import default_cache_dir

    folder = args.cache_dir or default_cache_dir()
    return (f"the judge answers are in the call cache ({folder}), so rerunning the same command "
            "with a writable --out is cheap")


def _note_local_judge(args: argparse.Namespace) -> None:
    from ..kit.registry import METRICS, available

    names = available() if "all" in args.metric else args.metric
    local = args.provider == "local" or (args.provider is None and not args.api_key)
    if local and not args.model and not args.dry_run and any(
            METRICS[n].judge for n in names):
        print("judge: the embedded SmolLM2-135M-Instruct on this CPU (tiny and slow: a demo, "
              "not a real evaluation; point --provider/--model/--base-url at a strong judge)",
              file=sys.stderr)
