"""A LightEval custom task scored by one of our metrics (docs/INTEGRATIONS.md, "LightEval").

LightEval's inspect_ai backend (`lighteval eval`) takes an inspect scorer in the task config, so
any of our metrics scores a LightEval task: here accuracy (with fuzzy matching) on a three-row
capitals set. Run it with LightEval's custom-task option, e.g.

    lighteval eval MODEL "capitals" --custom-tasks examples/lighteval_task.py

The records become inspect samples (``record_to_sample``) and the scorer is the same
``inspect_scorer`` an ``inspect eval`` uses; tests/shared/test_integrations_scorers.py runs this
file's samples and scorer through a real inspect eval. LightEval itself is imported only when
LightEval loads the task table (LightEval 0.13.0 pins nltk 3.9.1, ours is 3.10.4: it does not
install beside this project's pins)."""

from __future__ import annotations

from typing import Any

from inspect_ai.dataset import Sample

from shared.integrations import inspect_scorer

RECORDS = [
    {"question": "What is the capital of France?", "answer": "Paris"},
    {"question": "What is the capital of Germany?", "answer": "Berlin"},
    {"question": "What is the largest planet?", "answer": "Jupiter"},
]

# the model's completion -> predictions, the target -> references, the input -> questions
SCORER = inspect_scorer("accuracy", fuzzy_match=True)


def record_to_sample(record: dict[str, Any]) -> Sample:
    return Sample(input=record["question"], target=record["answer"])


def prompt(line: dict[str, Any], task_name: str = "") -> Any:
    """LightEval's prompt function (its non-inspect backends read it)."""
    from lighteval.tasks.requests import Doc

    return Doc(task_name=task_name, query=line["question"], choices=[line["answer"]],
               gold_index=0)


def task_table() -> list[Any]:
    from inspect_ai.solver import generate
    from lighteval.tasks.lighteval_task import LightevalTaskConfig

    return [LightevalTaskConfig(
        name="capitals", prompt_function=prompt, hf_repo="", hf_subset="default",
        metrics=[], sample_fields=record_to_sample, solver=[generate()], scorer=SCORER,
        evaluation_splits=["test"])]


def __getattr__(name: str) -> Any:
    """``TASKS_TABLE``, what LightEval reads, is built when LightEval asks for it."""
    if name == "TASKS_TABLE":
        return task_table()
    raise AttributeError(name)
