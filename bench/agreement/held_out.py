"""The agreement benchmark's alignment section: each metric with 0/1 human labels aligned to
them (``shared.align``: the calibration map and the decision threshold tuned on training
folds), its kappa, AUROC, Brier and ECE before and after on the held-out folds, the paired
test and whether it improved. ``make agreement`` (run.py) writes it after the main tables; on
its own it rescores the jobs (judge answers from the call cache) and rewrites only its block
of bench/AGREEMENT.md:

    .venv/bin/python bench/agreement/held_out.py [judge options] [--only METRIC ...]
        [--judge-rows N] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from labelled import (  # noqa: E402
    JUDGE_ROWS,
    ROOT,
    Job,
    baseline_scores,
    job_rows,
    jobs,
    load,
)

import shared  # noqa: E402
from shared.analysis.labels import BOOLEAN, parse_labels  # noqa: E402
from shared.base.errors import UserInputError  # noqa: E402
from shared.cli.common import add_judge_arguments, judge_options  # noqa: E402
from shared.kit.registry import available  # noqa: E402

REPORT = ROOT / "bench" / "AGREEMENT.md"
START, END = "<!-- alignment:start -->", "<!-- alignment:end -->"
FOLDS = 5


def boolean_jobs(only: list[str] | None = None) -> list[Job]:
    """The jobs whose labels are 0/1 (the set's label column read as ``agree`` reads it)."""
    found = []
    for job in jobs():
        if only and job.name not in only:
            continue
        if job.baseline is None and job.name not in available():
            continue
        labels = load(job.data, job.aliases, job.rows, 0)[job.label]
        if parse_labels(labels, job.label, allow_constant=True)[1] == BOOLEAN:
            found.append(job)
    return found


def align_job(job: Job, options: dict[str, Any], judge_rows: dict[str, int],
              seed: int) -> dict[str, Any]:
    """The held-out report of one job, on the rows ``run_job`` scores."""
    dataset, _ = job_rows(job, judge_rows, seed)
    if job.baseline is not None:
        scores = baseline_scores(job, dataset)
        labels = parse_labels(dataset[job.label], job.label)[0]
        report = shared.align_scores(scores, labels, folds=FOLDS, seed=seed)
    else:
        _, report = shared.align(
            dataset, job.name, job.label, folds=FOLDS, group=job.group, seed=seed,
            columns=job.columns, score_key=job.score_key,
            metric_options=job.options or None, show_progress=False,
            **(options if job.judge else {}))
    return {"job": job, "report": report}


def section(results: list[dict[str, Any]], seed: int, only: list[str] | None = None
            ) -> list[str]:
    def figure(side: dict[str, Any], name: str) -> str:
        value = side[name]
        return "-" if value["value"] is None else f"{value['value']:.2f}"

    lines = [START, "## Held-out agreement before and after alignment", "",
             f"`shared.align` on each set with 0/1 labels (the rows of the tables above): the "
             f"calibration map (isotonic or Platt) and the decision threshold with the best "
             f"kappa are tuned on {FOLDS} training folds (seed {seed}) and every figure below is "
             "computed on the held-out folds, so it is a fair forecast of the tuned metric on "
             "new rows. Before: the raw score read as P(label), decided at the metric's own "
             "threshold (0.5 when it has none). `p`: paired bootstrap of kappa after - "
             "before on the same rows; `improved` only when p < 0.05 and kappa rose "
             "(docs/ALIGNMENT.md).", "",
             *([f"Written by `bench/agreement/held_out.py --only {' --only '.join(only)}`: the "
                "other metrics' rows come with a full `make agreement`.", ""] if only else []),
             "| metric | data set | n | kappa before -> after | AUROC before -> after | "
             "Brier before -> after | ECE before -> after | p | improved | base rate |",
             "|---|---|---:|---|---|---|---|---:|---|---:|"]
    for result in results:
        job, r = result["job"], result["report"]
        if "error" in result:
            lines.append(f"| {job.title} | {job.data[1]} | - | {result['error']} | | | | | | |")
            continue
        cells = [f"{figure(r['before'], k)} -> {figure(r['after'], k)}"
                 for k in ("kappa", "auroc", "brier", "ece")]
        lines.append(f"| {job.title} | {job.data[1]} | {r['n']} | " + " | ".join(cells)
                     + f" | {r['paired_test']['p_value']:.3g} | "
                     f"{'yes' if r['improved'] else 'no'} | {r['baseline']['base_rate']:.2f} |")
    return [*lines, END]


def write_section(lines: list[str], path: Path = REPORT) -> None:
    """Replace the section's block in ``path`` (append it when the report has none)."""
    text = path.read_text(encoding="utf-8")
    block = "\n".join(lines)
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


def run(options: dict[str, Any], judge_rows: dict[str, int], seed: int,
        only: list[str] | None = None, path: Path = REPORT) -> list[dict[str, Any]]:
    results = []
    for job in boolean_jobs(only):
        print(f"alignment: {job.title} on {job.data[1]}", file=sys.stderr)
        try:
            results.append(align_job(job, options, judge_rows, seed))
        except UserInputError as error:
            results.append({"job": job, "error": str(error).replace("|", "/")})
    write_section(section(results, seed, only), path)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_judge_arguments(parser)
    parser.add_argument("--judge-rows", type=int, metavar="N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", action="append", metavar="METRIC")
    args = parser.parse_args(argv)
    rows = {k: (args.judge_rows or v) for k, v in JUDGE_ROWS.items()}
    run(judge_options(args), rows, args.seed, args.only)
    print(f"wrote the alignment section of {REPORT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
