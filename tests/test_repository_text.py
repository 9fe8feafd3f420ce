"""What the repository's text may say: no path outside the repository (a user's clone has
nothing there) and no narration of the project's issue or round history (a comment or a doc
line says why the thing is as it is, which stays true when the history is forgotten).

Scans every tracked text file. Relative paths (``../x``) are resolved against their file's
folder, so the cards' links into ``bench/`` pass and a link that climbs out of the repository
fails.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# a relative path: one or more "../" and what follows them
RELATIVE = re.compile(r"(?<![\w.])((?:\.\./)+)([\w.\-/]*)")
# history instead of a reason: the word issue or round, then a number (not "around 4")
HISTORY = re.compile(r"\bissue #?\d+|\bround \d+\b", re.IGNORECASE)
# measured results, dated: their text is a record of a run, not a claim about the code
RECORDS = {"bench/RESULTS.md", "bench/AGREEMENT.md", "bench/GROUNDING.md"}


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    files = []
    for name in filter(None, names):
        path = ROOT / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary
        files.append(path)
    return files


def paths_outside(text: str, folder: Path, root: Path) -> list[str]:
    """Every relative path in ``text`` (read from a file in ``folder``) that leaves ``root``."""
    found = []
    for match in RELATIVE.finditer(text):
        target = (folder / match.group(1) / match.group(2)).resolve()
        if not target.is_relative_to(root.resolve()):
            found.append(match.group(0))
    return found


def history(text: str) -> list[str]:
    return [m.group(0) for m in HISTORY.finditer(text)]


try:
    FILES = tracked_text_files()
except (OSError, subprocess.CalledProcessError):  # not a git checkout (an sdist): nothing to scan
    FILES = []


def test_the_scan_sees_files():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    assert any(p.name == "ARCHITECTURE.md" for p in FILES)


def test_no_file_cites_a_path_outside_the_repository():
    found = [f"{p.relative_to(ROOT)}: {hit}" for p in FILES
             for hit in paths_outside(p.read_text(encoding="utf-8", errors="replace"),
                                      p.parent, ROOT)]
    assert not found, "cite the project's own docs, or state the fact:\n" + "\n".join(found)


def test_no_file_narrates_issue_or_round_history():
    found = [f"{p.relative_to(ROOT)}: {hit}" for p in FILES
             if p.relative_to(ROOT).as_posix() not in RECORDS
             for hit in history(p.read_text(encoding="utf-8", errors="replace"))]
    assert not found, "say why, not when:\n" + "\n".join(found)


def test_the_checks_can_fail(tmp_path):
    # the made-up texts are assembled here, so that this file's own text passes the scan
    up = "../"
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "bench").mkdir()
    outside = f"see {up * 2}shared/DESIGN.md and [the table]({up}bench/X.md)"
    assert paths_outside(outside, root / "docs", root) == [f"{up * 2}shared/DESIGN.md"]
    assert paths_outside(f"{up * 2}bench/X.md", root / "metrics" / "m", root) == []
    said = [f"{'issue'} {29}", f"{'round'} {4}"]
    assert history(f"as in {said[0]} and {said[1]}") == said
    assert history("scores around 0.5 and a new issue of the file") == []
