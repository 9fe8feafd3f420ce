"""The strict readers of a ``.jsonl`` or ``.csv`` batch, shared by the CLI (``score``) and the
demo's upload: a merged, cut or undecodable row is an error naming the file and its line, never
a silently different row."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from ..base.errors import UserInputError

# columns whose cells may be lists; in CSV they hold JSON list strings
LIST_COLUMNS = ("reference", "contexts", "expected")

# columns whose cells are JSON values of any shape (a conversation, tool calls, tool schemas):
# in CSV a JSON string; read from JSON lines, a cell that is not a string becomes its JSON text,
# since Arrow would give a column of objects one merged schema (every key in every row, absent
# ones as null), and the metrics read these cells as JSON (shared.kit.metric_base.Input, kinds
# "messages" and "json")
JSON_COLUMNS = ("messages", "tool_calls", "expected_tool_calls", "tools", "reference_messages")

# The longest cell a CSV may hold and the longest line of a JSON-lines file, in characters:
# the same bound both ways, far above the cells `score` writes (csv's own default, 131,072,
# refused a 200 KB prediction that `score` had just written).
MAX_FIELD_CHARS = 1 << 28  # 268,435,456

_SURROGATE = re.compile("[\ud800-\udfff]")

# OWASP's CSV injection guidance: a spreadsheet runs a cell that starts with one of these
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# a decimal number as a spreadsheet reads it: no formula, whatever its sign
_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# what neutralise_formula quotes (before the quote) and what unneutralised unquotes (after)
_QUOTED_FORMULA = re.compile("'*[=+\\-@\t\r]")
_NEUTRALISED = re.compile("'+[=+\\-@\t\r]")


def neutralise_formula(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would run it as a formula: it starts
    with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (OWASP's CSV injection list) and
    is no plain number (``-3``, ``+0.5``, ``-1e3`` stay as they are). Text that already starts
    with quotes before such a character gets one more, so that :func:`unneutralised` gives
    back every text exactly."""
    if _PLAIN_NUMBER.fullmatch(text) or not _QUOTED_FORMULA.match(text):
        return text
    return "'" + text


def unneutralised(text: str) -> str:
    """The inverse of :func:`neutralise_formula` for every text: one leading ``'`` removed
    where quotes come before a formula character (``'=1+2`` -> ``=1+2``, ``''=x`` -> ``'=x``),
    anything else as it is."""
    return text[1:] if _NEUTRALISED.match(text) else text


def require_regular_file(path: Path, label: str = "INPUT") -> None:
    """Refuse what is not a regular file once links are followed (a named pipe, ``/dev/zero``,
    a socket): reading it might never end. Checked with ``stat``, which does not block."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise UserInputError(f"{label} {path}: cannot read it: {error.strerror or error}"
                             ) from None
    if not stat.S_ISREG(mode):
        kind = ("a named pipe" if stat.S_ISFIFO(mode) else "a device" if
                stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a folder" if stat.S_ISDIR(mode) else "not a regular file")
        raise UserInputError(f"{label} {path}: {kind}, not a regular file; give a file")


def _decode(path: Path, data: bytes, encoding: str = "utf-8") -> str:
    """``data`` as text, strictly; a bad byte names the file and its line."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise UserInputError(
            f"INPUT {path}, line {line}: not UTF-8 text (byte 0x{data[error.start]:02x}); "
            "save the file as UTF-8"
        ) from None


def _lone_surrogate(value: Any, where: str = "") -> str | None:
    """Where in a parsed JSON value a string holds a lone surrogate (not valid Unicode)."""
    if isinstance(value, str):
        match = _SURROGATE.search(value)
        return f"{where or 'the value'} holds {ascii(match.group())}" if match else None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _lone_surrogate(key, "a field name") or _lone_surrogate(
                item, f"field {ascii(key)}" if not where else f"{where}, item {ascii(key)}")
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _lone_surrogate(item, f"{where or 'the value'}[{index}]")
            if found:
                return found
    return None


def read_records(path: Path) -> list[dict[str, Any]]:
    """The rows of a ``.csv`` file, else of a JSON-lines file, as dicts (strict readers)."""
    require_regular_file(path)
    return _read_csv(path) if path.suffix.lower() == ".csv" else _read_jsonl(path)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    records = []
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if len(raw) > MAX_FIELD_CHARS and len(_decode(path, raw)) > MAX_FIELD_CHARS:
            raise UserInputError(f"INPUT {path}, line {number}: longer than {MAX_FIELD_CHARS:,} "
                                 "characters, the most a line may hold")
        line = _decode(path, raw) if not raw.isascii() else raw.decode("ascii")
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise UserInputError(
                f"INPUT {path}, line {number}: not valid JSON ({error.msg})"
            ) from None
        if not isinstance(record, dict):
            raise UserInputError(
                f"INPUT {path}, line {number}: expected a JSON object (one row), got "
                f"{type(record).__name__}"
            )
        surrogate = _lone_surrogate(record)
        if surrogate:
            raise UserInputError(
                f"INPUT {path}, line {number}: {surrogate}, a lone surrogate escape (not valid "
                "Unicode text)"
            )
        records.append(record)
    return records


def _read_csv(path: Path) -> list[dict[str, Any]]:
    """Strict CSV: an unterminated quote, a row with more or fewer cells than the header or a
    repeated column name is an error naming the file and line (never a merged or cut row).
    Every cell and column name is read through :func:`unneutralised`: what ``score`` wrote
    with a leading ``'`` against spreadsheet formulas reads as the text it was."""
    text = _decode(path, path.read_bytes(), "utf-8-sig")
    csv.field_size_limit(MAX_FIELD_CHARS)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records: list[dict[str, Any]] = []
    header: list[str] | None = None
    start = 1
    while True:
        start = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            raise UserInputError(
                f"INPUT {path}, line {start}: not valid CSV ({error}; an unterminated quote "
                "runs to the end of the file)" if "end of data" in str(error)
                else f"INPUT {path}, line {start}: not valid CSV ({error})"
            ) from None
        if not cells:  # a blank line
            continue
        cells = [unneutralised(cell) for cell in cells]
        if header is None:
            header = cells
            repeated = sorted({name for name in header if header.count(name) > 1})
            if repeated:
                raise UserInputError(f"INPUT {path}, line {start}: the header repeats column(s) "
                                     f"{', '.join(map(repr, repeated))}")
            continue
        if len(cells) != len(header):
            raise UserInputError(
                f"INPUT {path}, line {start}: {len(cells)} cells, but the header has "
                f"{len(header)} columns"
            )
        records.append(dict(zip(header, cells, strict=True)))
    for row, record in enumerate(records):
        for column in LIST_COLUMNS:
            cell = record.get(column)
            if isinstance(cell, str) and cell.lstrip().startswith("["):
                try:
                    record[column] = json.loads(cell)
                except json.JSONDecodeError as error:
                    raise UserInputError(
                        f"INPUT {path}: column {column!r}, row {row}: looks like a JSON list but "
                        f"is not valid JSON ({error.msg})"
                    ) from None
                surrogate = _lone_surrogate(record[column], f"column {column!r}")
                if surrogate:
                    raise UserInputError(f"INPUT {path}: row {row}: {surrogate}, a lone "
                                         "surrogate escape (not valid Unicode text)")
    return records
