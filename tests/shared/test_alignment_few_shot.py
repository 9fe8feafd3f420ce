"""``align --few-shot K`` (docs/ALIGNMENT.md): against a local OpenAI-compatible server that
records every prompt, each held-out row is scored again with a prompt whose fenced examples
are K training-fold rows where the plain judge disagreed with the label, never a row of its own
fold; the profile keeps the examples with the name, version and digest of every prompt the
metric sends, and ``score --profile`` shows them to the judge. The same for a multi-step metric
(faithfulness: examples on its verdict prompt only) and a one-prompt one (hallucination). A
metric with no judge prompt is refused in one line."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from judgeserver import JudgeServer, fenced_fields

from shared.cli.main import main
from shared.kit.steps import prompts

_FENCE = re.compile(r"<(data-examples-[0-9a-f]{12})>\n(.*?)\n</\1>", re.DOTALL)


def _answer_yes_when_good(body: dict) -> list[tuple[str, float]]:
    """The "judge": Yes (P 0.9) when the candidate answer says good, else No (P(Yes) 0.1)."""
    text = body["messages"][0]["content"]
    candidate = text.rsplit("Candidate answer: ", 1)[1].split("\n", 1)[0]
    yes = "good" in candidate
    return [("Yes", -0.105), ("No", -2.303)] if yes else [("No", -0.105), ("Yes", -2.303)]


def _prompt_parts(body: dict) -> tuple[str, list[dict] | None]:
    text = body["messages"][0]["content"]
    question = text.rsplit("Question: ", 1)[1].split("\n", 1)[0]
    found = _FENCE.search(text)
    return question, None if found is None else json.loads(found.group(2))


def test_held_out_prompts_carry_only_training_fold_disagreements(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rows = []
    for i in range(20):  # the judge is right on 14 rows, wrong on 6 (3 each way)
        good, label = i % 2 == 0, i % 2 == 0
        if i in (1, 3, 5):
            label = True
        if i in (0, 2, 4):
            label = False
        rows.append({"id": f"r{i}", "question": f"question {i}", "reference": "ref",
                     "prediction": "a good answer" if good else "a poor answer",
                     "label": label})
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report, profile = tmp_path / "align.json", tmp_path / "profile.json"
    with JudgeServer(lambda body: "Yes", top_logprobs=_answer_yes_when_good) as server:
        judge = ["--provider", "openai-compatible", "--base-url", server.url, "--model", "m",
                 "--cache-dir", str(tmp_path / "cache")]
        assert main(["align", str(data), "-m", "l3score", "--label", "label", "--few-shot", "2",
                     "--folds", "4", "--resamples", "50", "--json", str(report),
                     "--save-profile", str(profile), "-q", *judge]) == 0
        found = json.loads(report.read_text())
        fold_of = {f"question {i}": fold for i, fold in enumerate(found["fold_of_row"])}
        shown = [_prompt_parts(body) for body in server.seen]
        with_examples = [(q, ex) for q, ex in shown if ex is not None]
        assert len(shown) == 20 + len(with_examples) and len(with_examples) == 20
        wrong = {f"question {i}" for i in range(6)}
        for question, examples in with_examples:
            assert len(examples) == 2
            for example in examples:
                assert example["question"] in wrong  # a disagreement, with the person's answer
                assert fold_of[example["question"]] != fold_of[question]
                assert example["label"] == ("Yes" if rows[int(example["question"].split()[1])]
                                            ["label"] else "No")
        saved = json.loads(profile.read_text())
        template = prompts.L3SCORE
        assert saved["prompt"] == [{"name": "l3score", "version": template.version,
                                    "digest": hashlib.sha256(f"{template.prompt_id}\n"
                                                             f"{template.text}".encode()
                                                             ).hexdigest()[:12]}]
        assert len(saved["few_shot"]) == 2
        assert {e["question"] for e in saved["few_shot"]} <= wrong
        before = len(server.seen)
        assert main(["score", str(data), "-m", "l3score", "--profile", str(profile), "--out",
                     str(tmp_path / "scored.jsonl"), "-q", *judge]) == 0
        for body in server.seen[before:]:
            assert _prompt_parts(body)[1] == saved["few_shot"]
        assert len(server.seen) - before == 20  # other examples, other requests: no cache hit
    capsys.readouterr()
    assert main(["align", str(data), "-m", "accuracy", "--label", "label", "--few-shot", "2",
                 "-q"]) == 2
    error = capsys.readouterr().err.strip()
    assert "not a judge metric" in error and "\n" not in error


def test_a_panel_is_weighted_on_the_training_folds(tmp_path: Path) -> None:
    """Two judges: one says Yes to good answers, the other the reverse. The weights fitted on
    each fold's training rows (recomputed here from the recorded rows) give the first all the
    say; score --profile applies the profile's weights to the judges' columns."""
    import numpy as np

    from shared.analysis.alignment import panel_weights

    rows = [{"id": f"r{i}", "question": f"question {i}", "reference": "ref",
             "prediction": "a good answer" if i % 2 else "a poor answer",
             "label": bool(i % 2) if i not in (3, 8) else not i % 2} for i in range(24)]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def reversed_judge(body: dict) -> list[tuple[str, float]]:
        return [(token, lp) for (token, _), (_, lp) in zip(
            _answer_yes_when_good(body), reversed(_answer_yes_when_good(body)), strict=True)]

    report, profile = tmp_path / "align.json", tmp_path / "profile.json"
    with JudgeServer(lambda b: "Yes", top_logprobs=_answer_yes_when_good) as good, \
            JudgeServer(lambda b: "Yes", top_logprobs=reversed_judge) as bad:
        judges = [x for s in (good, bad) for x in
                  ("--judge", f"provider=openai-compatible,base_url={s.url},model=m")]
        common = [*judges, "--cache-dir", str(tmp_path / "cache"), "-q"]
        assert main(["align", str(data), "-m", "l3score", "--label", "label", "--folds", "3",
                     "--resamples", "50", "--json", str(report), "--save-profile",
                     str(profile), "--out", str(tmp_path / "aligned.jsonl"), *common]) == 0
        out = tmp_path / "scored.jsonl"
        assert main(["score", str(data), "-m", "l3score", "--profile", str(profile), "--out",
                     str(out), *common]) == 0
    found = json.loads(report.read_text())
    scored = [json.loads(line) for line in (tmp_path / "aligned.jsonl").read_text().splitlines()]
    z = np.array([[r["l3score_judge_1"], r["l3score_judge_2"]] for r in scored])
    y = np.array([float(r["label"]) for r in rows])
    weights = found["panel_weights"]
    for fold, fitted in zip(found["folds"], weights["folds"], strict=True):
        assert fitted == pytest.approx(panel_weights(z[fold["trained_on"]],
                                                     y[fold["trained_on"]]))
        assert fitted[0] > 0.99 and fitted[1] < 0.01
    saved = json.loads(profile.read_text())
    assert saved["panel_weights"] == pytest.approx(panel_weights(z, y))
    assert found["after"]["auroc"]["value"] > found["before"]["auroc"]["value"]
    from shared.analysis.alignment import Tuning

    p = Tuning(saved["threshold"], saved["calibration"]).probabilities(z @ np.array(
        saved["panel_weights"]))
    applied = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["l3score_calibrated"] for r in applied] == pytest.approx(p.tolist())


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def _verdicts(items: list[str], yes: bool) -> str:
    """One verdict per item, all ``yes`` or all "no", each reason quoting its item."""
    return json.dumps({"verdicts": [
        {"item": k, "verdict": "yes" if yes else "no",
         "reason": f"{' '.join(item.split()[:3])!r} is what is judged"}
        for k, item in enumerate(items, start=1)]})


def _grounded(body: dict) -> str:
    """A grounded judge: the text's own sentences as its statements; faithfulness's claims
    supported iff they say "good", hallucination's contexts contradicted iff the text says
    "poor"."""
    fields = fenced_fields(body)
    if "Split the text" in body["messages"][0]["content"]:
        return json.dumps({"statements": _sentences(fields["text"])})
    if "claims" in fields:
        claims = json.loads(fields["claims"])
        return _verdicts(claims, all("good" in c for c in claims))
    return _verdicts(json.loads(fields["contexts"]), "poor" in fields["text"])


def _row_of(contexts: list[str]) -> int:
    return int(contexts[0].split()[3].rstrip("."))


@pytest.mark.parametrize(("metric", "verdict_prompt", "judge_says_yes"), [
    ("faithfulness", "faithfulness", lambda good: good),  # claims, then verdicts
    ("hallucination", "hallucination", lambda good: not good),  # one verdict prompt
])
def test_every_judge_metric_takes_examples_from_other_folds_only(
        tmp_path: Path, metric: str, verdict_prompt: str, judge_says_yes: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The planted-leak check for a multi-step and a one-prompt metric: every held-out row's
    verdict request carries K examples, each a training-fold row (never one of its own fold)
    where the plain judge disagreed with the person, with the metric's own inputs and the
    person's label; no extraction request ever carries examples."""
    from shared.kit.sent_prompts import prompt_records

    rows = []
    for i in range(16):  # the judge is wrong on rows 0-5
        good = i % 2 == 0
        says = judge_says_yes(good)
        rows.append({"id": f"r{i}", "prediction": f"Row {i} gives a {'good' if good else 'poor'}"
                     " answer.", "contexts": [f"Context of row {i}."],
                     "label": (not says) if i < 6 else says})
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report, profile = tmp_path / "align.json", tmp_path / "profile.json"
    with JudgeServer(_grounded) as server:
        judge = ["--provider", "openai-compatible", "--base-url", server.url, "--model", "m",
                 "--cache-dir", str(tmp_path / "cache")]
        assert main(["align", str(data), "-m", metric, "--label", "label", "--few-shot", "2",
                     "--folds", "4", "--resamples", "50", "--json", str(report),
                     "--save-profile", str(profile), "-q", *judge]) == 0
        fold_of = json.loads(report.read_text())["fold_of_row"]
        with_examples = 0
        for body in server.seen:
            fields = fenced_fields(body)
            if "examples" not in fields:
                continue
            assert body["messages"][0]["content"].count("<data-examples-") == 1
            assert "Split the text" not in body["messages"][0]["content"]
            with_examples += 1
            held = _row_of(json.loads(fields["contexts"]))
            examples = json.loads(fields["examples"])
            assert len(examples) == 2
            for example in examples:
                row = _row_of(example["contexts"])
                assert row < 6 and fold_of[row] != fold_of[held]  # a disagreement, elsewhere
                assert example == {"prediction": rows[row]["prediction"],
                                   "contexts": rows[row]["contexts"],
                                   "label": "Yes" if rows[row]["label"] else "No"}
        assert with_examples == len(rows)  # each held-out row scored again, once
        version = next(p["version"] for p in prompt_records(metric)
                       if p["name"] == verdict_prompt)
        assert f"(shown before the prompt {verdict_prompt} version {version})" in (
            capsys.readouterr().out)
        saved = json.loads(profile.read_text())
        assert verdict_prompt in [p["name"] for p in saved["prompt"]]
        assert saved["prompt"] == prompt_records(metric) and len(saved["few_shot"]) == 2
        before = len(server.seen)
        assert main(["score", str(data), "-m", metric, "--profile", str(profile), "--out",
                     str(tmp_path / "scored.jsonl"), "-q", *judge]) == 0
        shown = [json.loads(fenced_fields(b)["examples"]) for b in server.seen[before:]]
        assert shown == [saved["few_shot"]] * len(rows)
