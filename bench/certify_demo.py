"""``make certify-demo``: the embedded judge's cards for two metrics on the bundled sample
(examples/rag_sample.jsonl, 20 rows), written to bench/CERTIFY.md.

The metrics are l3score (one Yes/No request per row) and pairwise (two label requests per row,
its two orders), the two judge metrics whose certification is shortest with the embedded judge
on CPU; pairwise also has the ``order`` check (its answer and baseline exchanged). Every
default holds (tolerance 0.05, delta 0.2, 3 repeats, seed 0); with 20 rows a check can fail or
stay inconclusive, never pass (a pass at 0.05 needs about 72 rows with no failure), which is
what the cards say.
"""

from __future__ import annotations

import datetime
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shared import certify  # noqa: E402
from shared.certification.card import MARKER, card_markdown  # noqa: E402

SAMPLE = "examples/rag_sample.jsonl"
METRICS = ("l3score", "pairwise")
OUT = ROOT / "bench" / "CERTIFY.md"


def shown_card(report: dict) -> str:
    """The card's readable part (without its machine block), its headings two levels down."""
    text = card_markdown(report).split(MARKER)[0].rstrip()
    return "\n".join("##" + line if line.startswith("#") else line for line in text.splitlines())


def findings(report: dict) -> list[str]:
    lines = []
    for check in report["checks"]:
        rate = check["rate"]
        if check["outcome"] == "fail":
            example = check["examples"][0]
            lines.append(
                f"- `{check['name']}` fails: the judge failed it on {check['failures']} of "
                f"{check['n']} rows (interval [{rate['low']:.2f}, {rate['high']:.2f}], wholly "
                f"above {check['tolerance']:g}); for instance row {example['row']} "
                + (f"scored {', '.join(f'{v:.2f}' for v in example['scores'])}"
                   if "scores" in example else
                   f"went from {example['score']:.2f} to {example['edited_score']:.2f} "
                   f"({example['note']})") + ".")
        elif check["outcome"] == "inconclusive":
            lines.append(f"- `{check['name']}` is inconclusive: {check['failures']} of "
                         f"{check['n']} rows failed; {check.get('note', '')}.")
        else:
            lines.append(f"- `{check['name']}` passes.")
    return lines


def main() -> None:
    parts = [
        "# The embedded judge's cards", "",
        "Written by `make certify-demo` (bench/certify_demo.py): `certify` with the embedded "
        "judge (SmolLM2-135M-Instruct, a tiny and weak model, on CPU through transformers) on "
        f"the bundled sample `{SAMPLE}` (20 rows), every default (tolerance 0.05, delta 0.2 of "
        "the score range, 3 repeats, seed 0). docs/CERTIFY.md explains each check.", "",
        "With 20 rows no check can pass at a tolerance of 0.05 (even no failure at all leaves "
        "the 95% interval's upper end at 0.17); a check fails when the judge fails it so often "
        "that the whole interval is above the tolerance.", ""]
    for metric in METRICS:
        start = time.monotonic()
        report = certify(ROOT / SAMPLE, metric, show_progress=False)
        seconds = time.monotonic() - start
        parts += [f"## {metric}", "",
                  f"{report['usage']['calls']} judge requests sent and "
                  f"{report['usage']['cache_hits']} answered from the call cache (the repeats "
                  f"always go to the judge), {seconds:.0f} s on "
                  f"{datetime.date.today().isoformat()}.", "", "What it shows:", "",
                  *findings(report), "", shown_card(report), ""]
        print(f"{metric}: {'certified' if report['certified'] else 'not certified'} "
              f"({seconds:.0f} s)", file=sys.stderr)
    OUT.write_text("\n".join(parts), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
