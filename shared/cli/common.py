"""What the commands share: the judge, embedding and ``--option`` arguments and their
conversion, the up-front option check, quieter libraries, one-line warnings, the embedded
judge's notes and JSON output. No command imports another."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..base.errors import UnknownOptionError, UserInputError
from ..base.options import EMBEDDING_OPTIONS, Option, find, unknown_option
from ..base.redaction import redact
from ..engine.config import JUDGE_OPTIONS, JudgeConfig


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    """The judge options that have a command-line flag (``Option.cli`` of
    ``shared.engine.config.JUDGE_OPTIONS``), shared by `score` and `agree`. Each lands on the
    namespace under its option name (``--no-cache`` sets ``use_cache``); absent, it is
    ``None``."""
    _add_arguments(parser.add_argument_group("judge (metrics that call an LLM judge)"),
                   JUDGE_OPTIONS)


def add_embedding_arguments(parser: argparse.ArgumentParser) -> None:
    """The embedding options (``shared.base.options.EMBEDDING_OPTIONS``), as the judge ones."""
    _add_arguments(parser, EMBEDDING_OPTIONS)


def _add_arguments(group: Any, options: Sequence[Option]) -> None:
    for option in options:
        if option.cli is None:
            continue
        if option.type is bool:
            group.add_argument(option.cli, dest=option.name, action="store_const",
                               const=not option.default, help=_flag_help(option))
            continue
        if option.name == "judges":  # repeatable: one judge of a panel each
            group.add_argument(option.cli, dest=option.name, action="append",
                               type=parse_judge_spec, metavar="'provider=P,model=M[,base_url=U]'",
                               help="a judge of a panel, repeatable: its judge options as "
                               "NAME=VALUE pairs; every sample is judged by each, the top-level "
                               "judge options are their defaults (docs/PANEL.md)")
            continue
        # no argparse choices: JudgeConfig refuses a bad value in its own words
        group.add_argument(option.cli, dest=option.name, type=_cli_type(option),
                           metavar=option.metavar, help=_argument_help(option))


def parse_judge_spec(text: str) -> dict[str, Any]:
    """``--judge 'provider=P,model=M[,base_url=U,...]'``: one judge's options, each value read
    by its declaration (``timeout=30`` is a number). A comma starts a new pair only before
    ``NAME=``, so a value may hold commas."""
    import re

    names = {option.name: option for option in JUDGE_OPTIONS
             if option.name not in ("judges", "panel_aggregate")}
    judge: dict[str, Any] = {}
    for pair in re.split(r",(?=\s*[A-Za-z_]+=)", text.strip()):
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or name not in names:  # never the spec itself: it may hold the key
            what = f"{redact(name)!r} is no judge option" if sep else \
                f"pair {len(judge) + 1} has no '='"
            raise argparse.ArgumentTypeError(
                f"{what}: expected NAME=VALUE pairs separated by commas, NAME one of "
                f"{', '.join(names)}")
        try:
            judge[name] = names[name].parse(value.strip())
        except (TypeError, ValueError) as error:
            secrets = [value.strip()] if name == "api_key" else []
            raise argparse.ArgumentTypeError(
                f"{name}: {redact(str(error), secrets)}") from None
    return judge


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


def add_input_argument(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    """INPUT, the rows a command scores (`score`, `agree`, `calibrate`); ``optional``: the
    command checks it is given (score's is not, with --phoenix)."""
    parser.add_argument("input", metavar="INPUT", nargs="?" if optional else None,
                        help=".jsonl, .csv, .parquet, or a folder saved with Dataset.save_to_disk")


def add_out_arguments(parser: argparse.ArgumentParser, metavar: str = "SCORED",
                      help: str = "also write the scored rows (.jsonl, .csv or .parquet)"
                      ) -> None:
    """``--out``, the scored rows, and ``--csv-raw``, how a .csv ``--out`` keeps its cells."""
    parser.add_argument("--out", "-o", metavar=metavar, help=help)
    parser.add_argument(
        "--csv-raw", action="store_true",
        help="a .csv output keeps text cells as they are; by default a cell starting with =, +, "
        "-, @, a tab or a carriage return gets a leading ' so a spreadsheet shows it as text "
        "instead of running it as a formula (docs/RELIABILITY.md)")


def add_report_arguments(parser: argparse.ArgumentParser,
                         json_help: str = "also write the report as JSON",
                         html_help: str = "also write a self-contained HTML report (opens "
                         "offline)") -> None:
    """``--json`` and ``--html``, a command's report as data and as a page."""
    parser.add_argument("--json", metavar="REPORT", help=json_help)
    parser.add_argument("--html", metavar="REPORT", help=html_help)


def add_column_argument(parser: argparse.ArgumentParser) -> None:
    """``--column INPUT=COLUMN`` (read by :func:`parse_columns`; `agree`, `calibrate`)."""
    parser.add_argument("--column", action="append", default=[], metavar="INPUT=COLUMN",
                        help="use dataset column COLUMN as the metric's input column INPUT, "
                        "e.g. prediction=summary (repeatable); a text mapped to contexts "
                        "becomes one context")


def add_labelled_metric_arguments(parser: argparse.ArgumentParser, label_help: str, *,
                                  required: bool, score_key_help: str) -> None:
    """``--metric`` (one), ``--label``, ``--column`` and ``--score-key``: the arguments of a
    command that sets one metric's scores against human labels (`agree`, `calibrate`)."""
    parser.add_argument("--metric", "-m", required=required, metavar="NAME",
                        help="one metric name")
    parser.add_argument("--label", required=required, metavar="COLUMN", help=label_help)
    add_column_argument(parser)
    parser.add_argument("--score-key", metavar="KEY", help=score_key_help)


def add_seed_argument(parser: argparse.ArgumentParser, of: str) -> None:
    """``--seed``: ``of`` says what it seeds."""
    parser.add_argument("--seed", type=int, default=0, metavar="S",
                        help=f"seed of {of} (default 0)")


def add_profile_argument(parser: argparse.ArgumentParser, applied: str) -> None:
    """``--profile``: ``applied`` says what the command does with the profile."""
    parser.add_argument("--profile", metavar="FILE",
                        help=f"a profile written by `align --save-profile`: {applied}")


def add_alpha_argument(parser: Any, meaning: str) -> None:
    """``--alpha A`` (default 0.05); ``meaning`` says what it sets
    (``parser``: a parser or an argument group)."""
    parser.add_argument("--alpha", type=float, default=0.05, metavar="A",
                        help=f"{meaning} (default 0.05)")


def add_resamples_argument(parser: argparse.ArgumentParser, default: int) -> None:
    parser.add_argument("--resamples", type=int, default=default, metavar="N",
                        help=f"bootstrap resamples (default {default})")


def check_at_least_one(*flags: tuple[str, int | None]) -> None:
    """Each ``(flag, value)`` given is a count of at least 1 (``--chunk-size``,
    ``--resamples``, ...)."""
    for flag, value in flags:
        if value is not None and value < 1:
            raise UserInputError(f"{flag} must be >= 1, got {value}")


def add_option_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--option", action="append", default=[], metavar="[METRIC.]NAME=VALUE",
        help="a metric option (a compute() keyword argument), e.g. accuracy.mode=contains or "
        "reference_separator=/; VALUE is read as JSON when it parses (true, 0.8, [1, 2]), else "
        "as text; without METRIC. it goes to every metric named by --metric (repeatable)")


