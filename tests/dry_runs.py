"""A judge metric's dry run on its declared example through the real runner, with every request
it is given recorded: the rounds it sends (tests/shared/test_rounds.py) and the request texts
(tests/shared/test_few_shot.py)."""

from __future__ import annotations

from typing import Any

from shared.engine.config import judge_config
from shared.engine.runner import Judge
from shared.kit.registry import METRICS, metric_class


class RecordingJudge(Judge):
    """The real runner, noting each call that carries requests (``calls``: the calls a batch
    run turns into one batch each, in this order) and each request (``seen``: its prompt id
    and its messages' text)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[str] = []
        self.seen: list[tuple[str, str]] = []

    def _note(self, operation: str, requests: Any) -> list[Any]:
        requests = list(requests)
        if requests:
            self.calls.append(operation)
        self.seen += [(r.prompt_id, "\n".join(text for _, text in r.messages))
                      for r in requests]
        return requests

    def structured(self, requests: Any, *args: Any, **kwargs: Any) -> Any:
        return super().structured(self._note("structured", requests), *args, **kwargs)

    def yes_no(self, requests: Any, *args: Any, **kwargs: Any) -> Any:
        return super().yes_no(self._note("yes_no", requests), *args, **kwargs)

    def label_probabilities(self, requests: Any, *args: Any, **kwargs: Any) -> Any:
        return super().label_probabilities(self._note("labels", requests), *args, **kwargs)

    def label_samples(self, requests: Any, *args: Any, **kwargs: Any) -> Any:
        return super().label_samples(self._note("label_samples", requests), *args, **kwargs)


def dry_run(name: str, **options: Any) -> RecordingJudge:
    """The judge of one dry run of ``name`` on its example (with ``options`` added), after
    ``score_samples`` (the metric's ``score``, its ``examples`` shown as ``compute`` shows
    them)."""
    metric = metric_class(name)()
    example = METRICS[name].example
    inputs = metric.validate_inputs(dict(example.inputs))
    optional = {i.name: inputs.get(i.name) for i in metric.INPUTS if not i.required}
    checked = metric.check_options({**example.options, **options})
    judge = RecordingJudge(judge_config(provider="openai", model="gpt-4o-mini",
                                        api_key="a dry run sends nothing", dry_run=True))
    metric.score_samples(judge, {**inputs, **optional}, checked)
    return judge
