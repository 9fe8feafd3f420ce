"""Task completion: whether an agent did the task it was given, judged from its whole trajectory
(its messages, the tools it called and their results), after DeepEval's TaskCompletion."""

from __future__ import annotations

import json

from judge_metrics import About, Example, Input, Judge, JudgeMetric, SampleResult, citations, steps

_DESCRIPTION = """\
Task completion is the judge's probability that a conversation did the task: P(Yes) / (P(Yes) +
P(No)) of its one-word answer to "was the task completed?", asked with the task and the whole
transcript, tool calls and tool results included. The task is the `task` input, else the first
user message. An assistant that says it is done after a tool error has not done it. A
conversation in which the assistant neither says nor does anything scores 0.0 without a request.
"""

_KWARGS_DESCRIPTION = """\
Args:
    messages (list of conversations): per sample, OpenAI chat messages (dicts with role,
        content, tool_calls, tool_call_id), or their JSON text.
    task (list of str, optional): per sample, the task; blank or absent: the first user message.
Returns:
    task_completion (float or None): mean over the measured samples.
    scores, details, unmeasured, usage, Cost: per-sample scores, the task and the judge's
        Yes/No probabilities, samples that could not be judged, call counts and cost.
"""


def _booking(result: str, reply: str) -> list[dict]:
    call = {"id": "call_1", "type": "function", "function": {
        "name": "book_table",
        "arguments": '{"restaurant": "Luigi\'s", "people": 2, "time": "20:00"}'}}
    return [{"role": "user", "content": "Book a table for two at Luigi's tonight at 8."},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": result},
            {"role": "assistant", "content": reply}]


class TaskCompletion(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.DEEPEVAL,
                  ("https://deepeval.com/docs/metrics-task-completion",))
    INPUTS = (Input("messages", kind="messages"),
              Input("task", required=False, allow_empty=True))
    HEADLINE = ("task_completion",)
    ROUNDS = ("task completion",)
    SCORING_PROMPTS = ("task_completion",)
    PROMPTS = (steps.prompts.TASK_COMPLETION,)
    PREFERS = (("logprobs", True),)  # else the written label (score_method "sampled")
    EXAMPLE = Example({"messages": [
        _booking('{"status": "confirmed", "reference": "R-118"}',
                 "Booked: a table for two at Luigi's at 8 pm, reference R-118."),
        _booking('{"error": "no table free at 20:00"}', "Done! Your table is booked."),
    ]})

    def score(self, judge: Judge, messages: list[str], task: list[str] | None = None
              ) -> list[SampleResult]:
        conversations = [json.loads(m) for m in messages]
        tasks = [(task[i] if task is not None and task[i].strip() else None)
                 or next(iter(steps.said(c, "user")), None) for i, c in enumerate(conversations)]
        results: list[SampleResult | None] = [None] * len(conversations)
        for i, conversation in enumerate(conversations):
            if tasks[i] is None:
                results[i] = SampleResult.unmeasured("no task: no task given and no user message")
            elif not steps.has_assistant_turn(conversation):
                results[i] = SampleResult.measured(0.0, task=tasks[i], note="no assistant turn")
        todo = [i for i, result in enumerate(results) if result is None]
        readings = steps.task_verdicts(judge, [tasks[i] for i in todo],
                                       [conversations[i] for i in todo])
        for i, reading in zip(todo, readings, strict=True):  # P(Yes), renormalised over Yes/No
            results[i] = SampleResult.first_failure(reading) or SampleResult.measured(
                reading.value.probabilities["Yes"], task=tasks[i],
                probabilities=reading.value.probabilities, score_method=reading.value.method)
        return results
