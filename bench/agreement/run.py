"""The agreement benchmark (`make agreement`): every metric against human labels.

Scores the three labelled sets in ``bench/agreement/data/`` (SOURCES.md) with the metrics,
through ``shared.analysis.agreement.agree`` (the same path as ``judge-metrics agree``), and
writes
``bench/AGREEMENT.md``. With the embedded default judge it also writes
``shared/analysis/agreement_figures.json`` (read by the CLI summary and the demo) and rewrites the
"Agreement with people" block of every metric card. Every number comes from this run.

    .venv/bin/python bench/agreement/run.py [judge options as in `judge-metrics score`]
        [--judge-rows N] [--seed S] [--only METRIC ...] [--run-seconds S] [--side-seconds S]
        [--no-side-by-side]

Judge metrics run on a seeded subsample (``--judge-rows``, the same rows for every judge metric
of a set); string and embedding metrics on every row. Davidson's texts are never printed. The
report ends with each 0/1-labelled metric's held-out agreement before and after alignment
(``held_out.py``).

The side-by-side section then starts one llama.cpp server (the embedded SmolLM2 GGUF) and runs
our judge metrics (``provider="openai-compatible"``) and the peers' equivalents (valor-lite,
RAGAS, DeepEval, each in a ``.venv-agreement`` process: ``peers.py``) on the same seeded rows,
within what the main tables left of the run's 20 minutes (``--run-seconds``; ``--side-seconds``
sets it outright), with each side's error rate (bench/README.md)."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import held_out  # noqa: E402
from labelled import JUDGE_ROWS, ROOT, jobs, run_job  # noqa: E402
from side import (  # noqa: E402
    MIN_SIDE_SECONDS,
    RUN_SECONDS,
    SIDE_SECONDS,
    pairings,
    run_side_by_side,
    short,
    side_budget,
)
from writeup import (  # noqa: E402
    FIGURES,
    REPORT,
    card_block,
    rewrite_card,
    side_section,
    write_figures,
    write_report,
)

from shared import agreement  # noqa: E402
from shared.cli.common import add_judge_arguments, judge_options  # noqa: E402
from shared.kit.registry import available  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_judge_arguments(parser)
    parser.add_argument("--judge-rows", type=int, metavar="N",
                        help="judge rows per metric (default: " + ", ".join(
                            f"{k} {v}" for k, v in JUDGE_ROWS.items()) + ")")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", action="append", metavar="METRIC",
                        help="run only these metrics/baselines (writes the report and, with "
                        "the embedded judge, their figures; not the cards)")
    parser.add_argument("--report", default=str(REPORT), help="where to write the table")
    parser.add_argument("--side-seconds", type=float, metavar="S",
                        help="time shared by ours and the peers in the side-by-side section "
                             f"(default: what is left of --run-seconds after the main tables, "
                             f"at most {SIDE_SECONDS:g} and at least {MIN_SIDE_SECONDS:g})")
    parser.add_argument("--run-seconds", type=float, default=RUN_SECONDS, metavar="S",
                        help="the whole run's time, which sets the side-by-side section's "
                             f"default share (default {RUN_SECONDS:g})")
    parser.add_argument("--no-side-by-side", action="store_true",
                        help="skip the side-by-side section (it says so in the report)")
    args = parser.parse_args(argv)
    if args.dry_run:
        parser.error("--dry-run is not supported here; plan one metric with "
                     "`judge-metrics agree ... --dry-run`")
    options = judge_options(args)
    rows = {k: (args.judge_rows or v) for k, v in JUDGE_ROWS.items()}
    selected = [j for j in jobs() if (not args.only or j.name in args.only)
                and (j.baseline is not None or j.name in available())]
    from shared.engine.config import judge_config

    judge = judge_config(options)
    embedded, judge_name, provider = judge.is_embedded, agreement.judge_model_name(judge), \
        judge.provider
    load_start = os.getloadavg()[0]
    started = time.perf_counter()
    results = []
    for job in selected:
        print(f"agreement: {job.title} on {job.data[1]} vs {job.label}", file=sys.stderr)
        results.append(run_job(job, options, rows, args.seed))
    header = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "judge": f"{judge_name}, the default (provider {provider})" if embedded else (
            f"{provider}: {judge_name}"),
        "wall": time.perf_counter() - started, "load_start": load_start,
        "load_end": os.getloadavg()[0], "seed": args.seed,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "judge_rows": ", ".join(f"{k} {v}" for k, v in rows.items()),
    }
    side, why_not = None, "--no-side-by-side was given"
    if not args.no_side_by_side and (not args.only or any(
            p.metric in args.only for p in pairings())):
        try:
            seconds = args.side_seconds if args.side_seconds is not None else side_budget(
                args.run_seconds, time.perf_counter() - started)
            side = run_side_by_side(args.seed, seconds, only=args.only)
            side["run_seconds"] = None if args.side_seconds is not None else args.run_seconds
            why_not = None
        except (ImportError, OSError, RuntimeError) as error:  # no server: the section says so
            why_not = f"the llama.cpp server could not start ({type(error).__name__}: " + (
                short(str(error), 200) + ")")
    elif args.only:
        why_not = "--only selected no metric that has a side-by-side row"
    header["wall"] = time.perf_counter() - started
    header["load_end"] = os.getloadavg()[0]
    write_report(results, header, Path(args.report), side_section(side, why_not))
    # judge answers come from the call cache the tables above filled
    held_out.run(options, rows, args.seed, args.only, Path(args.report))
    print(f"wrote {args.report} ({header['wall']:.0f} s)", file=sys.stderr)
    if embedded:
        write_figures(results, header, FIGURES, keep=bool(args.only))
    if embedded and not args.only:
        for metric in available():
            rewrite_card(metric, card_block(metric, results, header))
        print(f"wrote {FIGURES.relative_to(ROOT)} and the metric cards' agreement blocks",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
