"""``score TRACES --traces`` and ``score --phoenix URL --project NAME``: score the LLM spans of a
trace file or of a Phoenix project (docs/TRACES.md), write the scored rows (``--out``), the
scores as ``gen_ai.evaluation.result`` events (``--write-back``) and, from Phoenix, back to it
as span annotations. The rows come from :mod:`judge_metrics.traces`; the metrics score them
through :func:`judge_metrics.traces.scoring.score_traces`, which leaves unmeasured (never 0)
what a span cannot give a metric."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..analysis.score_gates import ScoreGates
from ..base.errors import UserInputError
from ..runs.batch import check_installed, check_metric_names, select_metrics
from ..runs.engines import LocalEngine
from ..runs.files import check_output_path, check_output_paths, write_output
from ..runs.options import check_run_options
from .common import (
    check_judge_capabilities,
    judge_options,
    parse_metric_options,
    quiet_libraries,
)
from .judge_notes import note_embedded_judge, print_run_summary


def add_trace_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("traces (docs/TRACES.md)")
    group.add_argument("--traces", action="store_true",
                       help="INPUT is a trace file: OTLP JSON (the Collector's file exporter; "
                       "OpenTelemetry GenAI or OpenInference spans) or ATIF trajectories; one "
                       "row per LLM span")
    group.add_argument("--trace-format", choices=("otlp-json", "atif"),
                       help="the trace file's format (default: told from its content)")
    group.add_argument("--by", choices=("span", "conversation"), default=None,
                       help="one row per LLM span (default) or per conversation "
                       "(gen_ai.conversation.id / session.id; else per trace), as messages")
    group.add_argument("--references", metavar="FILE",
                       help="a .jsonl or .csv file whose columns (reference, expected...) are "
                       "joined to the spans by --join-on")
    group.add_argument("--join-on", default="span_id", metavar="COLUMN",
                       help="the key column of --references (default span_id; or trace_id, "
                       "conversation_id, question)")
    group.add_argument("--write-back", metavar="EVENTS",
                       help="also write one gen_ai.evaluation.result event per scored span and "
                       "metric, as OTLP JSON logs (.jsonl)")
    group.add_argument("--phoenix", metavar="URL",
                       help="read the spans of a running Phoenix (with --project) instead of "
                       "INPUT, and log the scores back as span annotations (pip install "
                       "'judge-metrics[traces]')")
    group.add_argument("--project", metavar="NAME", help="the Phoenix project (with --phoenix)")


def wants_traces(args: argparse.Namespace) -> bool:
    """Whether ``score`` reads traces; a trace flag without ``--traces``/``--phoenix`` is
    refused (it would be ignored)."""
    if getattr(args, "traces", False) or getattr(args, "phoenix", None):
        return True
    for flag, name in (("--trace-format", "trace_format"), ("--by", "by"),
                       ("--references", "references"), ("--write-back", "write_back"),
                       ("--project", "project")):
        if getattr(args, name, None) is not None:
            raise UserInputError(f"{flag} is for traces: give --traces (INPUT a trace file) or "
                                 "--phoenix URL --project NAME")
    return False


# score's flags that a trace run does not take, and the value each has when not given
_NOT_FOR_TRACES = (("--html", "html", None), ("--calibration", "calibration", None),
                   ("--profile", "profile", None),
                   ("--overwrite-input", "overwrite_input", False),
                   ("--task", "task", None), ("--pass-k", "pass_k", None),
                   ("--success-at", "success_at", None), ("--card", "card", None),
                   ("--json", "json", None),
                   ("--address", "address", None), ("--workers", "workers", None))


def _check(args: argparse.Namespace) -> None:
    for flag, name, unset in _NOT_FOR_TRACES:
        if getattr(args, name, unset) not in (unset, None):
            raise UserInputError(f"{flag} is not available with --traces/--phoenix")
    if getattr(args, "engine", LocalEngine.name) != LocalEngine.name:
        raise UserInputError("--traces/--phoenix score in this process: drop --engine")
    if args.phoenix:
        if not args.project:
            raise UserInputError("--phoenix needs --project NAME")
        if args.input:
            raise UserInputError("give INPUT with --traces, or --phoenix URL --project NAME; "
                                 "not both")
        if args.trace_format:
            raise UserInputError("--trace-format is for a trace file, not --phoenix")
    elif not args.input:
        raise UserInputError("--traces needs INPUT, the trace file")
    elif args.project:
        raise UserInputError("--project needs --phoenix URL")
    if args.out is None and not args.dry_run:
        raise UserInputError("--out OUTPUT is required (or --dry-run)")


def _join(rows: list[dict[str, Any]], path: Path, key: str) -> None:
    from ..runs.records import read_records

    if not path.is_file():
        raise UserInputError(f"--references {path}: no such file")
    table: dict[str, dict[str, Any]] = {}
    for number, record in enumerate(read_records(path), 1):
        if record.get(key) in (None, ""):
            raise UserInputError(f"--references {path}, row {number}: no {key!r} value")
        table[str(record[key])] = {k: v for k, v in record.items() if k != key}
    columns = {column for record in table.values() for column in record}
    clash = columns & {"messages", "question", "prediction", "trace_id", "span_id"}
    if clash:
        raise UserInputError(f"--references {path} has the span column(s) "
                             f"{', '.join(sorted(clash))}; give only what the spans lack")
    for row in rows:
        found = table.get(str(row.get(key)))
        for column in columns:
            row[column] = None if found is None else found.get(column)


def run_traces(args: argparse.Namespace) -> int:
    _check(args)
    out = Path(args.out) if args.out else None
    if out is not None:
        check_output_path(out)
    check_output_paths({k: v for k, v in (("TRACES", args.input),
                                          ("--references", args.references)) if v},
                       {"--out": out, "--write-back": args.write_back,
                        "--junit-xml": args.junit_xml})
    check_metric_names(args.metric)
    metric_options = parse_metric_options(args.option, args.metric)
    checked = check_run_options(judge_options(args))  # the judge, resolved once
    judge = checked.judge
    gates = ScoreGates.checked(args.gate, args.gate_on, args.label, args.max_unmeasured,
                               args.junit_xml, args.dry_run, label_range=args.label_range)
    by = args.by or "span"
    if args.phoenix:
        from ..traces.phoenix import read_project

        rows = read_project(args.phoenix, args.project, by=by)
    else:
        from ..traces import read

        rows = read(args.input, format=args.trace_format, by=by)
    if not rows:
        raise UserInputError(f"{args.input or args.project}: no LLM span to score (docs/TRACES.md "
                             "says which spans are read)")
    if args.references:
        _join(rows, Path(args.references), args.join_on)
    quiet_libraries()
    from ..traces.scoring import score_traces, trace_dataset

    selected, skipped = select_metrics(args.metric, {k for row in rows for k in row},
                                       metric_options)
    check_judge_capabilities(judge, selected)
    if gates:
        gates.check_run(trace_dataset(rows), selected, skipped)
    check_installed(selected, judge)
    note_embedded_judge(judge, selected, args.dry_run)
    from ..engine.backends.base import LogprobsUnavailable

    try:
        scored, summary = score_traces(rows, args.metric, metric_options=metric_options,
                                       chunk_size=args.chunk_size, show_progress=not args.quiet,
                                       judge=judge, **checked.embedding)
    except LogprobsUnavailable as error:
        raise UserInputError(f"the judge model returns no log-probabilities: {error}") from None
    if print_run_summary(summary, judge, "the spans"):
        return 0
    assert out is not None
    write_output(scored, out, csv_raw=args.csv_raw)
    print(f"wrote {out} ({len(scored):,} rows)", file=sys.stderr)
    from ..traces.events import evaluation_results, write_events

    evaluations = evaluation_results(scored, [m.metric for m in summary.metrics])
    if args.write_back:
        count = write_events(Path(args.write_back), evaluations)
        print(f"wrote {args.write_back} ({count:,} gen_ai.evaluation.result events)",
              file=sys.stderr)
    if args.phoenix:
        from ..traces.phoenix import log_annotations

        count = log_annotations(args.phoenix, args.project, evaluations)
        print(f"logged {count:,} span annotations to Phoenix project {args.project!r}",
              file=sys.stderr)
    results = gates.evaluate(scored, summary)
    if results.outcomes:
        print(results.table)
    return gates.status(results.outcomes)
