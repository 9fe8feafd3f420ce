"""The pytest plugin of judge-metrics (entry point ``judge_metrics`` in the ``pytest11`` group).

Inert unless a test calls ``assert_metric``: at load it imports pytest and the standard library
only, adds three command-line options, prints nothing, writes nothing and opens no connection.
``--judge-provider``, ``--judge-model`` and ``--judge-base-url`` set the judge of every
``assert_metric`` in the session that does not set it itself (one suite runs on the embedded judge
locally and on a real judge in CI); ``--max-unmeasured`` the share of unmeasured rows allowed.
Each assertion's metric, value, interval, outcome, judge and prompt digests become JUnit
properties of its test (``--junit-xml``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from . import session

_OPTIONS = (("--judge-provider", "provider"), ("--judge-model", "model"),
            ("--judge-base-url", "base_url"))


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("judge-metrics", "judge-metrics assert_metric")
    for flag, name in _OPTIONS:
        group.addoption(flag, dest=f"judge_metrics_{name}", default=None,
                        help=f"the judge {name.replace('_', ' ')} of every assert_metric")
    group.addoption("--max-unmeasured", dest="judge_metrics_max_unmeasured", type=float,
                    default=None, metavar="FRACTION",
                    help="assert_metric fails when more than this share of rows is unmeasured")


def pytest_configure(config: Any) -> None:
    session.JUDGE.clear()
    for _, name in _OPTIONS:
        value = config.getoption(f"judge_metrics_{name}", None)
        if value is not None:
            session.JUDGE[name] = value
    session.LIMITS["max_unmeasured"] = config.getoption("judge_metrics_max_unmeasured", None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Iterator[None]:
    session.CURRENT[0] = item.user_properties
    try:
        yield
    finally:
        session.CURRENT[0] = None
