"""Conversation completeness: the share of the user's requests in a conversation that the
assistant satisfied, after DeepEval's ConversationCompleteness."""

from __future__ import annotations

import json

from judge_metrics import About, Example, Input, Judge, JudgeMetric, SampleResult, citations, steps

_DESCRIPTION = """\
Conversation completeness is the proportion of the user's requests in a conversation that the
assistant satisfied. A judge first lists the distinct requests of the user's messages, in the
user's words, then says for each whether the conversation satisfies it (a refusal, a question
back, a promise or a failed tool call does not). A conversation with no user message is
unmeasured (nothing was asked); one in which the assistant neither says nor does anything
scores 0.0 without a request.
"""

_KWARGS_DESCRIPTION = """\
Args:
    messages (list of conversations): per sample, OpenAI chat messages (dicts with role,
        content, tool_calls, tool_call_id), or their JSON text.
Returns:
    conversation_completeness (float or None): mean over the measured samples.
    scores, details, unmeasured, usage, Cost: per-sample scores, the requests and verdicts with
        the judge's reasons, samples that could not be judged, call counts and cost.
"""


class ConversationCompleteness(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.DEEPEVAL,
                  ("https://deepeval.com/docs/metrics-conversation-completeness",))
    INPUTS = (Input("messages", kind="messages"),)
    HEADLINE = ("conversation_completeness",)
    ROUNDS = ("intentions", "completeness verdicts")
    SCORING_PROMPTS = ("conversation_completeness",)
    PROMPTS = (steps.INTENTIONS, steps.CONVERSATION_COMPLETENESS)
    EXAMPLE = Example({"messages": [
        [{"role": "user", "content": "What is the capital of France, and how many people live "
                                     "there?"},
         {"role": "assistant", "content": "The capital of France is Paris; about 2.1 million "
                                          "people live there."}],
        [{"role": "user", "content": "Translate 'good morning' into Spanish and into German."},
         {"role": "assistant", "content": "In Spanish: 'buenos días'."}],
    ]})

    def score(self, judge: Judge, messages: list[str]) -> list[SampleResult]:
        conversations = [json.loads(m) for m in messages]
        results: list[SampleResult | None] = [None] * len(conversations)
        for i, conversation in enumerate(conversations):
            if not steps.said(conversation, "user"):
                results[i] = SampleResult.unmeasured("no user message: nothing was asked")
            elif not steps.has_assistant_turn(conversation):
                results[i] = SampleResult.measured(0.0, intentions=[], verdicts=[],
                                                   note="no assistant turn")
        todo = [i for i, result in enumerate(results) if result is None]
        judged = steps.intention_verdicts(judge, [conversations[i] for i in todo])
        for i, chain in zip(todo, judged, strict=True):  # the share of satisfied requests
            results[i] = chain.failure() or chain.scored(chain.yes_share())
        return results
