"""What the two backend test modules (local transformers, OpenAI-compatible server) ask the same
model: Yes/No prompts, the structured-answer schemas, and a collector of ``on_result`` calls."""

from __future__ import annotations

from typing import Any

from shared.base.types import JudgeRequest, Outcome

YES_NO = "Answer in one word - Yes or No."

STATEMENTS = {
    "type": "object",
    "properties": {
        "statements": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 40},
            "minItems": 1,
            "maxItems": 3,
        }
    },
    "required": ["statements"],
    "additionalProperties": False,
}
VERDICTS = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {"type": "string", "enum": ["yes", "no"]},
            "minItems": 3,
            "maxItems": 3,
        }
    },
    "required": ["verdicts"],
    "additionalProperties": False,
}


def ask(text: str, prompt_id: str = "test@1") -> JudgeRequest:
    return JudgeRequest(messages=(("user", text),), prompt_id=prompt_id)


def collect(call: Any, *args: object) -> dict[int, Outcome]:
    """``call(*args, on_result)``; every reported outcome by request index (each index once)."""
    results: dict[int, Outcome] = {}

    def on_result(index: int, outcome: Outcome) -> None:
        assert index not in results, f"index {index} reported twice"
        results[index] = outcome

    call(*args, on_result)
    return results
