"""``judge-metrics score`` / ``python -m shared score``: score a dataset file with metrics.

Exit codes: 0 done; 2 bad arguments, input or judge configuration (a one-line message, no
traceback); 130 interrupted (rerun the same command: finished judge calls come from the cache).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .agree_cli import add_agree_parser, print_embedded_judge_notes, run_agree
from .batch import BatchInputError, check_metric_names, score_dataset, total_plan
from .compare_cli import add_compare_parser, run_compare
from .config import JUDGE_OPTIONS
from .options import EMBEDDING_OPTIONS, Option, find
from .records import read_records
from .redaction import redact

INPUT_SUFFIXES = (".jsonl", ".csv", ".parquet")
OUTPUT_SUFFIXES = (".jsonl", ".csv", ".parquet")
# how a metric's compute() refuses an option it does not take (evaluate's, or ours)
_UNKNOWN_OPTION = re.compile(r"unexpected keyword argument|unknown option")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="judge-metrics",
        description="Score LLM and QA outputs with judge-metrics' evaluate metrics.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
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
    add_compare_parser(commands)
    add_agree_parser(commands)
    return parser


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    """The judge options that have a command-line flag (``Option.cli`` of
    ``shared.config.JUDGE_OPTIONS``), shared by `score` and `agree`. Each lands on the namespace
    under its option name (``--no-cache`` sets ``use_cache``); absent, it is ``None``."""
    _add_arguments(parser.add_argument_group("judge (metrics that call an LLM judge)"),
                   JUDGE_OPTIONS)


def add_embedding_arguments(parser: argparse.ArgumentParser) -> None:
    """The embedding options (``shared.options.EMBEDDING_OPTIONS``), as the judge ones."""
    _add_arguments(parser, EMBEDDING_OPTIONS)


def _add_arguments(group: Any, options: Sequence[Option]) -> None:
    for option in options:
        if option.cli is None:
            continue
        if option.type is bool:
            group.add_argument(option.cli, dest=option.name, action="store_const",
                               const=not option.default, help=_flag_help(option))
            continue
        # no argparse choices: JudgeConfig refuses a bad value in its own words
        group.add_argument(option.cli, dest=option.name, type=_cli_type(option),
                           metavar=option.metavar, help=_argument_help(option))


def _flag_help(option: Option) -> str:
    if option.default:
        return f"turn off {option.name}: {option.doc}"
    return option.doc


def _argument_help(option: Option) -> str:
    if option.default is None:
        return option.doc
    return f"{option.doc} (default {option.default_text()})"


def _cli_type(option: Option) -> Any:
    return {int: int, float: float}.get(option.type, str)


def add_option_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--option", action="append", default=[], metavar="[METRIC.]NAME=VALUE",
        help="a metric option (a compute() keyword argument), e.g. accuracy.mode=contains or "
        "reference_separator=/; VALUE is read as JSON when it parses (true, 0.8, [1, 2]), else "
        "as text; without METRIC. it goes to every metric named by --metric (repeatable)")


def parse_metric_options(pairs: Sequence[str], metrics: Sequence[str]) -> dict[str, dict]:
    """``--option`` values as ``score_dataset``'s ``metric_options``: ``{metric: {name: value}}``.

    ``metrics`` are the names given on the command line; an unscoped option goes to each of
    them, and needs them named (not ``all``). Each value is converted and checked by the
    metric's declaration of that option (``shared.options``); an option the metric does not
    declare, or a bad value, is a one-line ``BatchInputError``."""
    from .registry import METRICS

    scoped: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        metric, dot, name = key.rpartition(".")
        if not sep or not name.isidentifier() or (dot and metric not in METRICS):
            raise BatchInputError(
                f"--option {pair!r}: expected [METRIC.]NAME=VALUE with a metric name from "
                f"{', '.join(METRICS)}"
            )
        if not dot and "all" in metrics:
            raise BatchInputError(
                f"--option {pair!r}: with --metric all, say which metric: METRIC.{pair}")
        for target in [metric] if dot else metrics:
            scoped.setdefault(target, {})[name] = _option_value(pair, target, name, text)
    return scoped


def _option_value(pair: str, metric: str, name: str, text: str) -> Any:
    from .registry import METRICS

    if metric not in METRICS:  # a bad --metric name: check_metric_names says so
        return text
    spec = METRICS[metric]
    declared = spec.options + (JUDGE_OPTIONS if spec.judge else ())
    option = find(declared, name)
    if option is None:
        known = ", ".join(o.name for o in spec.options) or "none"
        raise BatchInputError(
            f"--option {pair!r}: {metric} has no option {name!r} (its options: {known}"
            f"{'; and the judge options' if spec.judge else ''})")
    try:
        return option.parse(text)
    except (TypeError, ValueError) as error:
        raise BatchInputError(f"--option {pair!r}: {metric}: {error}") from None


def judge_options(args: argparse.Namespace) -> dict[str, Any]:
    """The judge and embedding options given on the command line, for ``score_dataset``."""
    options = {option.name: getattr(args, option.name, None)
               for option in (*JUDGE_OPTIONS, *EMBEDDING_OPTIONS) if option.cli is not None}
    return {k: v for k, v in options.items() if v is not None}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    warnings.formatwarning = _one_line_warning
    try:
        if args.command == "compare":
            return run_compare(args)
        return run_agree(args) if args.command == "agree" else _score(args)
    except BatchInputError as error:
        print(f"judge-metrics: error: {redact(str(error), [args.api_key])}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\njudge-metrics: interrupted; rerun the same command to resume (finished judge "
              "calls are cached)", file=sys.stderr)
        return 130


def _one_line_warning(message: Warning | str, category: type[Warning], *_: Any,
                      **__: Any) -> str:
    """Warnings (a cache moved aside, a read-only cache) as one redacted line."""
    return f"judge-metrics: warning: {redact(' '.join(str(message).split()))}\n"


def _score(args: argparse.Namespace) -> int:
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
    _check_engine(args, out)
    if out is not None and not args.overwrite_input and _same_file(out, Path(args.input)):
        raise BatchInputError(
            f"--out {out} is the INPUT file; write elsewhere, or pass --overwrite-input to "
            "replace it with the scored rows"
        )
    options = judge_options(args)
    metric_options = parse_metric_options(args.option, args.metric)
    check_judge_options(options)
    _quiet_libraries()
    if args.engine == "ray":
        from . import ray_engine

        ray_engine.connect(args.address, quiet=args.quiet)
        dataset = ray_engine.read_input(Path(args.input))
    else:
        dataset = read_input(Path(args.input))
    _note_local_judge(args)
    from .backends.base import LogprobsUnavailable

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
            write_output(scored, out)
            rows = len(scored)
    except OSError as error:
        raise BatchInputError(
            f"cannot write --out {out}: {error.strerror or error}; {_cache_note(args)}"
        ) from None
    print(f"wrote {out} ({rows:,} rows)", file=sys.stderr)
    if args.html:
        from .report import write_score_html

        write_score_html(scored, summary, args.html, judge=judge_options(args))
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
    from . import ray_engine

    ray_engine.check_paths(Path(args.input), out)


def check_judge_options(options: dict[str, Any]) -> None:
    """Every judge option checked before any work (a bad --base-url port, --timeout 0...)."""
    from .batch import EMBEDDING_OPTION_NAMES
    from .config import judge_config

    try:
        judge_config(**{k: v for k, v in options.items() if k not in EMBEDDING_OPTION_NAMES})
    except (TypeError, ValueError) as error:
        raise BatchInputError(str(error)) from None


def _cache_note(args: argparse.Namespace) -> str:
    if args.use_cache is False:
        return "nothing was cached (--no-cache): a rerun sends every judge request again"
    from .cache import default_cache_dir

    folder = args.cache_dir or default_cache_dir()
    return (f"the judge answers are in the call cache ({folder}), so rerunning the same command "
            "with a writable --out is cheap")


def _same_file(out: Path, source: Path) -> bool:
    try:
        if out.exists() and source.exists():
            return os.path.samefile(out, source)
        return out.resolve() == source.resolve()
    except OSError:
        return False


def _note_local_judge(args: argparse.Namespace) -> None:
    from .registry import METRICS, available

    names = available() if "all" in args.metric else args.metric
    local = args.provider == "local" or (args.provider is None and not args.api_key)
    if local and not args.model and not args.dry_run and any(
            METRICS[n].judge for n in names):
        print("judge: the embedded SmolLM2-135M-Instruct on this CPU (tiny and slow: a demo, "
              "not a real evaluation; point --provider/--model/--base-url at a strong judge)",
              file=sys.stderr)


def _quiet_libraries() -> None:
    """Our per-metric row bars are the progress display: silence the libraries' own bars."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import datasets
    import evaluate
    import huggingface_hub.utils

    huggingface_hub.utils.disable_progress_bars()
    if "transformers" in sys.modules:  # it read the setting when it was imported
        sys.modules["transformers"].utils.logging.disable_progress_bar()

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    evaluate.logging.set_verbosity_error()


