"""The local judge's decoders end a ``uniqueItems`` list at its first repeated item, with the
real embedded SmolLM2: a prompt on which it loops (the same statement until ``maxItems``)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from backend_cases import ask, collect

from shared.engine.backends.local import LocalBackend
from shared.engine.distinct import without_unique_items
from shared.kit.steps.extraction import clean_items, list_schema

pytestmark = pytest.mark.usefixtures("one_torch_thread")

DISTINCT = list_schema("statements", max_items=5)
PROMPT = "List the statements of this text as JSON with a 'statements' list.\nText: {}"
LOOPS, DOES_NOT = "The answer is 42.", "Paris is the capital of France."


def answers(backend: LocalBackend, schema: dict) -> list:
    got = collect(backend.structured, [ask(PROMPT.format(LOOPS)), ask(PROMPT.format(DOES_NOT))],
                  schema, 200)
    assert all(outcome.ok for outcome in got.values())
    return [(got[i].value, got[i].usage.completion_tokens) for i in range(2)]


def test_a_looping_list_ends_at_its_first_repeat_as_the_reference_ends_it() -> None:
    greedy, reference = LocalBackend(), LocalBackend(decoder="generate")
    cut = answers(greedy, DISTINCT)
    assert cut == answers(reference, DISTINCT)  # token for token, as before
    uncut = answers(greedy, without_unique_items(DISTINCT))
    looped = json.loads(uncut[0][0])["statements"]
    assert len(looped) == 5 and len(set(looped)) == 1  # the judge loops without the stop
    for (text, tokens), (full, full_tokens) in zip(cut, uncut, strict=True):
        jsonschema.validate(json.loads(text), DISTINCT)
        assert clean_items(json.loads(text)["statements"]) == clean_items(
            json.loads(full)["statements"])
        assert tokens <= full_tokens
    assert cut[0][1] < uncut[0][1] / 2  # the loop's tokens are not decoded
    assert cut[1] == uncut[1]  # a list without a repeat is untouched
