"""``judge-metrics`` / ``python -m judge_metrics``: the parser and the dispatch to one module per
command (:mod:`.score`, :mod:`.agree`, :mod:`.compare`, :mod:`.calibrate`,
:mod:`.align`, :mod:`.certify`); the commands share only
:mod:`.common`.

Exit codes: 0 done; 2 bad arguments, input or judge configuration (a one-line message, no
traceback); 130 interrupted (rerun the same command: finished judge calls come from the cache).
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn

from ..base.errors import UserInputError
from ..base.redaction import redact, secret_values
from ..base.version import VERSION
from . import agree, align, calibrate, certify, compare, score
from .common import one_line_warning

COMMANDS = {"score": score, "compare": compare, "agree": agree, "calibrate": calibrate,
            "align": align, "certify": certify}


class RedactingParser(argparse.ArgumentParser):
    """An argument parser whose every error passes through :func:`redact`, with the
    credentials of the command line being parsed (a misspelt ``--judge`` spec holding its
    ``api_key``, a key given to the wrong flag): argparse quotes the values it refuses."""

    secrets: tuple[str, ...] = ()

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        super().error(redact(message, RedactingParser.secrets))


_SPEC_KEY = re.compile(r"(?:api[_-]?key|key|token|secret|password)\s*=\s*([^,]+)", re.IGNORECASE)


def argv_secrets(argv: Sequence[str]) -> tuple[str, ...]:
    """The credentials written on a command line: the value of ``--api-key`` and of each
    secret-named ``NAME=VALUE`` pair (a ``--judge`` spec's ``api_key=``)."""
    found = []
    for i, arg in enumerate(argv):
        if arg == "--api-key" and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif arg.startswith("--api-key="):
            found.append(arg.partition("=")[2])
        found.extend(m.group(1).strip() for m in _SPEC_KEY.finditer(arg))
    return tuple(value for value in found if value)


def build_parser() -> argparse.ArgumentParser:
    parser = RedactingParser(
        prog="judge-metrics",
        description="Score LLM and QA outputs with judge-metrics' evaluate metrics.",
    )
    parser.add_argument("--version", action="version", version=f"judge-metrics {VERSION}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        command.add_arguments(commands.add_parser(name, help=command.HELP,
                                                  description=command.DESCRIPTION))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    RedactingParser.secrets = argv_secrets(sys.argv[1:] if argv is None else list(argv))
    args = parser.parse_args(argv)
    warnings.formatwarning = one_line_warning
    try:
        return COMMANDS[args.command].run(args)
    except UserInputError as error:
        # whatever credentials this command took (a command may have no judge options)
        secrets = [*secret_values(vars(args)), *RedactingParser.secrets,
                   *(value for judge in getattr(args, "judges", None) or []
                     for value in secret_values(judge))]
        print(f"judge-metrics: error: {redact(str(error), secrets)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\njudge-metrics: interrupted; rerun the same command to resume (finished judge "
              "calls are cached)", file=sys.stderr)
        return 130