def add_scoring_arguments(parser: argparse.ArgumentParser,
                          chunk_help: str = "rows per compute call (default as in score)") -> None:
    """What every command that scores rows takes, in this order: the judge options, --option,
    the embedding options, --chunk-size and --quiet."""
    add_judge_arguments(parser)
    add_option_argument(parser)
    add_embedding_arguments(parser)
    parser.add_argument("--chunk-size", type=int, metavar="N", help=chunk_help)
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bars")


def parse_metric_options(pairs: Sequence[str], metrics: Sequence[str]) -> dict[str, dict]:
    """``--option`` values as ``score_dataset``'s ``metric_options``: ``{metric: {name: value}}``.

    ``metrics`` are the names given on the command line; an unscoped option goes to each of
    them, and needs them named (not ``all``). Each value is converted and checked by the
    metric's declaration of that option (``shared.base.options``); an option the metric does not
    declare, or a bad value, is a one-line ``UserInputError``."""
    from ..kit.registry import METRICS

    scoped: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        metric, dot, name = key.rpartition(".")
        if not sep or not name.isidentifier() or (dot and metric not in METRICS):
            raise UserInputError(
                f"--option {pair!r}: expected [METRIC.]NAME=VALUE with a metric name from "
                f"{', '.join(METRICS)}"
            )
        if not dot and "all" in metrics:
            raise UserInputError(
                f"--option {pair!r}: with --metric all, say which metric: METRIC.{pair}")
        for target in [metric] if dot else metrics:
            scoped.setdefault(target, {})[name] = _option_value(pair, target, name, text)
    return scoped


def _option_value(pair: str, metric: str, name: str, text: str) -> Any:
    from ..kit.registry import METRICS

    if metric not in METRICS:  # a bad --metric name: check_metric_names says so
        return text
    spec = METRICS[metric]
    declared = spec.options + (JUDGE_OPTIONS if spec.judge else ())
    option = find(declared, name)
    if option is None:  # in the words compute and the integrations use
        raise UnknownOptionError(
            f"--option {pair!r}: {unknown_option(metric, name, (o.name for o in declared))}")
    try:
        return option.parse(text)
    except (TypeError, ValueError) as error:
        raise UserInputError(f"--option {pair!r}: {metric}: {error}") from None


