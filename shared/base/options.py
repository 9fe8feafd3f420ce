"""A metric's options, declared once: name, type, default, allowed values and a one-line doc.

Every metric lists its options in ``OPTIONS`` (a tuple of :class:`Option`); the judge metrics
also take the shared judge options (``shared.engine.config.JUDGE_OPTIONS``). Everything else reads
those declarations, the way pydantic-settings walks a model's fields once:

- ``ValidatedMetric.compute`` checks every given option (:meth:`Option.validate`), refuses an
  undeclared one and fills in the defaults before ``_compute`` runs (:func:`check_options`);
- the ``Args:`` option lines of a metric's ``inputs_description`` (:func:`with_options`), and
  the judge-options paragraph, written once (:func:`judge_options_args`);
- the options table of each metric card (:func:`card_table`,
  ``python -m judge_metrics.tools.cards``);
- the demo's option controls (:attr:`Option.kind`) and the CLI's ``--option NAME=VALUE``
  (:meth:`Option.parse`) and judge arguments (``shared.cli.common.add_judge_arguments``).

A check raises ``TypeError`` (wrong type) or ``ValueError`` (wrong value) naming the option.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import validation
from .errors import UnknownOptionError

Check = Callable[[str, Any], Any]

_TYPE_NAMES = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict",
               object: "object"}


@dataclass(frozen=True)
class Option:
    """One option of a metric (a ``compute`` keyword argument that is not a per-sample input).

    type: ``bool``, ``int``, ``float``, ``str``, ``list`` (a JSON-like list, e.g. weights),
    ``dict`` (a JSON-like mapping, e.g. a rubric; give it a ``check``) or ``object`` (anything,
    e.g. a tokenizer: not settable from the demo or the CLI).
    choices: the allowed values of an enumeration. range: ``(low, high)`` of a number, either
    end ``None`` for unbounded. nullable: ``None`` is a valid value. check: a custom check
    ``check(name, value) -> value`` that replaces the type, range and choices checks (it sees
    every given value, ``None`` included). type_doc / default_doc: how docs show the type and
    the default when the plain rendering would not say enough. cli / metavar: the command-line
    flag of a judge or embedding option (``None``: not on the command line). required: the
    option has no default (its ``check`` refuses a missing value).
    """

    name: str
    type: type
    default: Any = None
    doc: str = ""
    choices: tuple[Any, ...] = ()
    range: tuple[float | None, float | None] | None = None
    nullable: bool = False
    check: Check | None = field(default=None, compare=False)
    type_doc: str | None = None
    default_doc: str | None = None
    cli: str | None = None
    metavar: str | None = None
    required: bool = False  # no default: ``--metric all`` skips the metric unless it is given

    def validate(self, value: Any) -> Any:
        """``value`` checked (and normalised: an int given for a float becomes a float)."""
        if self.check is not None:
            return self.check(self.name, value)
        if value is None:
            if self.nullable:
                return None
            raise TypeError(f"{self.name} must be {self.type_text()}, got None")
        if self.choices:
            if isinstance(value, bool) or value not in self.choices:  # True == 1: not a choice
                allowed = ", ".join(map(str, self.choices))
                raise ValueError(f"{self.name} must be one of {allowed}; got {value!r}")
            return value
        if self.type is bool:
            return validation.flag(self.name, value)
        if self.type is float:
            return self._number(value, float)
        if self.type is int:
            return self._number(value, int)
        if self.type is str and not isinstance(value, str):
            raise TypeError(f"{self.name} must be a string, got {type(value).__name__}")
        if self.type is list and (isinstance(value, (str, bytes, Mapping))
                                  or not isinstance(value, Iterable)):
            raise TypeError(f"{self.name} must be a list, got {type(value).__name__}")
        return list(value) if self.type is list else value

    def _number(self, value: Any, kind: type) -> Any:
        if self.range == (0, 1) and kind is float:
            return validation.probability(self.name, value)
        allowed = (int, float) if kind is float else (int,)
        if isinstance(value, bool) or not isinstance(value, allowed):
            raise TypeError(f"{self.name} must be {self.type_text()}, got {type(value).__name__}")
        if kind is float and not math.isfinite(value):
            raise ValueError(f"{self.name} must be a finite number, got {value}")
        low, high = self.range or (None, None)
        if (low is not None and value < low) or (high is not None and value > high):
            raise ValueError(f"{self.name} must be {self.range_text()}, got {value}")
        return kind(value)

    @property
    def kind(self) -> str | None:
        """The demo's control for this option: bool, int, float, json, text, or ``None`` (no
        way to type the value into a page, e.g. a function)."""
        if self.type is object:
            return None
        if self.type in (list, dict):
            return "json"
        if self.type in (bool, int, float):
            return self.type.__name__
        return "text"

    def parse(self, text: str) -> Any:
        """The value of ``text`` given on the command line (``--option NAME=VALUE``), checked.

        A string option takes the text as it is (``null`` is ``None`` where ``None`` is
        allowed); any other option reads it as JSON (``true``, ``0.8``, ``[0.5, 0.5]``)."""
        if self.type is object:
            raise ValueError(f"{self.name} cannot be given on the command line")
        if self.type is str and not (text == "null" and (self.nullable or self.check)):
            return self.validate(text)
        try:
            value = json_value(text)
        except DuplicateKeyError as error:
            raise ValueError(f"{self.name}: {error}") from None
        except ValueError:
            raise ValueError(f"{self.name}: {text!r} is not a valid {self.type_text()}") from None
        return self.validate(value)

    def type_text(self) -> str:
        """The type as the docs say it, e.g. ``float in [0, 1] or None``."""
        if self.type_doc:
            return self.type_doc
        text = _TYPE_NAMES[self.type]
        if self.range:
            text = f"{text} {self.range_text()}"
        return f"{text} or None" if self.nullable else text

    def range_text(self) -> str:
        low, high = self.range or (None, None)
        if low is not None and high is not None:
            return f"in [{low}, {high}]"
        return f">= {low}" if low is not None else f"<= {high}"

    def default_text(self) -> str:
        """The default as Python source (``0.8``, ``"exact"``, ``None``), or ``default_doc``."""
        if self.default_doc:
            return self.default_doc
        return _python_text(self.default)


def _python_text(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_python_text(v) for v in value) + "]"
    return repr(value)


def check_options(metric: str, declared: Iterable[Option], given: Mapping[str, Any],
                  passed_through: Iterable[str] = ()) -> dict[str, Any]:
    """Every declared option, checked, with the defaults filled in, plus the ``given`` options
    named in ``passed_through`` as they are (the judge options: ``JudgeConfig`` checks them).
    Raises :class:`UnknownOptionError` (:func:`refuse_unknown`) for an option ``metric`` does
    not take."""
    declared = tuple(declared)
    passed_through = frozenset(passed_through)
    refuse_unknown(metric, given, {option.name for option in declared} | passed_through)
    checked = {name: value for name, value in given.items() if name in passed_through}
    for option in declared:
        if option.name in given:
            checked[option.name] = option.validate(given[option.name])
        else:
            checked[option.name] = _default(option)
    return checked


def unknown_option(owner: str, name: str, known: Iterable[str]) -> str:
    """The one line every front end says for an option ``owner`` does not take: the option and
    the nearest known name (else the known names)."""
    import difflib

    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else f"it takes: {', '.join(known) or 'none'}"
    return f"{owner} has no option {name!r} ({hint})"


def refuse_unknown(owner: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Refuse the first (by name) of ``given`` that is not in ``known``: the one behaviour for an
    unknown option (compute, the CLI's ``--option``, the runs, the integrations, the judge's
    options), a :class:`UnknownOptionError` in :func:`unknown_option`'s words."""
    known = frozenset(known)
    unknown = sorted(set(given) - known)
    if unknown:
        raise UnknownOptionError(unknown_option(owner, unknown[0], known))


