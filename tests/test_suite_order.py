"""`make test` hands the test files to its two workers longest first (tests/conftest.py): the
recorded seconds name real files, the order puts them first, and the Makefile keeps xdist from
sorting the files its own way."""

from __future__ import annotations

import json
import re
from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parents[1]


class Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


def test_the_recorded_seconds_name_test_files_that_exist() -> None:
    seconds = json.loads(conftest.FILE_SECONDS.read_text())
    assert seconds, "tests/file_seconds.json is empty"
    missing = [name for name in seconds if not (ROOT / name).is_file()]
    assert not missing, f"tests/file_seconds.json names files that do not exist: {missing}"
    assert all(isinstance(value, (int, float)) and value >= 0 for value in seconds.values())


def test_files_go_longest_first_and_keep_their_tests_order() -> None:
    seconds = json.loads(conftest.FILE_SECONDS.read_text())
    longest = max(seconds, key=seconds.get)
    items = [Item("tests/test_unrecorded_a.py::t1"), Item("tests/test_unrecorded_b.py::t1"),
             Item("tests/test_unrecorded_b.py::t2"), Item(f"{longest}::second"),
             Item(f"{longest}::first_collected_later")]
    conftest.pytest_collection_modifyitems(items)
    assert [item.nodeid for item in items] == [
        f"{longest}::second", f"{longest}::first_collected_later",
        "tests/test_unrecorded_b.py::t1", "tests/test_unrecorded_b.py::t2",  # more tests first
        "tests/test_unrecorded_a.py::t1"]


def test_make_test_keeps_xdist_from_reordering_the_files() -> None:
    recipe = re.search(r"^test:.*?(?=^\S)", (ROOT / "Makefile").read_text(), re.M | re.S)
    assert recipe and "--dist loadfile --no-loadscope-reorder" in recipe[0]
