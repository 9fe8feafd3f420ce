"""``judge-metrics`` / ``python -m shared``: the parser and the dispatch to one module per
command (:mod:`.score`, :mod:`.agree`, :mod:`.compare`, :mod:`.calibrate`,
:mod:`.align`); the commands share only
:mod:`.common`.

Exit codes: 0 done; 2 bad arguments, input or judge configuration (a one-line message, no
traceback); 130 interrupted (rerun the same command: finished judge calls come from the cache).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

from ..base.errors import UserInputError
from ..base.redaction import redact, secret_values
from . import agree, align, calibrate, compare, score
from .common import one_line_warning

COMMANDS = {"score": score, "compare": compare, "agree": agree, "calibrate": calibrate,
            "align": align}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="judge-metrics",
        description="Score LLM and QA outputs with judge-metrics' evaluate metrics.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        command.add_arguments(commands.add_parser(name, help=command.HELP,
                                                  description=command.DESCRIPTION))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    warnings.formatwarning = one_line_warning
    try:
        return COMMANDS[args.command].run(args)
    except UserInputError as error:
        # whatever credentials this command took (a command may have no judge options)
        secrets = secret_values(vars(args))
        print(f"judge-metrics: error: {redact(str(error), secrets)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\njudge-metrics: interrupted; rerun the same command to resume (finished judge "
              "calls are cached)", file=sys.stderr)
        return 130
