"""Declared options (shared/base/options.py): each check, the generated Args text and card tables,
the judge options declared once, and the errors a metric gives for an unknown option or a bad
value before any work."""

from __future__ import annotations

import dataclasses
import math

import evaluate
import pytest

from shared.base.options import (
    EMBEDDING_OPTIONS,
    Option,
    args_lines,
    card_table,
    check_options,
    with_options,
)
from shared.cli.common import judge_options
from shared.cli.main import build_parser
from shared.engine.backends.registry import LOCAL
from shared.engine.config import JUDGE_OPTION_NAMES, JUDGE_OPTIONS, JudgeConfig
from shared.kit import registry
from shared.tools.cards import END, START, options_block, render, write_cards

THRESHOLD = Option("threshold", float, 0.5, range=(0, 1), doc="decision threshold")
FLAG = Option("strict", bool, False, doc="refuse near matches")
MODE = Option("mode", str, "exact", choices=("exact", "f1"), doc="how to compare")
COUNT = Option("batch_size", int, 8, range=(1, None), doc="samples per batch")
NAME = Option("separator", str, None, nullable=True, doc="split references at this text")
WEIGHTS = Option("weights", list, (0.5, 0.5), doc="weights of the parts")
SCALE = Option("scale", float, 1.0, range=(0, None), doc="a factor")


@pytest.mark.parametrize(("option", "value", "error", "message"), [
    (THRESHOLD, 1.5, ValueError, "threshold must be in [0, 1], got 1.5"),
    (THRESHOLD, math.nan, ValueError, "threshold must be in [0, 1], got nan"),
    (THRESHOLD, "0.5", TypeError, "threshold must be a number in [0, 1], got str"),
    (THRESHOLD, True, TypeError, "threshold must be a number in [0, 1], got bool"),
    (THRESHOLD, None, TypeError, "threshold must be float in [0, 1], got None"),
    (FLAG, 1, TypeError, "strict must be True or False, got 1"),
    (FLAG, "yes", TypeError, "strict must be True or False, got 'yes'"),
    (MODE, "fuzzy", ValueError, "mode must be one of exact, f1; got 'fuzzy'"),
    (COUNT, 0, ValueError, "batch_size must be >= 1, got 0"),
    (COUNT, 2.0, TypeError, "batch_size must be int >= 1, got float"),
    (COUNT, False, TypeError, "batch_size must be int >= 1, got bool"),
    (NAME, 3, TypeError, "separator must be a string, got int"),
    (WEIGHTS, "0.5,0.5", TypeError, "weights must be a list, got str"),
    (SCALE, -1.0, ValueError, "scale must be >= 0, got -1.0"),
    (SCALE, math.inf, ValueError, "scale must be a finite number, got inf"),
])
def test_each_check_names_the_option(option: Option, value, error, message) -> None:
    with pytest.raises(error) as raised:
        option.validate(value)
    assert str(raised.value) == message


def test_valid_values_come_back_normalised() -> None:
    assert THRESHOLD.validate(1) == 1.0 and isinstance(THRESHOLD.validate(1), float)
    assert SCALE.validate(2) == 2.0 and isinstance(SCALE.validate(2), float)
    assert FLAG.validate(True) is True
    assert MODE.validate("f1") == "f1"
    assert COUNT.validate(3) == 3
    assert NAME.validate(None) is None and NAME.validate("/") == "/"
    assert WEIGHTS.validate((1, 0)) == [1, 0]


def test_a_custom_check_replaces_the_generic_one() -> None:
    seen = []

    def positive_or_none(name: str, value):
        seen.append(value)
        if value is not None and value <= 0:
            raise ValueError(f"{name} must be positive")
        return value

    option = Option("limit", int, None, nullable=True, check=positive_or_none)
    assert option.validate(None) is None
    with pytest.raises(ValueError, match="limit must be positive"):
        option.validate(-2)
    assert seen == [None, -2]