def _default(option: Option) -> Any:
    """The default as ``_compute`` receives it: normalised as a given value would be."""
    if option.check is None and option.type is list and option.default is not None:
        return list(option.default)
    if option.check is not None:
        return option.check(option.name, option.default)
    return option.default


def find(options: Iterable[Option], name: str) -> Option | None:
    return next((option for option in options if option.name == name), None)


# ------------------------------------------------------------------------------ documentation


def args_lines(options: Iterable[Option], width: int = 96) -> str:
    """The ``Args:`` lines of ``options`` (``    name (type): doc. Default X.``, wrapped and
    continued on deeper-indented lines), as a metric's ``inputs_description`` lists them."""
    return "\n".join(
        _args_entry(f"{option.name} ({option.type_text()}): {option.doc.rstrip('.')}. "
                    f"Default {option.default_text()}.", width)
        for option in options
    )


def _args_entry(text: str, width: int) -> str:
    """One ``Args:`` entry: indented 4, continued on lines indented 8."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width, initial_indent=" " * 4,
                                   subsequent_indent=" " * 8, break_on_hyphens=False))


def with_options(description: str, options: Iterable[Option],
                 judge_options: Sequence[str] = (), default_provider: str = "") -> str:
    """``description`` (a metric's ``Args:``/``Returns:``/``Examples:`` text) with the option
    lines, and for a judge metric (``judge_options``: the judge options' names;
    ``default_provider``: the provider of the embedded judge, as the registry names it) the
    judge-options paragraph, placed before ``Returns:``."""
    head, sep, tail = description.partition("\nReturns:")
    block = args_lines(options)
    if judge_options:
        paragraph = judge_options_args(judge_options, default_provider)
        block = f"{block}\n{paragraph}" if block else paragraph
    if not block:
        return description
    return f"{head.rstrip()}\n{block}{sep}{tail}" if sep else f"{description.rstrip()}\n{block}\n"


def card_table(options: Iterable[Option]) -> str:
    """A Markdown table of ``options`` (name, type, default, description) for a metric card."""
    rows = ["| Name | Type | Default | Description |", "|---|---|---|---|"]
    for option in options:
        rows.append(f"| `{option.name}` | {_cell(option.type_text())} | "
                    f"`{option.default_text()}` | {_cell(option.doc)} |")
    return "\n".join(rows)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def judge_options_args(names: Sequence[str], default_provider: str, width: int = 96) -> str:
    """The judge-options paragraph of every judge metric's ``Args:``, written once here."""
    return _args_entry(f"{', '.join(names)}: the judge options (default: the embedded "
                       f'SmolLM2-135M-Instruct judge, provider="{default_provider}"; see the '
                       "card).", width)


EMBEDDING_OPTIONS: tuple[Option, ...] = (
    Option("embedding_model", str, None, nullable=True, cli="--embedding-model", metavar="MODEL",
           doc="a local sentence-transformers folder, or a hub id already in the local Hugging "
           "Face cache (never downloaded); None: the embedded all-MiniLM-L6-v2"),
)
EMBEDDING_OPTION_NAMES = tuple(option.name for option in EMBEDDING_OPTIONS)


class DuplicateKeyError(ValueError):
    """A JSON object that gives one key twice (``json.loads`` would keep the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(f"key {key!r} is given twice")
        out[key] = value
    return out


def json_value(text: str) -> Any:
    """``text`` read as JSON, refusing an object that gives one key twice
    (:class:`DuplicateKeyError`, naming the key); ``ValueError`` for text that is no JSON."""
    return json.loads(text, object_pairs_hook=_unique_keys)
