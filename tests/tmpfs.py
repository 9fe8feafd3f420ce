"""A real, small tmpfs for the tests of a full or read-only disk (mounting needs root: without
it the test is skipped)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def mounted_tmpfs(mount_point: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``256k``, ``4m``) mounted on the new folder ``mount_point``;
    unmounted on exit."""
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                           str(mount_point)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()})")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)
