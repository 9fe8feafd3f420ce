"""shared.engine.answers: the JSON in a judge's text and the checks of a request's schema."""

from __future__ import annotations

import json

import jsonschema
import pytest

from shared.base.text import MAX_REASON_CHARS
from shared.engine.answers import AnswerSchema, answer_schemas, extract_json, schema_text

VERDICT = {
    "type": "object",
    "properties": {"verdicts": {"type": "array", "items": {"enum": ["yes", "no"]},
                                "minItems": 2, "maxItems": 2}},
    "required": ["verdicts"],
}


def test_extract_json_is_tolerant_but_strict_about_numbers():
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('Sure!\n```json\n{"a": [1, 2]}\n```\nDone.') == {"a": [1, 2]}
    assert extract_json('The answer is {"a": "}"} and {"b": 2}') == {"a": "}"}
    assert extract_json("noise [1, 2] {") == [1, 2]
    assert extract_json('"yes"') == "yes"
    for bad in ("no json here", '{"a": NaN}', '{"a": Infinity}', "{broken"):
        with pytest.raises(ValueError):
            extract_json(bad)


def test_extract_json_says_whether_anything_looked_like_json():
    with pytest.raises(ValueError, match="no JSON object or array"):
        extract_json("plain words")
    with pytest.raises(ValueError, match="not valid JSON"):
        extract_json('{"a": ')


def test_parse_accepts_valid_answers_as_text_or_objects():
    schema = AnswerSchema(VERDICT, None)
    value = {"verdicts": ["yes", "no"]}
    assert schema.parse(json.dumps(value)) == (value, None)
    assert schema.parse(f"Here:\n```json\n{json.dumps(value)}\n```") == (value, None)
    assert schema.parse(value) == (value, None)  # a backend may hand over the parsed object


def test_parse_gives_jsonschemas_reason_with_the_path():
    schema = AnswerSchema(VERDICT, None)
    answer = {"verdicts": ["yes", "maybe"]}
    expected = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(VERDICT).iter_errors(answer))
    value, reason = schema.parse(json.dumps(answer))
    assert value is None
    assert reason == f"{expected.message} (at /verdicts/1)"
    assert schema.parse("not json") == (None, "no JSON object or array in the answer")
    assert schema.parse(42) == (None, "expected JSON text, got int")


def test_parse_shortens_long_reasons_to_one_line():
    schema = AnswerSchema({"type": "string", "maxLength": 3}, None)
    value, reason = schema.parse(json.dumps("word\n" * 200))
    assert value is None and "\n" not in reason
    assert len(reason) == MAX_REASON_CHARS and reason.endswith("...")


def test_answer_schemas_one_for_all_or_one_per_request():
    shared_schema = answer_schemas(VERDICT, 3)
    assert len(shared_schema) == 3 and len({id(s) for s in shared_schema}) == 1
    other = {"type": "object"}
    per_request = answer_schemas([VERDICT, other, dict(VERDICT)], 3)
    assert [s.schema for s in per_request] == [VERDICT, other, VERDICT]
    assert per_request[0] is per_request[2]  # equal schemas share one validator
    assert answer_schemas([], 0) == []


def test_answer_schemas_name_the_bad_argument():
    with pytest.raises(TypeError, match="list of them"):
        answer_schemas("{}", 1)
    with pytest.raises(ValueError, match="schemas has 1 entries for 2 requests"):
        answer_schemas([VERDICT], 2)
    with pytest.raises(TypeError, match=r"schemas\[1\] must be a JSON-schema dict, got list"):
        answer_schemas([VERDICT, []], 2)
    with pytest.raises(ValueError, match=r"schemas\[0\] is not a valid JSON schema"):
        answer_schemas([{"type": "no-such-type"}], 1)
    with pytest.raises(ValueError, match=r"^schemas is not a valid JSON schema"):
        answer_schemas({"type": 5}, 2)


def test_schema_text_is_canonical():
    reordered = dict(reversed(list(VERDICT.items())))
    assert schema_text(reordered) == schema_text(VERDICT)
    assert json.loads(schema_text(VERDICT)) == VERDICT
    assert " " not in schema_text({"a": [1, 2], "b": {"c": "d"}})
