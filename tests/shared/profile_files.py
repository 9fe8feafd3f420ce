"""What the alignment-profile tests share: token-F1 accuracy (no judge) on EVOUNA's labelled
rows, written to a file, and a profile fitted on them with ``align``."""

from __future__ import annotations

from pathlib import Path

from shared.cli.main import main

REPO = Path(__file__).resolve().parents[2]
EVOUNA = REPO / "bench" / "agreement" / "data" / "answer_equivalence_evouna_nq.jsonl"
F1 = ["--metric", "accuracy", "--option", "mode=f1"]


def evouna_rows(path: Path, start: int, stop: int) -> Path:
    """EVOUNA's rows ``start`` to ``stop`` (exclusive) written to ``path``."""
    lines = EVOUNA.read_text().splitlines()
    path.write_text("\n".join(lines[start:stop]) + "\n")
    return path


def fit_profile(rows: Path, profile: Path, resamples: int) -> None:
    """``align`` on ``rows`` against their labels, the profile saved to ``profile``."""
    assert main(["align", str(rows), *F1, "--label", "label", "--resamples", str(resamples),
                 "--save-profile", str(profile), "-q"]) == 0
