"""JUnit XML of gate outcomes and regression checks (``--junit-xml`` of ``score`` and
``compare``), the test-report format CI systems display: one ``<testcase>`` per check, with a
``<failure>`` carrying the check's message when it failed.

Written with ``xml.etree`` (it escapes markup in names and messages); the characters XML 1.0
cannot hold at all (control characters) become U+FFFD first.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from ..base.errors import UserInputError

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


class Check(Protocol):
    """What a test case is made of (``GateOutcome``, ``RegressionCheck``)."""

    @property
    def name(self) -> str: ...

    @property
    def passed(self) -> bool: ...

    @property
    def message(self) -> str: ...


def junit_xml(suite: str, checks: Sequence[Check], *, classname: str,
              failure_type: str) -> bytes:
    """The JUnit XML document of ``checks`` as one test suite named ``suite``."""
    failures = sum(not c.passed for c in checks)
    counts = {"tests": str(len(checks)), "failures": str(failures), "errors": "0"}
    root = ET.Element("testsuites", name="judge-metrics", **counts)
    testsuite = ET.SubElement(root, "testsuite", name=_text(suite), skipped="0", **counts)
    for check in checks:
        case = ET.SubElement(testsuite, "testcase", classname=_text(classname),
                             name=_text(check.name), time="0")
        message = _text(check.message)
        if check.passed:
            ET.SubElement(case, "system-out").text = message
        else:
            ET.SubElement(case, "failure", message=message, type=failure_type).text = message
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit_xml(path: str | os.PathLike[str], suite: str, checks: Sequence[Any], *,
                    classname: str, failure_type: str) -> None:
    """Write :func:`junit_xml` atomically (a temporary file, then ``os.replace``)."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(junit_xml(suite, checks, classname=classname,
                                        failure_type=failure_type))
        os.replace(temporary, target)
    except OSError as error:
        raise UserInputError(f"--junit-xml {target}: cannot write it: {error}") from None
    finally:
        temporary.unlink(missing_ok=True)


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)
