"""A judge metric's ``examples`` option (shared.kit.few_shot, docs/ALIGNMENT.md): for every
judge metric, a dry run of the real runner on its example records the request texts the judge
is given, with and without examples: each request of the metric's ``SCORING_PROMPTS`` starts
with the one fenced examples block, exactly once, followed by the very text it has without
examples; every other request (statements, opinions, intentions, facts, g_eval's reason) is
byte for byte the same. Bad examples are refused in one line before any request; a profile
written when only l3score took examples is still read."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from dry_runs import dry_run

from shared.base.validation import InputError
from shared.kit.few_shot import EXAMPLES_INTRO, examples_block
from shared.kit.registry import METRICS, metric_class
from shared.kit.steps import prompts

JUDGE_METRICS = [name for name in METRICS if METRICS[name].judge]
_OPENING = re.compile(r"<data-examples-[0-9a-f]{12}>")


def example_of(name: str, row: int = 0, label: Any = "Yes") -> dict[str, Any]:
    """Row ``row`` of the metric's declared example as one few-shot example."""
    cls = metric_class(name)
    given = METRICS[name].example.inputs
    return {**{spec.column_name: given[spec.name][row] for spec in cls.INPUTS
               if spec.name in given}, "label": label}


def requests_sent(name: str, **options: Any) -> list[tuple[str, str]]:
    return dry_run(name, **options).seen


def test_every_judge_metric_has_the_option_and_names_its_scoring_prompts() -> None:
    assert len(JUDGE_METRICS) >= 16
    for name in JUDGE_METRICS:
        spec = METRICS[name]
        assert spec.scoring_prompts, name
        assert [o.name for o in spec.options].count("examples") == 1, name
    assert all("examples" not in {o.name for o in METRICS[n].options}
               for n in METRICS if not METRICS[n].judge)


@pytest.mark.parametrize("name", JUDGE_METRICS)
def test_the_block_comes_once_before_the_scoring_prompts_only(name: str) -> None:
    extra = {"explain": True} if name == "g_eval" else {}  # its reason must stay unchanged
    examples = [example_of(name, 0, "Yes"), example_of(name, 1, "No")]
    plain = requests_sent(name, **extra)
    shown = requests_sent(name, examples=examples, **extra)
    block = examples_block(metric_class(name)().check_options(
        {**METRICS[name].example.options, "examples": examples})["examples"])
    assert [p for p, _ in shown] == [p for p, _ in plain]
    scoring = set(METRICS[name].scoring_prompts)
    got_block = 0
    for (prompt_id, before), (_, after) in zip(plain, shown, strict=True):
        assert not _OPENING.search(before)
        if prompt_id.partition("@")[0] in scoring:
            assert after == block + before, prompt_id
            assert len(_OPENING.findall(after)) == 1 and after.count(EXAMPLES_INTRO) == 1
            got_block += 1
        else:
            assert after == before, prompt_id
    assert got_block >= 1
    sent = json.loads(block.split(">\n", 1)[1].rsplit("\n</", 1)[0])
    assert [e["label"] for e in sent] == ["Yes", "No"]


def test_no_examples_leaves_every_request_unchanged() -> None:
    for name in ("faithfulness", "l3score"):
        assert requests_sent(name, examples=[]) == requests_sent(name) == requests_sent(
            name, examples=None)


_GOOD = {"question": "q", "contexts": ["c"], "reference": "r"}


@pytest.mark.parametrize(("examples", "said"), [
    ("not a list", "examples must be a list of dicts with question, contexts, reference, "
                   "label"),
    ([["a", "b"]], "examples[0] must be a dict"),
    ([_GOOD], "examples[0] has no label"),
    ([{"contexts": ["c"], "reference": "r", "label": "Yes"}], "examples[0] has no question"),
    ([{**_GOOD, "questions": "q", "label": 1}], "examples[0] has unknown keys questions"),
    ([{**_GOOD, "label": "Yes"}, {**_GOOD, "contexts": [3], "label": "Yes"}],
     "examples[1] contexts:"),
    ([{**_GOOD, "label": None}], "examples[0] label must be text, a number or true/false"),
    ([{**_GOOD, "label": " "}], "examples[0] label must be text, a number or true/false"),
])
def test_bad_examples_are_refused_in_one_line(examples: Any, said: str) -> None:
    metric = metric_class("context_precision")()  # question, contexts, reference
    with pytest.raises(InputError) as refused:
        metric.check_options({"examples": examples})
    message = str(refused.value)
    assert message.startswith(said) and "\n" not in message, message


