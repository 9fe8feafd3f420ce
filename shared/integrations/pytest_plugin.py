"""The pytest plugin of judge-metrics (entry point ``judge_metrics`` in the ``pytest11`` group).

Inert unless a test calls ``assert_metric``: at load it imports pytest and the standard library
only, adds three command-line options, prints nothing, writes nothing and opens no connection.
``--judge-provider``, ``--judge-model`` and ``--judge-base-url`` set the judge of every
``assert_metric`` in the session that does not set it itself (one suite runs on the embedded judge
locally and on a real judge in CI); ``--max-unmeasured`` the share of unmeasured rows allowed
(default 0.1). The options are checked at start-up (a usage error). No option takes a key: the
judge reads it from its provider's variable (``OPENAI_API_KEY``...), and a test's report
(terminal, ``--junit-xml``) has every key its assertions were given or read masked. Each
assertion's metric, score key, value, interval, outcome, judge and prompt digests become JUnit
properties of its test."""

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
                    help="assert_metric fails when more than this share of rows is unmeasured "
                    "(default 0.1; 1 turns the bound off); the judge's key is read from its "
                    "provider's variable, e.g. OPENAI_API_KEY, never an option")


def pytest_configure(config: Any) -> None:
    session.JUDGE.clear()
    for _, name in _OPTIONS:
        value = config.getoption(f"judge_metrics_{name}", None)
        if value is not None:
            session.JUDGE[name] = value
    limit = config.getoption("judge_metrics_max_unmeasured", None)
    if limit is not None and not 0.0 <= limit <= 1.0:
        raise pytest.UsageError(f"--max-unmeasured must be a fraction in [0, 1], got {limit}")
    session.LIMITS["max_unmeasured"] = limit
    if session.JUDGE:  # checked now, in one line, not in every test (imports the judge code)
        from ..runs.options import check_run_options

        try:  # the provider, model and URL; the key is each assertion's (or its variable's)
            check_run_options({**session.JUDGE, "api_key": "placeholder-for-the-start-up-check"})
        except (TypeError, ValueError) as error:
            raise pytest.UsageError(f"--judge-*: {error}") from None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Iterator[None]:
    session.CURRENT[0] = item.user_properties
    session.COUNT[0] = 0
    try:
        yield
    finally:
        session.CURRENT[0] = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Iterator[None]:
    """A report of a test whose assertions saw credentials: each masked in its text."""
    outcome = yield
    if not session.SECRETS:
        return
    from ..base.redaction import redact

    report = outcome.get_result()
    secrets = sorted(session.SECRETS, key=len, reverse=True)
    if report.longrepr is not None:
        text = str(report.longrepr)
        masked = redact(text, secrets)
        if masked != text:
            report.longrepr = _Masked(report.longrepr, masked, secrets)
    report.sections = [(title, redact(body, secrets)) for title, body in report.sections]
    if call.when == "teardown":
        session.SECRETS.clear()


class _Masked:
    """A failure's report with its credentials masked: the text the terminal and the JUnit
    XML show, and the one-line crash message JUnit's ``message`` reads."""

    def __init__(self, longrepr: Any, text: str, secrets: list[str]) -> None:
        from ..base.redaction import redact

        self._text = text
        crash = getattr(longrepr, "reprcrash", None)
        if crash is not None:
            self.reprcrash = type(crash)(crash.path, crash.lineno,
                                         redact(crash.message, secrets))

    def toterminal(self, out: Any) -> None:
        for line in self._text.splitlines():
            out.line(line)

    def __str__(self) -> str:
        return self._text