def test_check_options_fills_defaults_and_refuses_unknown_names() -> None:
    declared = (THRESHOLD, FLAG, MODE, WEIGHTS)
    assert check_options("demo", declared, {"threshold": 1}) == {
        "threshold": 1.0, "strict": False, "mode": "exact", "weights": [0.5, 0.5]}
    passed = check_options("demo", declared, {"provider": "x"}, passed_through=("provider",))
    assert passed["provider"] == "x"
    with pytest.raises(TypeError) as raised:
        check_options("demo", declared, {"colour": 1, "size": 2})
    assert str(raised.value) == ("demo has no option 'colour' (it takes: mode, strict, threshold, "
                                 "weights)")
    with pytest.raises(TypeError) as raised:
        check_options("demo", declared, {"treshold": 1})
    assert str(raised.value) == "demo has no option 'treshold' (did you mean 'threshold'?)"


@pytest.mark.parametrize(("option", "text", "value"), [
    (THRESHOLD, "0.25", 0.25),
    (THRESHOLD, "1", 1.0),
    (FLAG, "true", True),
    (MODE, "f1", "f1"),
    (COUNT, "16", 16),
    (NAME, "/", "/"),
    (NAME, "null", None),
    (WEIGHTS, "[0.75, 0.25]", [0.75, 0.25]),
])
def test_command_line_text_is_converted_by_the_declaration(option, text, value) -> None:
    parsed = option.parse(text)
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize(("option", "text", "message"), [
    (THRESHOLD, "high", "threshold: 'high' is not a valid float in [0, 1]"),
    (THRESHOLD, "2", "threshold must be in [0, 1], got 2"),
    (FLAG, "1", "strict must be True or False, got 1"),
    (MODE, "fuzzy", "mode must be one of exact, f1; got 'fuzzy'"),
    (Option("tokenizer", object), "str.split", "tokenizer cannot be given on the command line"),
])
def test_bad_command_line_text_is_one_clear_error(option, text, message) -> None:
    with pytest.raises((TypeError, ValueError)) as raised:
        option.parse(text)
    assert str(raised.value) == message


def test_demo_kind_follows_the_type() -> None:
    kinds = [o.kind for o in (FLAG, COUNT, THRESHOLD, MODE, NAME, WEIGHTS)]
    assert kinds == ["bool", "int", "float", "text", "text", "json"]
    assert Option("tokenizer", object).kind is None


def test_generated_args_lines() -> None:
    text = args_lines((THRESHOLD, NAME, MODE))
    assert text == (
        "    threshold (float in [0, 1]): decision threshold. Default 0.5.\n"
        "    separator (str or None): split references at this text. Default None.\n"
        '    mode (str): how to compare. Default "exact".'
    )
    long = Option("fuzzy_threshold", float, 0.8, range=(0, 1), doc="word " * 30)
    lines = args_lines((long,)).splitlines()
    assert all(len(line) <= 96 for line in lines) and len(lines) > 1
    assert lines[0].startswith("    fuzzy_threshold (") and lines[1].startswith(" " * 8)


def test_options_go_before_returns_and_the_judge_paragraph_is_written_once() -> None:
    description = "Args:\n    predictions (list of str): the answers.\nReturns:\n    score.\n"
    plain = with_options(description, (FLAG,))
    assert plain == ("Args:\n    predictions (list of str): the answers.\n"
                     "    strict (bool): refuse near matches. Default False.\nReturns:\n"
                     "    score.\n")
    judged = with_options(description, (), JUDGE_OPTION_NAMES, LOCAL)
    head = judged.split("Returns:")[0]
    assert ", ".join(JUDGE_OPTION_NAMES) in " ".join(head.split())
    assert f'provider="{LOCAL}"' in head
    assert "the judge options" in " ".join(head.split())  # wherever the paragraph wraps


@pytest.mark.parametrize("name", registry.available())
def test_every_metric_docstring_lists_its_declared_options(name: str) -> None:
    metric = evaluate.load(registry.metric_path(name))
    spec = registry.METRICS[name]
    args = metric.inputs_description.split("\nReturns:")[0]
    for option in spec.options:
        assert f"    {option.name} ({option.type_text()}): " in args, option.name
    joined = " ".join(args.split())
    assert (", ".join(JUDGE_OPTION_NAMES) in joined) == spec.judge


@pytest.mark.parametrize("name", registry.available())
def test_every_metric_refuses_an_unknown_option_before_any_work(name: str) -> None:
    inputs = dict(registry.METRICS[name].example.inputs)
    with pytest.raises(TypeError) as raised:
        evaluate.load(registry.metric_path(name)).compute(**inputs, colour="blue")
    assert str(raised.value).startswith(f"{name} has no option 'colour' (")


