"""Arrow columns read as Python values with absent keys left absent.

Arrow stores the objects of a column (a call's ``arguments``, a message) as one struct type for
the whole column: the union of every row's keys, a key a row does not have set to null. Read
back as it is, a row's ``{"city": "Paris"}`` becomes ``{"city": "Paris", "unit": None}`` because
another row passed ``unit``, and a correct tool call scores 0.0 for an argument it never gave.
Arrow keeps no difference between "absent" and "null" inside a struct, so a struct's null field
is read as absent: the only reading under which every row means what it said (a JSON file read
as text keeps an explicit ``null``). Parquet input, a saved dataset, a ``datasets.Dataset``
given to ``score_dataset`` or ``assert_metric``, and the Ray engine all read such columns here.
"""

from __future__ import annotations

from typing import Any


def has_struct(kind: Any) -> bool:
    """Whether the Arrow type ``kind`` holds a struct at any depth."""
    import pyarrow as pa

    stack = [kind]
    while stack:
        current = stack.pop()
        if pa.types.is_struct(current):
            return True
        if pa.types.is_list(current) or pa.types.is_large_list(current) or (
                pa.types.is_fixed_size_list(current)):
            stack.append(current.value_type)
        elif pa.types.is_map(current):
            stack.extend((current.key_type, current.item_type))
    return False


def without_null_fields(value: Any) -> Any:
    """``value`` (an Arrow struct column's Python values) with every dict's ``None`` entries
    left out, at any depth; iterative, so a deeply nested value cannot exhaust the stack."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while stack:
        parent, key, item = stack.pop()
        if isinstance(item, dict):
            copy = {k: v for k, v in item.items() if v is not None}
            parent[key] = copy
            stack.extend((copy, k, v) for k, v in copy.items())
        elif isinstance(item, list):
            copy_list = list(item)
            parent[key] = copy_list
            stack.extend((copy_list, i, v) for i, v in enumerate(copy_list))
    return root[0]


def column_values(column: Any) -> list[Any]:
    """An Arrow array or chunked array as a list of Python values (structs without their null
    fields)."""
    values = column.to_pylist()
    if not has_struct(column.type):
        return values
    return [without_null_fields(v) for v in values]


def struct_columns(dataset: Any) -> list[str]:
    """The columns of a ``datasets.Dataset`` whose Arrow type holds a struct."""
    schema = dataset.features.arrow_schema
    return [field.name for field in schema if has_struct(field.type)]


def dataset_slice(dataset: Any, start: int, stop: int, structs: list[str] | None = None
                  ) -> dict[str, list[Any]]:
    """Rows ``start:stop`` of a ``datasets.Dataset`` as column -> values, its ``structs``
    columns (default: :func:`struct_columns`) read without their null fields."""
    structs = struct_columns(dataset) if structs is None else structs
    rows = dataset[start:stop]
    for name in structs:
        rows[name] = [without_null_fields(v) for v in
                      dataset.select_columns([name]).with_format("arrow")[start:stop]
                      .column(name).to_pylist()]
    return rows