def test_compute_refuses_bad_examples_before_any_request() -> None:
    import evaluate

    metric = evaluate.load(str(Path(__file__).parents[2] / "metrics" / "hallucination"))
    with pytest.raises(InputError, match=r"examples\[0\] has no label"):
        metric.compute(predictions=["p"], contexts=[["c"]],
                       examples=[{"prediction": "p", "contexts": ["c"]}],
                       provider="openai-compatible", base_url="http://127.0.0.1:9/v1",
                       model="m", use_cache=False)


def test_conversations_are_shown_as_json_and_optional_inputs_may_be_left_out() -> None:
    metric = metric_class("task_completion")()  # messages, and task (optional)
    messages = METRICS["task_completion"].example.inputs["messages"][0]
    checked = metric.check_options({"examples": [
        {"messages": json.dumps(messages), "label": False}]})["examples"]
    normalised = json.loads(metric.validate_inputs({"messages": [messages]})["messages"][0])
    assert checked == [{"messages": normalised, "label": False}]


def test_an_old_l3score_profile_is_read_and_a_changed_prompt_refused(tmp_path: Path) -> None:
    from shared.analysis.alignment_profile import PROFILE_FORMAT, check_profile
    from shared.base.errors import UserInputError
    from shared.kit.sent_prompts import prompt_records

    record = prompt_records("l3score")
    legacy = {**record[0], "digest": hashlib.sha256(  # the full digest profiles once recorded
        f"{prompts.L3SCORE.prompt_id}\n{prompts.L3SCORE.text}".encode()).hexdigest()}
    old = {"format": PROFILE_FORMAT, "metric": "l3score", "metric_options": {},
           "score_key": "L3Score", "column": "l3score", "threshold": 0.5, "calibration": None,
           "prompt": legacy, "few_shot": [{"question": "q", "reference": "r",
                                               "prediction": "p", "answer": "No"}]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    data = check_profile(path, ["l3score"], {})
    assert data["prompt"] == [legacy]
    assert data["few_shot"] == [{"question": "q", "reference": "r", "prediction": "p",
                                 "label": "No"}]
    metric_class("l3score")().check_options({"examples": data["few_shot"]})  # still valid
    for changed in ({**record[0], "version": "0"}, {**record[0], "digest": "0" * 64}):
        path.write_text(json.dumps({**old, "prompt": [changed]}))
        with pytest.raises(UserInputError, match="has changed") as refused:
            check_profile(path, ["l3score"], {})
        assert "\n" not in str(refused.value)
    path.write_text(json.dumps({**old, "prompt": ["l3score"]}))
    with pytest.raises(UserInputError, match="prompt record is not one"):
        check_profile(path, ["l3score"], {})


def test_a_profile_records_every_prompt_its_metric_sends_and_reads_older_records(
        tmp_path: Path) -> None:
    """A profile's prompt record is the metric's declared prompts (its scores come from all of
    them; the examples go with its ``SCORING_PROMPTS``, every one of them among those); a
    record of the scoring prompts alone, as profiles once wrote, is still read."""
    from shared.analysis.alignment_profile import changed_prompts
    from shared.kit.sent_prompts import prompt_records

    for name in JUDGE_METRICS:
        options = dict(METRICS[name].example.options)
        record = prompt_records(name, options)
        assert set(METRICS[name].scoring_prompts) <= {r["name"] for r in record}, name
        assert all(r["version"] and len(r["digest"]) == 12 for r in record)
        assert changed_prompts(record, name, options) == []
        scoring = [r for r in record if r["name"] in METRICS[name].scoring_prompts]
        assert changed_prompts(scoring, name, options) == []
    assert len({r["digest"] for n in JUDGE_METRICS for r in prompt_records(n)}) == len(
        {r["name"] for n in JUDGE_METRICS for r in prompt_records(n)})
    # g_eval's prompt is written from the criteria: other criteria, another prompt
    polite = prompt_records("g_eval", {"criteria": "Is it polite?"})
    assert changed_prompts(polite, "g_eval", {"criteria": "Is it short?"}) == polite