def parse_columns(pairs: Sequence[str]) -> dict[str, str]:
    """``--column INPUT=COLUMN`` pairs as ``{input: column}`` (`agree`, `calibrate`)."""
    columns: dict[str, str] = {}
    for pair in pairs:
        target, sep, source = pair.partition("=")
        if not sep or not target.strip() or not source.strip():
            raise UserInputError(f"--column {pair!r}: expected INPUT=COLUMN, "
                                  "e.g. prediction=summary")
        columns[target.strip()] = source.strip()
    return columns


@contextlib.contextmanager
def scoring_errors() -> Iterator[None]:
    """A labelled run's errors as one-line ``UserInputError``s (`agree`, `calibrate`): a bad
    label column, a judge without log-probabilities, a bad value."""
    from ..analysis.labels import LabelError
    from ..engine.backends.base import LogprobsUnavailable

    try:
        yield
    except LabelError as error:
        raise UserInputError(str(error)) from None  # the message, not our class's name
    except LogprobsUnavailable as error:
        raise UserInputError(f"the judge model returns no log-probabilities: {error}") from None
    except (TypeError, ValueError) as error:
        if isinstance(error, UserInputError):
            raise
        raise UserInputError(str(error)) from None


def judge_options(args: argparse.Namespace) -> dict[str, Any]:
    """The judge and embedding options given on the command line, for ``score_dataset``."""
    options = {option.name: getattr(args, option.name, None)
               for option in (*JUDGE_OPTIONS, *EMBEDDING_OPTIONS) if option.cli is not None}
    return {k: v for k, v in options.items() if v is not None}


def one_line_warning(message: Warning | str, category: type[Warning], *_: Any,
                      **__: Any) -> str:
    """Warnings (a cache moved aside, a read-only cache) as one redacted line."""
    return f"judge-metrics: warning: {redact(' '.join(str(message).split()))}\n"


def check_judge_options(options: dict[str, Any]) -> JudgeConfig:
    """Every judge and embedding option checked before any work (a bad --base-url port,
    --timeout 0...), by the one checker of a run's options
    (:func:`shared.runs.options.check_run_options`): the command's judge, resolved once
    (provider, model, endpoint, capabilities), for every later step to ask."""
    from ..runs.options import check_run_options

    return check_run_options(options).judge


def check_judge_capabilities(config: JudgeConfig, metrics: Iterable[str]) -> None:
    """Refuse, before any request, a judge that lacks what one of ``metrics`` needs (its
    ``REQUIRES``: l3score's top-5 log-probabilities), its provider's or its model's: the one
    line the metric itself would raise, as a usage error (exit 2). Every judge of a panel is
    checked, whatever their order, before any judge is asked anything."""
    from ..engine.config import judge_configs
    from ..kit.registry import METRICS

    for judge in judge_configs(config):
        for name in metrics:
            for capability, minimum in METRICS[name].requires:
                try:
                    judge.require(capability, name, minimum)
                except ValueError as error:
                    raise UserInputError(str(error)) from None


def quiet_libraries() -> None:
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


def write_json(data: dict[str, Any], path: Path) -> None:
    """Write atomically (a temporary file, then ``os.replace``); NaN is refused."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n",
                             encoding="utf-8")
        os.replace(temporary, path)
    except OSError as error:
        raise UserInputError(f"{path}: cannot write it: {error}") from None
    finally:
        temporary.unlink(missing_ok=True)


def labelled_run(args: argparse.Namespace, outputs: dict[str, str | None], analyse: Any,
                 table: Any) -> tuple[Any, dict[str, Any]]:
    """`calibrate`'s and `align`'s run: every output in ``outputs`` writable and apart from
    INPUT, the input read, ``--option`` parsed for the one metric, the judge options checked;
    then ``analyse(dataset, metric_options=..., show_progress=..., **judge options)``, its
    report's ``table`` printed and the scored rows written to ``--out``. Returns the scored rows
    and the report."""
    from ..runs import files

    if args.out:
        files.check_output_path(Path(args.out))
    files.check_output_paths({"INPUT": args.input}, outputs)
    quiet_libraries()
    dataset = files.load_input(Path(args.input))
    metric_options = parse_metric_options(args.option, [args.metric]).get(args.metric)
    options = judge_options(args)
    options.pop("dry_run", None)
    check_judge_options(options)
    with scoring_errors():
        scored, report = analyse(dataset, metric_options=metric_options,
                                 show_progress=not args.quiet, **options)
    print(table(report))
    if args.out:
        files.write_output(scored, Path(args.out), csv_raw=args.csv_raw)
        print(f"wrote {args.out} ({len(scored):,} rows)", file=sys.stderr)
    return scored, report


def write_report_files(args: argparse.Namespace, report: dict[str, Any],
                       write_html: Any) -> None:
    """``--json`` and ``--html`` of a command's report (``write_html(report, path)``), each
    announced on stderr."""
    if args.json:
        write_json(report, Path(args.json))
        print(f"wrote {args.json}", file=sys.stderr)
    if args.html:
        write_html(report, args.html)
        print(f"wrote {args.html}", file=sys.stderr)
