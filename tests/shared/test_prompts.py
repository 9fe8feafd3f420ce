"""shared.kit.steps.prompts: every template's name, version and text are pinned, because the call
cache keys on them (through ``JudgeRequest.prompt_id`` and the rendered messages).

The digests were first computed before the judge steps moved into shared.kit.steps, and pinned
again with each version bump since (the shorter fence note: every fenced template; the answer
format shown as a JSON schema: the list and verdict templates): a change to
a prompt's text must come with a new version (and a new digest here), never silently."""

from __future__ import annotations

import hashlib

import pytest

from shared import prompts

# sha256 of "name@version\ntext", per template
PINNED = {
    "L3SCORE": "b2a8c172f57be72281f9511d83e721d70060852b56ccfd929bf80437d72c92ba",
    "STATEMENTS": "f0b2f5aefe3dc9156ee63e8590023064b675a5117f0b1f93330f6a5e8fdb0c52",
    "STATEMENTS_WITH_QUESTION": "b71a50f6e65acf50b71bfca65cedfe27747d68242fa1b381bb95986a32792ad8",
    "OPINIONS": "9fef1b34a2229746cbf2422a0c06f338023594a3a854f8687c7a176c2ca4f426",
    "ANSWER_RELEVANCE": "c8a82ae669376eee3b5715cafb760f9cdc86faeb6a0a4e8efcbbef85859016c0",
    "BIAS": "94c85de1aa29b1f6256e1effada606cd73f18dd6e69cca94343b51309f85b0dd",
    "TOXICITY": "4b5cb13dd6249ae65b7484a1578fd4e74cce11c942182318f9901a79437b4a9c",
    "CONTEXT_PRECISION": "0a187bc22339618877d9e5d0cef31660691748b3030e2562d44937af8683b02e",
    "CONTEXT_RECALL": "c7a5c91e6ad9cc729573bf9cdcadbe8f0d783120f075003e90941d0b1907baf9",
    "CONTEXT_RELEVANCE": "c3591b21b36a87b296df5fbbe0047be9bec9ce10f252c9c1938acbd9a875a0a7",
    "FAITHFULNESS": "25803a411a0c852063423809527ca0bcd0190756d881bac98b627c362325201a",
    "HALLUCINATION": "f66401933d9c916da7c84cdb856c036dff43d68d93bffe5afdcfe547be67fa43",
    "ANSWER_CORRECTNESS": "2ab79ada75fc429d5c81a46e1778ae2a2793ed88cfa3ed48e8f9718233c4a0b9",
    "ANSWER_CORRECTNESS_WITH_QUESTION":
        "1e4afd2c31f870a959a1bd7de34090ea6187179f013173666ed88bdd699124cf",
    "SUMMARY_COHERENCE": "aa25490efb2da2340720d13409a28d9e7fb86f8aa7223079de8b8941a376dd6f",
    "INTENTIONS": "b16e216aeb0389b5415584b476240c0c5f451beade885dfdda5d0d4c4ce421c2",
    "USER_FACTS": "c19390401439317808e23279c973bbd6b8c14cdca9109abb7e26902584d5b89d",
    "CONVERSATION_COMPLETENESS":
        "5e48d7ee23fde2875177a0a0a941a8f32f7cbb42b9efd15fb210c43fe29c0e2f",
    "KNOWLEDGE_RETENTION": "0ce2d1188e1270748764f890693d4668c328d6fa11aa97731199d01b1f40bbc1",
    "TASK_COMPLETION": "3eee9bb4b887e8a17337459f4b206a45452b8d1b7535e976e3e80bfc125459b7",
}


def digest(template: prompts.PromptTemplate) -> str:
    return hashlib.sha256(f"{template.prompt_id}\n{template.text}".encode()).hexdigest()


def test_every_template_is_pinned() -> None:
    templates = {name for name, value in vars(prompts).items()
                 if isinstance(value, prompts.PromptTemplate)}
    assert templates == set(PINNED)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_text_and_version_are_unchanged(name: str) -> None:
    assert digest(getattr(prompts, name)) == PINNED[name], (
        f"prompts.{name} changed: bump its version (cached answers of the old text must not be "
        "reused) and pin the new digest")


def test_the_digest_sees_a_one_character_change() -> None:
    template = prompts.STATEMENTS
    changed = prompts.PromptTemplate(template.name, template.version, template.text + " ")
    bumped = prompts.PromptTemplate(template.name, template.version + ".1", template.text)
    assert len({digest(template), digest(changed), digest(bumped)}) == 3
