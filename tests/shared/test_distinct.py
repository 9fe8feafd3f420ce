"""shared.engine.distinct: ``uniqueItems`` lists. A list is cut at its first repeated string and
closed to JSON that still satisfies the schema (or not cut at all), the runner drops repeats
instead of refusing them, and the remote providers whose structured-output subset has no
``uniqueItems`` (OpenAI's strict json_schema, Gemini's responseJsonSchema) never receive it."""

from __future__ import annotations

import json

import jsonschema
import pytest
from backend_cases import ask, collect
from fakes.gemini import FakeGemini
from faultproxy import FaultProxy

from shared.engine.answers import AnswerSchema
from shared.engine.backends.pool import make_backend
from shared.engine.config import judge_config
from shared.engine.distinct import (
    closed_at_repeat,
    declares_unique,
    without_repeats,
    without_unique_items,
)
from shared.kit.steps.extraction import clean_items, list_schema

LIST = list_schema("statements")


def is_valid(schema: dict):
    return jsonschema.validators.validator_for(schema)(schema).is_valid


@pytest.mark.parametrize(("text", "closed"), [
    ('{"statements": ["a b", "c", "a b"', '{"statements": ["a b", "c"]}'),
    ('{"statements":["a b","c","a  b "]}', '{"statements":["a b","c"]}'),  # as clean_items
    ('{"statements": ["x", "x"', '{"statements": ["x"]}'),
    ('{"statements": ["say \\"x\\"", "y", "say \\"x\\""', '{"statements": ["say \\"x\\"", "y"]}'),
])
def test_a_list_is_closed_before_its_first_repeat(text: str, closed: str) -> None:
    assert closed_at_repeat(text, LIST, is_valid(LIST)) == closed
    # the cut loses nothing clean_items would keep from the items written so far
    kept = json.loads(closed)["statements"]
    assert clean_items(kept) == clean_items(json.loads(text.rstrip("]}") + "]}")["statements"])


@pytest.mark.parametrize("text", [
    '{"statements": ["a", "b"',  # no repeat
    '{"statements": ["a", "b"]}',
    '{"statements": ["a", "a',  # the repeat is not complete yet
])
def test_no_repeat_no_cut(text: str) -> None:
    assert closed_at_repeat(text, LIST, is_valid(LIST)) is None


def test_a_cut_that_would_break_the_schema_is_not_made() -> None:
    later_required = {"type": "object", "required": ["items", "n"], "properties": {
        "items": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "n": {"type": "integer"}}}
    assert closed_at_repeat('{"items": ["a", "a"', later_required,
                            is_valid(later_required)) is None
    at_least_two = list_schema("statements") | {}
    at_least_two["properties"] = {"statements": {**LIST["properties"]["statements"],
                                                 "minItems": 2}}
    assert closed_at_repeat('{"statements": ["a", "a"', at_least_two,
                            is_valid(at_least_two)) is None


def test_nested_lists_and_lists_without_the_keyword() -> None:
    nested = {"type": "array", "items": {"type": "object", "properties": {
        "x": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "y": {"type": "array", "items": {"type": "string"}}}}}
    valid = is_valid(nested)
    assert closed_at_repeat('[{"y": ["a", "a"], "x": ["a", "b"]}, {"x": ["z", "z"',
                            nested, valid) == '[{"y": ["a", "a"], "x": ["a", "b"]}, {"x": ["z"]}]'
    assert closed_at_repeat('[{"y": ["a", "a"', nested, valid) is None  # repeats allowed there


def test_the_runner_drops_repeats_instead_of_refusing_them() -> None:
    value, reason = AnswerSchema(LIST, None).parse('{"statements": ["a", "b", "a ", "b", "c"]}')
    assert reason is None and value == {"statements": ["a", "b", "c"]}
    plain = without_unique_items(LIST)
    assert AnswerSchema(plain, None).parse('{"statements": ["a", "a"]}') == (
        {"statements": ["a", "a"]}, None)
    assert without_repeats([["a", "a"]], {"type": "array", "items": LIST["properties"][
        "statements"]}) == [["a"]]


def test_the_keyword_is_stripped_at_schema_positions_only() -> None:
    schema = {"type": "object", "properties": {
        "uniqueItems": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}}
    assert without_unique_items(schema) == {"type": "object", "properties": {
        "uniqueItems": {"type": "array", "items": {"type": "string"}}}}
    assert declares_unique(LIST) and not declares_unique(without_unique_items(LIST))


def test_only_the_extraction_lists_declare_distinct_items() -> None:
    """Verdict lists (one verdict per statement, yes/no answers) repeat legitimately."""
    from shared.kit.steps import verdicts

    assert LIST["properties"]["statements"]["uniqueItems"] is True
    assert not declares_unique(verdicts.verdicts_schema(3))


@pytest.mark.parametrize("style", ["json_schema", "json_object"])
def test_openai_compatible_requests_carry_no_unique_items(style: str) -> None:
    with FaultProxy(None, default="synthetic") as proxy:
        judge = make_backend(judge_config(provider="openai-compatible", base_url=proxy.url,
                                          model="m", api_key="sk-test", response_format=style))
        collect(judge.structured, [ask("List the statements.")], LIST, 32)
        sent = proxy.seen[-1].body["response_format"]
    assert "uniqueItems" not in json.dumps(sent)
    schema = sent["json_schema"]["schema"] if style == "json_schema" else sent["schema"]
    assert schema == without_unique_items(LIST)
    if style == "json_schema":
        assert sent["json_schema"]["strict"] is True


def test_gemini_requests_carry_no_unique_items() -> None:
    with FaultProxy(None, default="synthetic") as upstream, \
            FakeGemini(upstream.url, "AIza-test") as gemini:
        judge = make_backend(judge_config(provider="gemini", base_url=gemini.url,
                                          api_key="AIza-test", model="gemini-test-flash"))
        got = collect(judge.structured, [ask("List the statements.")], LIST, 32)[0]
        config = gemini.seen[-1].body["generationConfig"]
    assert config["responseJsonSchema"] == without_unique_items(LIST)
    assert not got.constrained  # the keyword is not enforced there
