"""A judge's structured answer: the JSON in its text, and the checks of the request's schema.

The runner (:meth:`shared.engine.runner.Judge.structured`) turns each answer into a value or a
reason with :meth:`AnswerSchema.parse`; a reason is what the repair request tells the judge
and, when the repair fails too, what the sample's ``Outcome.error`` says ("invalid judge
answer: ...").
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..base.text import short_reason
from .distinct import declares_unique, without_repeats


class Unrepairable(str):
    """A check's reason that a repair request cannot address: the answer is refused without
    one. An empty extraction is one (:func:`shared.kit.steps.grounding.extraction_check`): the
    repair could only insist, and it never got an accepted list from the embedded judge
    (docs/COST.md, "Cuts")."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_MAX_STARTS = 64


def extract_json(text: str) -> Any:
    """The JSON in a judge's answer: the whole text, else a ```-fenced block, else the first
    object or array that parses. NaN and Infinity are refused. Raises ``ValueError``."""
    stripped = text.strip()
    try:
        return _DECODER.decode(stripped)
    except ValueError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return _DECODER.decode(block.strip())
        except ValueError:
            pass
    starts = [i for i, char in enumerate(stripped) if char in "{["][:_MAX_STARTS]
    for start in starts:
        try:
            return _DECODER.raw_decode(stripped, start)[0]
        except ValueError:
            pass
    raise ValueError("no JSON object or array in the answer" if not starts else
                     "the answer is not valid JSON")


def schema_text(schema: dict[str, Any]) -> str:
    """The canonical text of ``schema`` (sorted keys, no spaces): what the repair request shows
    and what tells two schemas apart."""
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


class AnswerSchema:
    """A request's JSON schema with its validator, checked once."""

    def __init__(self, schema: dict[str, Any], index: int | None) -> None:
        import jsonschema

        where = "schemas" if index is None else f"schemas[{index}]"
        if not isinstance(schema, dict):
            raise TypeError(f"{where} must be a JSON-schema dict, got {type(schema).__name__}")
        cls = jsonschema.validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except jsonschema.exceptions.SchemaError as exc:
            raise ValueError(
                f"{where} is not a valid JSON schema: {short_reason(exc.message)}") from exc
        self.schema = schema
        self.text = schema_text(schema)
        self.distinct = declares_unique(schema)
        self._validator = cls(schema)
        self._best_match = jsonschema.exceptions.best_match

    def parse(self, answer: Any) -> tuple[Any, str | None]:
        """``(value, None)`` for an answer that is valid JSON for the schema, else
        ``(None, reason)``. A ``uniqueItems`` array's repeated items are dropped, not refused
        (:func:`shared.engine.distinct.without_repeats`): most providers do not enforce the
        keyword, and the steps that declare it drop repeats anyway."""
        if isinstance(answer, str):
            try:
                value = extract_json(answer)
            except ValueError as exc:
                return None, str(exc)
        elif isinstance(answer, (dict, list)):
            value = answer
        else:
            return None, f"expected JSON text, got {type(answer).__name__}"
        if self.distinct:
            value = without_repeats(value, self.schema)
        error = self._best_match(self._validator.iter_errors(value))
        if error is None:
            return value, None
        path = "/".join(str(part) for part in error.absolute_path)
        return None, short_reason(f"{error.message}" + (f" (at /{path})" if path else ""))


def answer_schemas(schemas: Any, count: int) -> list[AnswerSchema]:
    """One :class:`AnswerSchema` per request from ``Judge.structured``'s ``schemas`` argument
    (one dict for all, or a sequence of ``count`` dicts; equal schemas share one validator).
    Raises ``TypeError``/``ValueError`` naming the argument."""
    if isinstance(schemas, dict):
        shared_schema = AnswerSchema(schemas, None)
        return [shared_schema] * count
    if isinstance(schemas, (str, bytes)) or not isinstance(schemas, Sequence):
        raise TypeError("schemas must be a JSON-schema dict or a list of them, one per request")
    if len(schemas) != count:
        raise ValueError(f"schemas has {len(schemas)} entries for {count} requests")
    by_text: dict[str, AnswerSchema] = {}
    checked = []
    for index, schema in enumerate(schemas):
        if not isinstance(schema, dict):
            raise TypeError(
                f"schemas[{index}] must be a JSON-schema dict, got {type(schema).__name__}"
            )
        text = schema_text(schema)
        if text not in by_text:
            by_text[text] = AnswerSchema(schema, index)
        checked.append(by_text[text])
    return checked
