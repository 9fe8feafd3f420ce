"""A profile fitted with few-shot examples (``align --few-shot``) describes the judge's scores
*with those examples*: ``score``, ``agree`` and ``compare --metric`` given that profile must show
the judge the same examples, or its threshold and map would be applied to other scores
(docs/ALIGNMENT.md). Against a local OpenAI-compatible server that records every prompt."""

from __future__ import annotations

import json
import re
from pathlib import Path

from judgeserver import JudgeServer

from shared.cli.main import main

_FENCE = re.compile(r"<(data-examples-[0-9a-f]{12})>\n(.*?)\n</\1>", re.DOTALL)


def _yes_when_good(body: dict) -> list[tuple[str, float]]:
    text = body["messages"][0]["content"]
    candidate = text.rsplit("Candidate answer: ", 1)[1].split("\n", 1)[0]
    return ([("Yes", -0.105), ("No", -2.303)] if "good" in candidate
            else [("No", -0.105), ("Yes", -2.303)])


def _examples_shown(body: dict) -> list[dict] | None:
    found = _FENCE.search(body["messages"][0]["content"])
    return None if found is None else json.loads(found.group(2))


def test_agree_and_compare_show_the_profile_examples(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "question": f"question {i}", "reference": "ref",
             "prediction": "a good answer" if i % 2 == 0 else "a poor answer",
             "label": (i % 2 == 0) != (i < 6)} for i in range(16)]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    other = tmp_path / "other.jsonl"  # other answers: no cached call can stand in for a request
    other.write_text("".join(json.dumps({**r, "prediction": r["prediction"] + " again"}) + "\n"
                             for r in rows))
    profile = tmp_path / "profile.json"
    with JudgeServer(lambda body: "Yes", top_logprobs=_yes_when_good) as server:
        judge = ["--provider", "openai-compatible", "--base-url", server.url, "--model", "m",
                 "--cache-dir", str(tmp_path / "cache"), "-q"]
        assert main(["align", str(data), "-m", "l3score", "--label", "label", "--few-shot", "2",
                     "--folds", "4", "--resamples", "50", "--save-profile", str(profile),
                     *judge]) == 0
        examples = json.loads(profile.read_text())["few_shot"]
        assert len(examples) == 2
        for command in (
                ["agree", str(other), "-m", "l3score", "--label", "label", "--resamples", "50"],
                ["compare", str(data), str(other), "-m", "l3score", "--resamples", "50"]):
            before = len(server.seen)
            assert main([*command, "--profile", str(profile), *judge]) in (0, 1)
            asked = server.seen[before:]
            assert asked, command[0]
            assert all(_examples_shown(body) == examples for body in asked), command[0]