def check_writable_file(path: Path, option: str) -> None:
    """Fail early on an output path that is a folder or whose folder cannot be made or written."""
    if path.is_dir():
        raise BatchInputError(f"{option} {path} is a folder; give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BatchInputError(f"{option} {path}: cannot create its folder: {error}") from None
    if not os.access(path.parent, os.W_OK):
        raise BatchInputError(f"{option} {path}: folder {path.parent} is not writable")


def check_output_path(out: Path) -> None:
    if out.suffix.lower() not in OUTPUT_SUFFIXES:
        raise BatchInputError(
            f"--out {out}: unsupported format {out.suffix or '(none)'}; use "
            f"{', '.join(OUTPUT_SUFFIXES)}"
        )
    check_writable_file(out, "--out")
    remove_stale_temporaries(out)
    probe = _temporary(out)
    try:
        with probe.open("w", encoding="utf-8") as handle:
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as error:
        raise BatchInputError(f"--out {out}: cannot write there: {error.strerror or error}"
                              ) from None
    finally:
        try:
            probe.unlink(missing_ok=True)
        except OSError:
            pass


def _temporary(out: Path) -> Path:
    return out.with_name(f".{out.name}.{os.getpid()}.tmp")


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Delete ``.OUT.PID.tmp`` files left by a killed run (their process is gone)."""
    pattern = re.compile(rf"\.{re.escape(out.name)}\.(\d+)\.tmp")
    removed = []
    try:
        entries = list(out.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or _alive(int(match.group(1))):
            continue
        try:
            entry.unlink()
            removed.append(entry)
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0
    return True


# ---------------------------------------------------------------------------------- reading


def check_input_path(path: Path) -> None:
    """Fail early (before the slow imports) on a missing input or an unknown format."""
    if not path.exists():
        raise BatchInputError(f"INPUT {path}: no such file or folder")
    if not path.is_dir() and path.suffix.lower() not in INPUT_SUFFIXES:
        raise BatchInputError(
            f"INPUT {path}: unsupported format {path.suffix or '(none)'}; use .jsonl, .csv, "
            ".parquet, or a folder saved with Dataset.save_to_disk"
        )


def read_input(path: Path) -> Any:
    """The input file or saved-dataset folder as a ``datasets.Dataset``."""
    check_input_path(path)
    try:
        if path.is_dir():
            return _read_saved(path)
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            return _read_parquet(path)
        records = read_records(path)
        return _dataset_from_records(path, records)
    except (OSError, UnicodeDecodeError) as error:
        raise BatchInputError(f"INPUT {path}: cannot read it: {error}") from None


def _read_saved(path: Path) -> Any:
    import datasets

    try:
        loaded = datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as error:
        raise BatchInputError(
            f"INPUT {path}: a folder, but not one saved with Dataset.save_to_disk ({error})"
        ) from None
    if isinstance(loaded, datasets.DatasetDict):
        if len(loaded) != 1:
            raise BatchInputError(
                f"INPUT {path}: a DatasetDict with splits {', '.join(loaded)}; save one split "
                "with Dataset.save_to_disk"
            )
        loaded = next(iter(loaded.values()))
    return loaded


def _read_parquet(path: Path) -> Any:
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except pa.ArrowException as error:
        raise BatchInputError(f"INPUT {path}: not a readable Parquet file ({error})") from None
    return datasets.Dataset(table)


def _dataset_from_records(path: Path, records: list[dict[str, Any]]) -> Any:
    """A ``Dataset`` from rows; in a column that mixes strings and lists (``reference``: one
    or several references per row) every string becomes a one-item list."""
    import datasets
    import pyarrow as pa

    if not records:
        raise BatchInputError(f"INPUT {path}: no rows")
    names: dict[str, None] = {}
    for record in records:
        names.update(dict.fromkeys(record))
    arrays = {}
    for name in names:
        values = [record.get(name) for record in records]
        if any(isinstance(v, list) for v in values) and any(isinstance(v, str) for v in values):
            values = [[v] if isinstance(v, str) else v for v in values]
        try:
            arrays[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            raise BatchInputError(
                f"INPUT {path}: column {name!r} mixes value types that cannot share a column "
                f"({error})"
            ) from None
    return datasets.Dataset(pa.table(arrays))


# ---------------------------------------------------------------------------------- writing


def write_output(dataset: Any, out: Path) -> None:
    """Write atomically: a temporary file in the same folder, then ``os.replace``."""
    temporary = _temporary(out)
    try:
        suffix = out.suffix.lower()
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            pq.write_table(dataset.with_format("arrow")[:], temporary)
        elif suffix == ".csv":
            _write_csv(dataset, temporary)
        else:
            _write_jsonl(dataset, temporary)
        os.replace(temporary, out)
    finally:
        temporary.unlink(missing_ok=True)


def _rows(dataset: Any, batch_size: int = 1000) -> Any:
    for start in range(0, len(dataset), batch_size):
        batch = dataset[start:start + batch_size]
        names = list(batch)
        for values in zip(*(batch[n] for n in names), strict=True):
            yield dict(zip(names, values, strict=True))


def _write_jsonl(dataset: Any, path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in _rows(dataset):
            handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _write_csv(dataset: Any, path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=dataset.column_names)
        writer.writeheader()
        for row in _rows(dataset):
            writer.writerow({
                k: json.dumps(v, ensure_ascii=False, default=str) if isinstance(v, (list, dict))
                else ("" if v is None else v)
                for k, v in row.items()
            })
        handle.flush()
        os.fsync(handle.fileno())