@pytest.mark.parametrize(("name", "option", "value", "error", "message"), [
    ("accuracy", "mode", "fuzzy", ValueError,
     "mode must be one of exact, contains, recall, precision, f1; got 'fuzzy'"),
    ("accuracy", "seed", -1, TypeError, "seed must be a non-negative integer or None, got -1"),
    ("semantic_list_contains", "batch_size", 0, ValueError, "batch_size must be >= 1, got 0"),
    ("semantic_list_contains", "embedding_model", 5, TypeError,
     "embedding_model must be a string, got int"),
    ("bleu", "smoothing", "method9", ValueError,
     "smoothing must be one of method0, method1, method2, method3, method4, method5, method6, "
     "method7; got 'method9'"),
    ("rouge", "rouge_types", ["rougeX"], ValueError,
     "rouge_types[0] is 'rougeX'; valid: rouge1 ... rouge9, rougeL, rougeLsum"),
    ("l3score", "exact", "yes", TypeError, "exact must be True or False, got 'yes'"),
    ("answer_correctness", "weights", [0, 0], ValueError, "weights must not sum to 0"),
])
def test_a_bad_value_fails_before_any_work(name, option, value, error, message) -> None:
    """Judge metrics too: the check runs before any judge is made (no server is running)."""
    inputs = dict(registry.METRICS[name].example.inputs)
    with pytest.raises(error) as raised:
        evaluate.load(registry.metric_path(name)).compute(**inputs, **{option: value})
    assert str(raised.value) == message


def test_judge_options_are_declared_once() -> None:
    fields = dataclasses.fields(JudgeConfig)
    assert tuple(f.name for f in fields) == JUDGE_OPTION_NAMES
    assert {f.name: f.default for f in fields} == {o.name: o.default for o in JUDGE_OPTIONS}
    assert JudgeConfig() == JudgeConfig(**{o.name: o.default for o in JUDGE_OPTIONS})


def test_cli_judge_and_embedding_arguments_come_from_the_declarations() -> None:
    parser = build_parser()
    score = parser._subparsers._group_actions[0].choices["score"]  # noqa: SLF001
    flags = {flag for action in score._actions for flag in action.option_strings}  # noqa: SLF001
    assert {o.cli for o in (*JUDGE_OPTIONS, *EMBEDDING_OPTIONS) if o.cli} <= flags
    args = parser.parse_args(["score", "in.jsonl", "-m", "faithfulness", "--max-concurrency", "4",
                              "--timeout", "2.5", "--no-cache", "--dry-run", "--provider",
                              "openai-compatible", "--base-url", "http://127.0.0.1:1/v1",
                              "--embedding-model", "./minilm"])
    assert judge_options(args) == {
        "provider": "openai-compatible", "base_url": "http://127.0.0.1:1/v1",
        "max_concurrency": 4, "use_cache": False, "timeout": 2.5, "dry_run": True,
        "embedding_model": "./minilm"}
    assert judge_options(parser.parse_args(["score", "in.jsonl", "-m", "bias"])) == {}


def test_card_tables_follow_the_declarations() -> None:
    table = card_table((THRESHOLD, NAME, WEIGHTS))
    assert table.splitlines() == [
        "| Name | Type | Default | Description |",
        "|---|---|---|---|",
        "| `threshold` | float in [0, 1] | `0.5` | decision threshold |",
        "| `separator` | str or None | `None` | split references at this text |",
        "| `weights` | list | `[0.5, 0.5]` | weights of the parts |",
    ]


def test_every_card_is_up_to_date() -> None:
    """Run ``python -m judge_metrics.tools.cards`` after changing a declaration."""
    assert write_cards(check=True) == []


def test_rendering_a_card_replaces_only_its_block() -> None:
    spec = registry.METRICS["bleu"]
    card = f"# Card\n\n## Inputs\n\n{START}\nstale text\n{END}\n\n## Output Values\n"
    rendered = render(card, spec)
    assert rendered == f"# Card\n\n## Inputs\n\n{options_block(spec)}\n\n## Output Values\n"
    assert "`smoothing`" in rendered and "stale" not in rendered
    assert render(rendered, spec) == rendered
    with pytest.raises(ValueError, match="no <!-- options:start -->"):
        render("# Card without a block\n", spec)
