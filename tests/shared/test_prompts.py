"""shared.engine.prompts: every template's name, version and text are pinned, because the call
cache keys on them (through ``JudgeRequest.prompt_id`` and the rendered messages).

The digests were computed from main's prompts.py (``git show main:shared/engine/prompts.py``)
before the judge steps moved into shared.kit.steps: a change to a prompt's text must come with a
new version (and a new digest here), never silently."""

from __future__ import annotations

import hashlib

import pytest

from shared import prompts

# sha256 of "name@version\ntext", per template
PINNED = {
    "L3SCORE": "b2a8c172f57be72281f9511d83e721d70060852b56ccfd929bf80437d72c92ba",
    "STATEMENTS": "146ae75fd0575e2ca48dafee0bd65a3508b121c344c4d5c8268a0dbbe7d9f33c",
    "STATEMENTS_WITH_QUESTION": "181650fb35a075c3e958c29a6be195b2f22f0ef72d855621d7b4cc21522cd569",
    "OPINIONS": "ca2983d8e74d4ce2fa93a1cb42793785efebafabed060eb862f215030be6200c",
    "ANSWER_RELEVANCE": "c1aac8090a4838b411e16ae8de09b7dd6a4561dddf53b3b5f226f5ec7368d49b",
    "BIAS": "6fd2742937586d1ac6a486abe075ee92b65d244df73cea08bc942c84b454beb3",
    "TOXICITY": "1a17bec7cd1d5066cb74a9ad7b1bad2f7a44a3ad8c254bbfc8cbe1dea13fa17f",
    "CONTEXT_PRECISION": "4baf8e6ba15259fb4138b3a73fbe5f769f043a970819cffc64898c66da991169",
    "CONTEXT_RECALL": "089a719e000e56444bd4dc13a1cc88c700cbcedd4fa954da03a091eee83370b3",
    "CONTEXT_RELEVANCE": "d2c2c899e550cf800b15582ea4885c4da6ea0e322a7b407d9db3ae78637e7e8c",
    "FAITHFULNESS": "79263bc3745ae9697159ca11ced99e09233acbf363d92917ae42f66ccde74c83",
    "HALLUCINATION": "66a94f7a7305fb8a1ccfa280ceacb1d44246cf51570f8eafe2a420ebfc6ded41",
    "ANSWER_CORRECTNESS": "5de6f7268b42b56fe31f3de38368b94a28e707fdb8770a57bfae80ebc961f0fb",
    "ANSWER_CORRECTNESS_WITH_QUESTION":
        "327bd0bea23a62cb8e6553fe0fa51692b491f6712c848f902652a99054bfbeee",
    "SUMMARY_COHERENCE": "9ae9c18b57ec4c3d14487d93e97cf8435991ad083d854fa8370303821d3236ca",
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
    bumped = prompts.PromptTemplate(template.name, "3", template.text)
    assert len({digest(template), digest(changed), digest(bumped)}) == 3
