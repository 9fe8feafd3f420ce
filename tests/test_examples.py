"""The shipped examples run: ``examples/test_gates_example.py`` (docs/GATES.md) passes under
pytest in its own process, as a user's CI would run it, and its gates bite when raised."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "test_gates_example.py"


def _pytest(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(path.parent), str(path)], cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)})


def test_gates_example_passes_and_fails_when_its_gates_are_raised(tmp_path: Path) -> None:
    done = _pytest(EXAMPLE)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr
    raised = tmp_path / "test_raised_gates.py"
    text = EXAMPLE.read_text(encoding="utf-8")
    for old, new in (('"rouge.rougeL>=0.4"', '"rouge.rougeL>=0.9"'),
                     ('"bleu>=0.15"', '"bleu>=0.9"'),
                     ("Path(__file__).resolve().parents[1]", f"Path({str(REPO)!r})")):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    raised.write_text(text, encoding="utf-8")
    failed = _pytest(raised)
    assert failed.returncode == 1 and "2 failed" in failed.stdout, failed.stdout
    assert "AssertionError: 1 of 2 gates failed:" in failed.stdout
    assert "rouge.rougeL>=0.9 FAILED (lower bound" in failed.stdout
    assert "bleu>=0.9 FAILED (mean" in failed.stdout
