"""The pytest plugin under a hostile tester, in pytest subprocesses on generated
suites: a failing assert_metric shows its verdict, not our frames and their arguments, and no
key (given as an argument read from the environment, kept in a local shown by ``-l``, or read
by the judge from its provider's variable) reaches the terminal or the JUnit XML; every JUnit
property of a test is unique and names the score key; bad plugin options are usage errors at
start-up."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from judgeserver import JudgeServer

KEY = "sk-hostile-0123456789abcdefXYZ"
ENV_KEY = "sk-envvar-9876543210zyxwvuQRS"

SUITE = '''
import os

from judge_metrics import assert_metric

ROWS = [{"question": f"q{i}", "prediction": "Paris", "reference": "Rome"} for i in range(12)]
JUDGE = {"provider": "openai-compatible", "base_url": os.environ["JM_URL"], "model": "m",
         "use_cache": False}


def test_key_from_the_environment():
    assert_metric("l3score", ROWS, at_least=0.5, api_key=os.environ["JM_KEY"], **JUDGE)


def test_key_in_a_local():
    key = os.environ["JM_KEY"]
    assert_metric("l3score", ROWS, at_least=0.5, api_key=key, **JUDGE)


def test_key_read_by_the_judge():
    assert_metric("l3score", ROWS, at_least=0.5, **JUDGE)


def test_two_assertions():
    rows = [{"prediction": "a", "reference": "a"}] * 20
    assert_metric("accuracy", rows, at_least=0.5)
    assert_metric("rouge", rows, at_least=0.5, score_key="rougeL")
'''


def _pytest(folder: Path, *args: str, url: str = "http://127.0.0.1:9/v1"
            ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1",
           "JM_URL": url, "JM_KEY": KEY, "OPENAI_COMPATIBLE_API_KEY": ENV_KEY}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-o", "addopts=", *args], cwd=folder, capture_output=True,
                          text=True, timeout=900, env=env)


@pytest.fixture(scope="module")
def keyed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("keys")
    (folder / "test_keys_suite.py").write_text(SUITE)
    with JudgeServer(lambda body: "No", top_logprobs=lambda body: [("No", -0.01),
                                                                   ("Yes", -6.0)]) as server:
        run = _pytest(folder, "-rA", "-l", "--tb=long", "--junit-xml", "junit.xml",
                      url=server.url)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout + run.stderr, (folder / "junit.xml").read_text()


def test_no_key_in_the_terminal_or_the_junit_xml(keyed_run: tuple[str, str]) -> None:
    out, junit = keyed_run
    assert "3 failed, 1 passed" in out
    assert out.count("whole interval misses the threshold") >= 3
    for secret in (KEY, ENV_KEY, KEY[8:], ENV_KEY[8:]):
        assert secret not in out
        assert secret not in junit


def test_a_failure_shows_the_verdict_not_our_source(keyed_run: tuple[str, str]) -> None:
    out, _ = keyed_run
    section = out.split("test_key_read_by_the_judge ___")[1].split("___")[0]
    assert "def _assert" not in section and "scorer = MetricRows" not in section
    assert "__tracebackhide__" not in section
    assert len(section.splitlines()) < 40, section


def test_junit_properties_are_unique_per_assertion(keyed_run: tuple[str, str]) -> None:
    _, junit = keyed_run
    root = ET.fromstring(junit)
    [case] = [c for c in root.iter("testcase") if c.get("name") == "test_two_assertions"]
    names = [p.get("name") for p in case.iter("property")]
    assert len(names) == len(set(names))
    values = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert values["metric"] == "accuracy" and values["score_key"] == "accuracy"
    assert values["metric[2]"] == "rouge" and values["score_key[2]"] == "rougeL"


@pytest.mark.parametrize(("option", "said"), [
    (["--max-unmeasured", "1.5"], "--max-unmeasured must be a fraction in [0, 1], got 1.5"),
    (["--judge-provider", "opnai"], "--judge-*: "),
])
def test_bad_plugin_options_are_usage_errors(option: list[str], said: str,
                                             tmp_path: Path) -> None:
    (tmp_path / "test_nothing.py").write_text(textwrap.dedent("""
        def test_nothing():
            pass
        """))
    run = _pytest(tmp_path, *option)
    assert run.returncode == 4, run.stdout + run.stderr  # pytest's usage error
    assert said in run.stderr and "Traceback" not in run.stderr
