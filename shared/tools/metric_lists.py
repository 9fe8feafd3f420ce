"""The lists of metrics in README.md and docs/*.md, generated from the registry so that a new
metric cannot leave one behind.

A list lies between ``<!-- metrics:KIND:start -->`` and ``<!-- metrics:KIND:end -->``; KIND
says what is generated there:

- a family (:data:`FAMILIES`: ``all``, ``judge``, ``string``...): the names of its metrics, in
  the registry's order, joined by commas, inside a sentence;
- ``table``: README.md's table of metrics, one row per metric: its card, its inputs (optional
  ones in parentheses, required options named) and its headline keys from the declarations,
  and "what it measures" as a person wrote it in the row (kept from the current text);
- ``columns``: docs/BATCH.md's table of input columns, one row per column a metric reads: the
  metrics that read it (required, then "if present" for the optional), and the column's type
  as a person wrote it (kept);
- ``thresholds``: docs/AGREEMENT.md's table of decision thresholds: each metric's declared
  ``DECISION_THRESHOLD`` and, as a person wrote it (kept), why; metrics alike share a row.

A row whose written cell is empty (a new metric, a new column) is written with the cell empty
and reported by :func:`unwritten`, which the test of the generated parts checks too: say what
the new metric measures, what the new column holds. ``python -m judge_metrics.tools.cards``
rewrites these blocks with the cards' (``make cards``); ``--check`` lists what is out of date.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ..kit.registry import METRICS, METRICS_DIR, MetricSpec, available

ROOT = METRICS_DIR.parent
BLOCK = re.compile(r"(<!-- metrics:([a-z-]+):start -->)(.*?)(<!-- metrics:\2:end -->)", re.S)
CONVERSATION_COLUMNS = frozenset({"messages", "reference_messages", "tool_calls",
                                  "expected_tool_calls", "tools"})


def _reads_conversations(spec: MetricSpec) -> bool:
    return bool(set(spec.columns.values()) & CONVERSATION_COLUMNS)


# family -> which metrics belong to it
FAMILIES: dict[str, Callable[[MetricSpec], bool]] = {
    "all": lambda spec: True,
    "judge": lambda spec: spec.judge,
    "no-judge": lambda spec: not spec.judge,
    # no judge and no embedding model: what the core install scores
    "string": lambda spec: not spec.judge and not spec.embeds,
    "embedding": lambda spec: spec.embeds,
    "embedding-no-judge": lambda spec: spec.embeds and not spec.judge,
    "lower-is-better": lambda spec: spec.lower_is_better,
    "conversation": _reads_conversations,
    "judge-conversation": lambda spec: spec.judge and _reads_conversations(spec),
}

TABLE_HEAD = ("| metric | inputs | what it measures | headline key(s) |\n"
              "|---|---|---|---|")
COLUMNS_HEAD = "| column | type | used by |\n|---|---|---|"


def documents() -> list[Path]:
    """The files whose metric lists are generated: README.md and docs/*.md."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def family(kind: str) -> list[str]:
    """The metrics of family ``kind``, in the registry's order."""
    return [name for name in available() if FAMILIES[kind](METRICS[name])]


def cells(line: str) -> list[str]:
    """The cells of one Markdown table row (no cell holds a ``|``)."""
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def written_cells(body: str, key: Callable[[str], list[str]], column: int) -> dict[str, str]:
    """Cell ``column`` of each row of the table in ``body``, by the row's key(s) (``key`` reads
    them from the first cell)."""
    found = {}
    for line in body.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            row = cells(line)
            for name in key(row[0]):
                if len(row) > column:
                    found[name] = row[column]
    return found


def _card_names(cell: str) -> list[str]:
    return re.findall(r"\[`(\w+)`\]", cell)


def _inputs(spec: MetricSpec) -> str:
    parts = list(spec.columns)
    if spec.optional_columns:
        parts.append(f"({', '.join(spec.optional_columns)})")
    required = [f"`{o.name}`" for o in spec.options if o.required]
    if required:
        parts.append(f"option{'s' if len(required) > 1 else ''} {', '.join(required)}")
    return ", ".join(parts)


def metrics_table(body: str) -> str:
    """README.md's table of metrics, "what it measures" kept from ``body``."""
    measures = written_cells(body, _card_names, 2)
    rows = [f"| [`{name}`](metrics/{name}/README.md) | {_inputs(METRICS[name])} | "
            f"{measures.get(name, '')} | {', '.join(f'`{k}`' for k in METRICS[name].headline)} |"
            for name in available()]
    return "\n".join([TABLE_HEAD, *rows])


def _column_names(cell: str) -> list[str]:
    return re.findall(r"`(\w+)`", cell)[:1]


def columns_table(body: str) -> str:
    """docs/BATCH.md's table of input columns, the types kept from ``body``, the columns in
    its order (new ones after)."""
    types = written_cells(body, _column_names, 1)
    readers: dict[str, tuple[list[str], list[str]]] = {}
    for name in available():
        spec = METRICS[name]
        for column in spec.columns.values():
            readers.setdefault(column, ([], []))[0].append(name)
        for column in spec.optional_columns.values():
            readers.setdefault(column, ([], []))[1].append(name)
    order = [c for c in types if c in readers] + [c for c in readers if c not in types]
    rows = []
    for column in order:
        required, optional = readers[column]
        used = ", ".join(required)
        if optional:
            used += ("; " if used else "") + "if present: " + ", ".join(optional)
        rows.append(f"| `{column}` | {types.get(column, '')} | {used} |")
    return "\n".join([COLUMNS_HEAD, *rows])


NOTE = ("<!-- generated from the declarations by `python -m judge_metrics.tools.cards` "
        "(`make cards`): edit only the {} cells -->")


def _metric_names(cell: str) -> list[str]:
    return [name for name in re.split(r"[,\s]+", cell.replace("`", "")) if name]


def _threshold(spec: MetricSpec) -> str:
    value = spec.decision_threshold
    return "none" if value is None else f"{value:g}"


def thresholds_table(body: str) -> str:
    """docs/AGREEMENT.md's table of decision thresholds: each metric's declared threshold, the
    reason kept from ``body``; metrics with the same threshold and reason share a row."""
    reasons = written_cells(body, _metric_names, 2)
    rows: dict[tuple[str, str], list[str]] = {}
    for name in available():
        rows.setdefault((_threshold(METRICS[name]), reasons.get(name, "")), []).append(name)
    lines = ["| metric | threshold | why |", "|---|---|---|"]
    lines += [f"| {', '.join(names)} | {threshold} | {why} |"
              for (threshold, why), names in rows.items()]
    return "\n".join(lines)


def generated(kind: str, body: str) -> str:
    """What the block of ``kind`` holds, given its current ``body``."""
    if kind == "table":
        return f"\n{NOTE.format('what it measures')}\n{metrics_table(body)}\n"
    if kind == "columns":
        return f"\n{NOTE.format('type')}\n{columns_table(body)}\n"
    if kind == "thresholds":
        return f"\n{NOTE.format('why')}\n{thresholds_table(body)}\n"
    if kind not in FAMILIES:
        raise ValueError(f"unknown list <!-- metrics:{kind}:start --> (known: table, columns, "
                         f"thresholds, {', '.join(FAMILIES)})")
    return ", ".join(family(kind))


def render(text: str) -> str:
    """``text`` with every metric list rewritten."""
    return BLOCK.sub(lambda m: m.group(1) + generated(m.group(2), m.group(3)) + m.group(4), text)


def unwritten(text: str) -> list[str]:
    """The rows of ``text``'s generated tables whose written cell is empty."""
    missing = []
    for match in BLOCK.finditer(text):
        kind, body = match.group(2), match.group(3)
        if kind == "table":
            missing += [f"what {name} measures" for name, cell in
                        written_cells(body, _card_names, 2).items() if not cell]
        elif kind == "columns":
            missing += [f"what column {name} holds" for name, cell in
                        written_cells(body, _column_names, 1).items() if not cell]
        elif kind == "thresholds":
            missing += [f"why {name}'s threshold" for name, cell in
                        written_cells(body, _metric_names, 2).items() if not cell]
    return missing


def write_lists(check: bool = False) -> list[Path]:
    """Rewrite the metric lists of every document; the documents that changed (with
    ``check=True``: would change, or have a row left to write). Nothing is written on a check."""
    changed = []
    for path in documents():
        text = path.read_text(encoding="utf-8")
        updated = render(text)
        if updated != text or (check and unwritten(updated)):
            changed.append(path)
            if not check and updated != text:
                path.write_text(updated, encoding="utf-8")
    return changed
