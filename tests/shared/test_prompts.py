"""shared.engine.prompts: every template's name, version and text are pinned, because the call
cache keys on them (through ``JudgeRequest.prompt_id`` and the rendered messages).

The digests were first computed before the judge steps moved into shared.kit.steps, and pinned
again with each version bump since (the shorter fence note: every fenced template): a change to
a prompt's text must come with a new version (and a new digest here), never silently."""

from __future__ import annotations

import hashlib

import pytest

from shared import prompts

# sha256 of "name@version\ntext", per template
PINNED = {
    "L3SCORE": "b2a8c172f57be72281f9511d83e721d70060852b56ccfd929bf80437d72c92ba",
    "STATEMENTS": "da694d43dc7e07da182a8d6346d464a1c93e54044e106d09f37c494b61c7b092",
    "STATEMENTS_WITH_QUESTION": "f5525e265663947860d9035a9c3efd8b66aefa3925763c0709da14297c24e47a",
    "OPINIONS": "6c6ea7c350c40590d2018faf09ec569b46b49a62d7f4c5c330e0f94966e0a46e",
    "ANSWER_RELEVANCE": "f52e308e8962cb12b36b4ae83ebee3b04070ef9ed210f07aa924f9310a8d645d",
    "BIAS": "400ff475ce71e23db89471f9abde1cf702112956ce64d95588d6044f103bf4ff",
    "TOXICITY": "9e9655e14d6b86a501327198e42dde20c5299a3ccd18176dfe351a5e9d69a88f",
    "CONTEXT_PRECISION": "a31e4778f62897b80ba6ae910ecf959bd80bb6588e971317c0a5fcaec5b3ab48",
    "CONTEXT_RECALL": "b9f738dbb8c7a3291d688c1dcbbdae3db789c2acad32af5d3850b645c140f0ae",
    "CONTEXT_RELEVANCE": "ec3230b3f09b4858dfcb3e00d86fd69e54729d92aa8fd8d83106dc3cbfcc6021",
    "FAITHFULNESS": "31896970660e52d515dfd5e01d3bf4173b998fa0a0c87e6b15cefaa2be87969e",
    "HALLUCINATION": "92f675995179e6126cc483c867436b184ffa7dc28e1f1a49aa81e1672ce5b886",
    "ANSWER_CORRECTNESS": "b7f326b494b10abbf33309b8d6d430eefc2f5d950784fab57f0e2cc1d03261c7",
    "ANSWER_CORRECTNESS_WITH_QUESTION":
        "19c1f960a9d6b29930ede18f03d2976b92f493b6dcb404b71b917c3d491c987f",
    "SUMMARY_COHERENCE": "aa25490efb2da2340720d13409a28d9e7fb86f8aa7223079de8b8941a376dd6f",
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
