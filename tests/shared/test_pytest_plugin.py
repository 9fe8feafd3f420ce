"""The pytest plugin and assert_metric (shared/integrations/), in pytest subprocesses on
generated suites: inert in a suite that does not use it; pass / fail / inconclusive verdicts
with their messages; unmeasured rows reported apart from quality; the --judge-* options; the
JUnit properties of each assertion."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1"}


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-o", "addopts=", *args], cwd=folder, capture_output=True,
                          text=True, timeout=900, env=ENV)


def _files(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


def test_the_plugin_is_an_installed_entry_point() -> None:
    [point] = entry_points(group="pytest11", name="judge_metrics")
    assert point.value == "judge_metrics.integrations.pytest_plugin"


def test_the_plugin_is_inert_in_an_unrelated_suite(tmp_path: Path) -> None:
    (tmp_path / "test_unrelated.py").write_text(textwrap.dedent("""
        import sys

        def test_nothing_heavy_was_imported():
            assert "judge_metrics.integrations.pytest_plugin" in sys.modules  # loaded, and...
            heavy = {"torch", "evaluate", "datasets", "judge_metrics.engine", "numpy",
                     "judge_metrics.runs", "judge_metrics.kit"}
            assert heavy.isdisjoint(sys.modules), heavy & set(sys.modules)

        def test_arithmetic():
            assert 1 + 1 == 2
        """))
    before = _files(tmp_path)
    with_plugin = _pytest(tmp_path, "-q")
    after = _files(tmp_path)
    assert with_plugin.returncode == 0, with_plugin.stdout
    assert after == before  # no file written
    (tmp_path / "test_unrelated.py").write_text(
        (tmp_path / "test_unrelated.py").read_text().replace(
            "in sys.modules  # loaded", "not in sys.modules  # not loaded"))
    without = _pytest(tmp_path, "-q", "-p", "no:judge_metrics")
    assert without.returncode == 0, without.stdout

    def lines(run: subprocess.CompletedProcess[str]) -> list[str]:  # the timing aside
        return [line.split(" in ")[0] for line in run.stdout.splitlines()]

    assert lines(with_plugin) == lines(without) and with_plugin.stderr == without.stderr


SUITE = '''
import pytest
from judge_metrics import assert_metric

RIGHT = [{"prediction": t, "reference": t} for t in
         ["Paris", "Berlin", "Rome", "Madrid", "Lisbon", "Vienna", "Oslo", "Bern", "Riga", "Kyiv"]]
WRONG = [{"prediction": "no idea", "reference": r["reference"]} for r in RIGHT]


def test_pass():
    verdict = assert_metric("accuracy", RIGHT, at_least=0.5)
    assert (verdict.outcome, verdict.n, verdict.value) == ("pass", 10, 1.0)
    assert verdict.low > 0.5 and verdict.high == 1.0


def test_fail():
    assert_metric("accuracy", WRONG, at_least=0.5)


def test_five_perfect_rows_cannot_show_at_least_point_nine():
    assert_metric("accuracy", RIGHT[:5], at_least=0.9)


def test_inconclusive_skips_when_asked():
    assert_metric("accuracy", RIGHT[:5], at_least=0.9, inconclusive="skip")


def test_unmeasured_is_not_a_quality_failure():
    assert_metric("l3score", [{"question": "q", **r} for r in RIGHT[:2]], at_least=0.5,
                  max_retries=0, timeout=2.0, use_cache=False, api_key="x")
'''


@pytest.fixture(scope="module")
def verdict_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ET.Element]:
    folder = tmp_path_factory.mktemp("verdicts")
    (folder / "test_verdicts_suite.py").write_text(SUITE)
    run = _pytest(folder, "-rA", "--junit-xml", "junit.xml", "--judge-provider",
                  "openai-compatible", "--judge-base-url", "http://127.0.0.1:9/v1",
                  "--judge-model", "m")
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout, ET.parse(folder / "junit.xml").getroot()


def _case(root: ET.Element, name: str) -> ET.Element:
    [case] = [c for c in root.iter("testcase") if c.get("name") == name]
    return case


def _properties(case: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in case.iter("property")}


def test_pass_fail_and_inconclusive(verdict_run: tuple[str, ET.Element]) -> None:
    out, root = verdict_run
    assert _case(root, "test_pass").find("failure") is None
    failure = _case(root, "test_fail").find("failure")
    assert failure is not None
    message = failure.get("message")
    assert "mean 0.0000" in message and "n=10 rows" in message and ">= 0.5" in message
    assert "interval [0.0000, 0.2775]" in message  # Wilson's 95 % interval of 0/10
    inconclusive = _case(root, "test_five_perfect_rows_cannot_show_at_least_point_nine")
    message = inconclusive.find("failure").get("message")
    assert "inconclusive" in message and "rows" in message and "runs" in message
    skipped = _case(root, "test_inconclusive_skips_when_asked").find("skipped")
    assert skipped is not None and "inconclusive" in skipped.get("message")


def test_unmeasured_rows_are_reported_apart_with_the_session_judge(
        verdict_run: tuple[str, ET.Element]) -> None:
    _, root = verdict_run
    case = _case(root, "test_unmeasured_is_not_a_quality_failure")
    message = case.find("failure").get("message")
    assert "UnmeasuredError" in message and "2 of 2 rows unmeasured" in message
    assert "not a quality verdict" in message and "127.0.0.1:9" in message  # --judge-base-url
    properties = _properties(case)
    assert properties["judge"] == "openai-compatible/m at http://127.0.0.1:9/v1"
    assert properties["prompts"].startswith("l3score@")


def test_each_assertion_records_junit_properties(verdict_run: tuple[str, ET.Element]) -> None:
    _, root = verdict_run
    properties = _properties(_case(root, "test_pass"))
    assert properties["metric"] == "accuracy" and properties["outcome"] == "pass"
    assert properties["value"] == "1.0000" and properties["n"] == "10"
    assert properties["interval"].startswith("[0.72") and properties["interval"].endswith(
        "1.0000]")
    assert "judge" not in properties  # accuracy calls no judge
    assert _properties(_case(root, "test_fail"))["outcome"] == "fail"


def test_runs_ask_the_judge_afresh_and_count_rows_not_runs(cache_dir: str) -> None:
    """runs=2 with the embedded judge: two answers per row, no call cache opened (so none
    reused), and n counts the rows (the interval is over the rows' means)."""
    from judge_metrics import UserInputError, assert_metric

    rows = [{"question": "Capital of France?", "prediction": "Paris", "reference": "Paris"},
            {"question": "Capital of Germany?", "prediction": "Bonn", "reference": "Berlin"}]
    verdict = assert_metric("l3score", rows, at_least=0.0, runs=2, cache_dir=cache_dir)
    assert (verdict.outcome, verdict.runs, verdict.n + verdict.unmeasured) == ("pass", 2, 2)
    assert not any(Path(cache_dir).iterdir())
    with pytest.raises(UserInputError, match="calls no judge"):
        assert_metric("accuracy", rows, at_least=0.5, runs=2)
