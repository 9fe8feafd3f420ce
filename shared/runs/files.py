"""The files a run reads and writes: the input (.jsonl, .csv, .parquet or a saved dataset
folder) as a ``datasets.Dataset``, the scored rows written atomically, and the checks made on
both paths before any work."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..base.errors import UserInputError
from .records import (
    FORMULA_STARTS,  # noqa: F401 - the CSV writer's rule, named here too
    JSON_COLUMNS,
    neutralise_formula,
    read_records,
    require_regular_file,
)

INPUT_SUFFIXES = (".jsonl", ".csv", ".parquet")
# columns that hold one text per row for every metric that reads them
SINGLE_TEXT_COLUMNS = ("prediction", "baseline_prediction", "question", "source")


OUTPUT_SUFFIXES = (".jsonl", ".csv", ".parquet")


def same_file(out: Path, source: Path) -> bool:
    """``out`` is ``source``, or a link to it (symbolic or hard), or will be once written."""
    try:
        if out.exists() and source.exists():
            return os.path.samefile(out, source)
        return out.resolve() == source.resolve()
    except OSError:
        return False


def check_output_paths(
    inputs: Mapping[str, str | os.PathLike[str]],
    outputs: Mapping[str, str | os.PathLike[str] | None],
    overwrite_input: bool | None = None,
) -> None:
    """Every output of a command can be written, and none may destroy an input or another
    output of the same command: the command's output paths checked in one call, before any work.

    ``inputs``: label -> path (``{"INPUT": ...}``, ``{"A": ..., "B": ...}``); ``outputs``:
    option -> path, or ``None`` when not given (``{"--out": ..., "--html": ...}``). A
    :class:`UserInputError` when an output other than ``--out`` is a folder or its folder
    cannot be made or written (``--out``'s format is its command's to check: a file, or the
    Ray engine's folder), when an output is an input, links to one or lies inside an input
    folder, or when two outputs are one file. ``overwrite_input``: the command's
    ``--overwrite-input`` flag (``None``: it has none); when set, ``--out`` may be the input
    labelled ``INPUT`` (never another input).
    """
    given = {option: Path(path) for option, path in outputs.items() if path}
    for option, out in given.items():
        if option != "--out":
            check_writable_file(out, option)
    for option, out in given.items():
        for label, source in inputs.items():
            source = Path(source)
            if same_file(out, source):
                if option == "--out" and overwrite_input and label == "INPUT":
                    continue  # the data file only: never another input (a calibration map)
                hint = (", or pass --overwrite-input to replace it with the scored rows"
                        if option == "--out" and overwrite_input is False else "")
                raise UserInputError(f"{option} {out} is the {label} file; write elsewhere"
                                     f"{hint}")
            if source.is_dir() and _inside(out, source):
                raise UserInputError(f"{option} {out} is inside the {label} folder {source}; "
                                     "write elsewhere")
    options = list(given)
    for i, first in enumerate(options):
        for second in options[i + 1:]:
            if same_file(given[first], given[second]):
                raise UserInputError(f"{first} and {second} are the same file "
                                     f"({given[second]}); give each its own")


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def check_writable_file(path: Path, option: str) -> None:
    """Fail early on an output path that is a folder or whose folder cannot be made or written."""
    if path.is_dir():
        raise UserInputError(f"{option} {path} is a folder; give a file name")
    check_folder_writable(path, option)


def check_folder_writable(path: Path, option: str) -> None:
    """Fail early when the folder that will hold ``path`` (a file, or the Ray engine's output
    folder) cannot be made or written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserInputError(f"{option} {path}: cannot create its folder: {error}") from None
    if not os.access(path.parent, os.W_OK):
        raise UserInputError(f"{option} {path}: folder {path.parent} is not writable")


def check_output_path(out: Path) -> None:
    if out.suffix.lower() not in OUTPUT_SUFFIXES:
        raise UserInputError(
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
        raise UserInputError(f"--out {out}: cannot write there: {error.strerror or error}"
                             ) from None
    finally:
        try:
            probe.unlink(missing_ok=True)
        except OSError:
            pass


def _temporary(out: Path) -> Path:
    return out.with_name(f".{out.name}.{os.getpid()}.tmp")


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Delete the ``.OUT.PID.tmp`` files (and the Ray engine's folders) left by a killed run
    (their process is gone)."""
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
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
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


def check_input_path(path: Path, label: str = "INPUT") -> None:
    """Fail early (before the slow imports) on a missing input, one that is not a regular file
    or a folder (a named pipe, a device: it might never end), or an unknown format."""
    if not path.exists():
        raise UserInputError(f"{label} {path}: no such file or folder")
    if not path.is_dir():
        require_regular_file(path, label)
    if not path.is_dir() and path.suffix.lower() not in INPUT_SUFFIXES:
        raise UserInputError(
            f"{label} {path}: unsupported format {path.suffix or '(none)'}; use .jsonl, .csv, "
            ".parquet, or a folder saved with Dataset.save_to_disk"
        )


def read_input(path: Path, label: str = "INPUT") -> Any:
    """The input file or saved-dataset folder as a ``datasets.Dataset`` (``label``: how
    messages name it, e.g. ``A`` for compare's first run)."""
    check_input_path(path, label)
    return load_input(path, label)


def load_input(path: Path, label: str = "INPUT") -> Any:
    """:func:`read_input` of a path already checked by :func:`check_input_path` (a command
    checks its input before any work, and reads it later)."""
    try:
        if path.is_dir():
            return _read_saved(path, label)
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            return _read_parquet(path, label)
        records = read_records(path)
        return _dataset_from_records(path, records, label)
    except (OSError, UnicodeDecodeError) as error:
        raise UserInputError(f"{label} {path}: cannot read it: {error}") from None


def _read_saved(path: Path, label: str) -> Any:
    import datasets

    try:
        loaded = datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as error:
        raise UserInputError(
            f"{label} {path}: a folder, but not one saved with Dataset.save_to_disk ({error})"
        ) from None
    if isinstance(loaded, datasets.DatasetDict):
        if len(loaded) != 1:
            raise UserInputError(
                f"{label} {path}: a DatasetDict with splits {', '.join(loaded)}; save one split "
                "with Dataset.save_to_disk"
            )
        loaded = next(iter(loaded.values()))
    return loaded


def _read_parquet(path: Path, label: str) -> Any:
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except pa.ArrowException as error:
        raise UserInputError(f"{label} {path}: not a readable Parquet file ({error})") from None
    return datasets.Dataset(table)


def _dataset_from_records(path: Path, records: list[dict[str, Any]], label: str) -> Any:
    """A ``Dataset`` from rows; in a column that mixes strings and lists (``reference``: one
    or several references per row) every string becomes a one-item list, except in a column
    that holds one text per row (:data:`SINGLE_TEXT_COLUMNS`), where a list is refused naming
    its row."""
    import datasets
    import pyarrow as pa

    if not records:
        raise UserInputError(f"{label} {path}: no rows")
    names: dict[str, None] = {}
    for record in records:
        names.update(dict.fromkeys(record))
    arrays = {}
    for name in names:
        values = [record.get(name) for record in records]
        if name in JSON_COLUMNS:
            values = [v if v is None or isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                      for v in values]
        if any(isinstance(v, list) for v in values) and any(isinstance(v, str) for v in values):
            if name in SINGLE_TEXT_COLUMNS:  # never a one-item list: one text is expected
                row = next(i for i, v in enumerate(values) if isinstance(v, list))
                raise UserInputError(
                    f"INPUT {path}: column {name!r}, row {row}: a list of {len(values[row])} "
                    "where one text is expected")
            values = [[v] if isinstance(v, str) else v for v in values]
        _refuse_booleans_among_numbers(path, name, values, label)
        try:
            arrays[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            raise UserInputError(
                f"{label} {path}: column {name!r} mixes value types that cannot share a column "
                f"({error})"
            ) from None
    return datasets.Dataset(pa.table(arrays))


def _refuse_booleans_among_numbers(path: Path, name: str, values: list[Any],
                                   label: str) -> None:
    """Arrow would read ``[0.5, true]`` as ``[0.5, 1.0]``: in a score column (the ones `score`
    writes) a boolean among numbers is refused. Other columns keep Arrow's reading (a label
    column of ``true`` and ``0`` is booleans for ``agree``)."""
    if not any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return
    row = next((i for i, v in enumerate(values) if isinstance(v, bool)), None)
    if row is not None and name in _score_column_names():
        raise UserInputError(f"{label} {path}: column {name!r}, row {row}: "
                             f"{str(values[row]).lower()} is a boolean among numbers")


def _score_column_names() -> set[str]:
    from ..kit.registry import METRICS
    from .chunks import score_column_names

    return {c for metric, spec in METRICS.items()
            for c in score_column_names(metric, spec).values()}


def write_output(dataset: Any, out: Path, csv_raw: bool = False) -> None:
    """Write atomically: a temporary file in the same folder, then ``os.replace``. A CSV's
    text cells that a spreadsheet would run as a formula get a leading ``'``
    (:func:`neutralise_formula`) unless ``csv_raw``."""
    temporary = _temporary(out)
    try:
        suffix = out.suffix.lower()
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            pq.write_table(dataset.with_format("arrow")[:], temporary)
        elif suffix == ".csv":
            _write_csv(dataset, temporary, csv_raw)
        else:
            with temporary.open("w", encoding="utf-8") as handle:
                write_jsonl_rows(handle, _rows(dataset))
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, out)
    finally:
        temporary.unlink(missing_ok=True)


def _rows(dataset: Any, batch_size: int = 1000) -> Any:
    for start in range(0, len(dataset), batch_size):
        batch = dataset[start:start + batch_size]
        names = list(batch)
        for values in zip(*(batch[n] for n in names), strict=True):
            yield dict(zip(names, values, strict=True))


def write_jsonl_rows(handle: Any, rows: Iterable[Mapping[str, Any]]) -> None:
    """One JSON object per line; floats in full precision (``repr``: they read back equal)."""
    for row in rows:
        handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def _write_csv(dataset: Any, path: Path, csv_raw: bool = False) -> None:
    def line(cells: Iterable[Any]) -> list[Any]:
        return list(cells) if csv_raw else [
            neutralise_formula(c) if isinstance(c, str) else c for c in cells]

    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(line(dataset.column_names))
        for row in _rows(dataset):
            writer.writerow(line(json.dumps(v, ensure_ascii=False, default=str)
                                 if isinstance(v, (list, dict)) else ("" if v is None else v)
                                 for v in row.values()))
        handle.flush()
        os.fsync(handle.fileno())
