"""Knowledge retention: the share of an assistant's messages that keep the facts the user gave
earlier in the conversation, after DeepEval's KnowledgeRetention."""

from __future__ import annotations

import json

from judge_metrics import About, Example, Input, Judge, JudgeMetric, SampleResult, citations, steps

_DESCRIPTION = """\
Knowledge retention is the proportion of the assistant's messages, among those that follow a
fact the user gave, that retain what the user said: they neither ask again for a fact the user
already gave nor contradict one. A judge first lists the facts of each user message (in the
user's words), then says for each later assistant message whether it forgets one of the facts
given before it. A conversation in which no assistant message follows a fact is unmeasured
(there was nothing to retain).
"""

_KWARGS_DESCRIPTION = """\
Args:
    messages (list of conversations): per sample, OpenAI chat messages (dicts with role,
        content, tool_calls, tool_call_id), or their JSON text.
Returns:
    knowledge_retention (float or None): mean over the measured samples.
    scores, details, unmeasured, usage, Cost: per-sample scores, the facts and the verdicts on
        the assistant's messages with the judge's reasons, samples that could not be judged,
        call counts and cost.
"""

_NAME = "My name is Ana and I am vegetarian."
_ASK = "Suggest a dinner for tonight."


class KnowledgeRetention(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.DEEPEVAL,
                  ("https://deepeval.com/docs/metrics-knowledge-retention",))
    INPUTS = (Input("messages", kind="messages"),)
    HEADLINE = ("knowledge_retention",)
    ROUNDS = ("facts", "retention verdicts")
    SCORING_PROMPTS = ("knowledge_retention",)
    PROMPTS = (steps.USER_FACTS, steps.KNOWLEDGE_RETENTION)
    EXAMPLE = Example({"messages": [
        [{"role": "user", "content": _NAME},
         {"role": "assistant", "content": "Nice to meet you, Ana!"},
         {"role": "user", "content": _ASK},
         {"role": "assistant", "content": "A mushroom risotto: it is vegetarian."}],
        [{"role": "user", "content": _NAME},
         {"role": "assistant", "content": "Nice to meet you!"},
         {"role": "user", "content": _ASK},
         {"role": "assistant", "content": "What is your name? A steak would be great."}],
    ]})

    def score(self, judge: Judge, messages: list[str]) -> list[SampleResult]:
        conversations = [json.loads(m) for m in messages]
        results = []
        for retention in steps.retention_verdicts(judge, conversations):
            share = retention.share()  # the share of judged assistant messages that retain
            results.append(SampleResult.first_failure(retention.failure()) or (
                SampleResult.unmeasured("nothing to retain: no assistant message follows a fact "
                                        "the user gave", **retention.details())
                if share is None else SampleResult.measured(share, **retention.details())))
        return results
