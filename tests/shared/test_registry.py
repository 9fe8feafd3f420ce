"""The registry is derived from the metric classes: columns, flags, headline keys and the one
example set, checked against the public interface they must keep (``INTERFACE`` below: each
metric's compute inputs and batch-file columns, as docs/BATCH.md and the cards give them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from shared.base.options import check_options
from shared.kit import registry
from shared.kit.about import About
from shared.kit.metric_base import ValidatedMetric

REPO = Path(__file__).resolve().parents[2]

# the public interface: the compute inputs of every metric and the singular batch-file columns
# (`expected` holds semantic_list_contains' phrases); optional inputs in the second mapping.
INTERFACE = {
    "l3score": ({"questions": "question", "predictions": "prediction",
                 "references": "reference"}, {}),
    "semantic_list_contains": ({"predictions": "prediction", "references": "expected"}, {}),
    "accuracy": ({"predictions": "prediction", "references": "reference"},
                 {"questions": "question"}),
    "answer_correctness": ({"predictions": "prediction", "references": "reference"},
                           {"questions": "question"}),
    "answer_relevance": ({"questions": "question", "predictions": "prediction"}, {}),
    "bias": ({"predictions": "prediction"}, {}),
    "toxicity": ({"predictions": "prediction"}, {}),
    "context_precision": ({"questions": "question", "contexts": "contexts",
                           "references": "reference"}, {}),
    "context_recall": ({"contexts": "contexts", "references": "reference"}, {}),
    "context_relevance": ({"questions": "question", "contexts": "contexts"}, {}),
    "faithfulness": ({"predictions": "prediction", "contexts": "contexts"}, {}),
    "hallucination": ({"predictions": "prediction", "contexts": "contexts"}, {}),
    "summary_coherence": ({"sources": "source", "predictions": "prediction"}, {}),
    "rouge": ({"predictions": "prediction", "references": "reference"}, {}),
    "bleu": ({"predictions": "prediction", "references": "reference"}, {}),
    "g_eval": ({"predictions": "prediction"},
               {"questions": "question", "references": "reference", "contexts": "contexts",
                "sources": "source"}),
    "pairwise": ({"predictions": "prediction", "baseline_predictions": "baseline_prediction"},
                 {"questions": "question", "references": "reference", "contexts": "contexts"}),
    "tool_call_correctness": ({"expected_tool_calls": "expected_tool_calls"},
                              {"tool_calls": "tool_calls", "messages": "messages",
                               "tools": "tools"}),
    "trajectory_match": ({"messages": "messages", "reference_messages": "reference_messages"},
                         {}),
    "task_completion": ({"messages": "messages"}, {"task": "task"}),
    "conversation_completeness": ({"messages": "messages"}, {}),
    "knowledge_retention": ({"messages": "messages"}, {}),
}
NON_JUDGE = {"semantic_list_contains", "accuracy", "rouge", "bleu", "tool_call_correctness",
             "trajectory_match"}
EMBEDS = {"semantic_list_contains", "answer_correctness"}


def test_every_metric_of_the_interface_is_registered_in_order() -> None:
    assert list(registry.METRICS) == list(INTERFACE) == list(registry.NAMES)
    assert registry.available() == list(INTERFACE)


def test_a_new_metric_folder_is_found_without_a_registry_line(tmp_path: Path) -> None:
    """``NAMES`` is ``ORDER`` and then every other ``metrics/<name>/<name>.py`` of the checkout;
    a folder without its script, a helper module and a missing folder add nothing."""
    for folder, script in (("zeta", "zeta"), ("alpha", "alpha"), ("notes", "helper")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{script}.py").write_text("", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    assert registry.metric_folders(tmp_path) == ["alpha", "zeta"]
    assert registry.metric_folders(tmp_path / "absent") == []
    assert set(registry.metric_folders()) == set(registry.NAMES)


@pytest.mark.parametrize("name", list(INTERFACE))
def test_spec_is_derived_from_the_class(name: str) -> None:
    spec = registry.METRICS[name]
    columns, optional = INTERFACE[name]
    assert list(spec.columns.items()) == list(columns.items())
    assert spec.optional_columns == optional
    assert spec.judge == (name not in NON_JUDGE)
    assert spec.embeds == (name in EMBEDS)
    cls = registry.metric_class(name)
    assert issubclass(cls, ValidatedMetric)
    assert spec == registry.spec_of(cls, name)
    assert spec.headline == cls.HEADLINE and spec.options == cls.OPTIONS


@pytest.mark.parametrize("name", list(INTERFACE))
def test_every_metric_describes_itself_through_about(name: str) -> None:
    """One way to describe a metric: ``ABOUT`` on the class, turned into ``MetricInfo`` by the
    base class; no script writes its own ``_info``."""
    cls = registry.metric_class(name)
    assert isinstance(cls.ABOUT, About)
    assert [k for k in cls.__mro__ if "_info" in vars(k)][0] is ValidatedMetric
    info = cls._info(cls.__new__(cls))
    assert (info.description, info.citation) == (cls.ABOUT.description, cls.ABOUT.citation)
    assert info.reference_urls == list(cls.ABOUT.reference_urls)
    assert set(info.features) == {i.name for i in cls.INPUTS if i.required}


def test_headlines_are_the_seed_keys() -> None:
    headline = {name: spec.headline for name, spec in registry.METRICS.items()}
    assert headline["l3score"] == ("L3Score",)
    assert headline["accuracy"] == ("accuracy",)
    assert headline["semantic_list_contains"] == ("score",)
    assert headline["rouge"] == ("rouge1", "rouge2", "rougeL", "rougeLsum")
    assert headline["pairwise"] == ("win_rate",)
    for name in INTERFACE.keys() - {"l3score", "semantic_list_contains", "rouge", "pairwise"}:
        assert headline[name] == (name,)


def test_directions_are_derived() -> None:
    assert set(registry.LOWER_IS_BETTER) == {"bias", "toxicity", "hallucination"}
    assert "bias" in registry.LOWER_IS_BETTER and "faithfulness" not in registry.LOWER_IS_BETTER
    assert "no_such_metric" not in registry.LOWER_IS_BETTER


def test_decision_thresholds_are_declared_on_the_classes() -> None:
    expected = dict.fromkeys(INTERFACE, 0.5) | {"summary_coherence": 3.0, "rouge": None,
                                                "bleu": None}
    assert dict(registry.DECISION_THRESHOLDS) == expected


@pytest.mark.parametrize("name", list(INTERFACE))
def test_the_one_example_is_valid_input(name: str) -> None:
    """The demo starts from this example and the card/Space tests score it: it must pass the
    metric's own input and option checks."""
    spec = registry.METRICS[name]
    cls = registry.metric_class(name)
    example = spec.example
    assert example is not None and set(example.inputs) >= set(spec.columns)
    lengths = set()
    for declared in cls.INPUTS:
        if declared.name in example.inputs:
            lengths.add(len(declared.validate(example.inputs[declared.name])))
    assert len(lengths) == 1
    check_options(name, spec.options, example.options)


def test_demo_rows_are_the_example_in_columns() -> None:
    rows, options = registry.EXAMPLES["bleu"]
    assert rows["prediction"][0] == "The cat sat on the mat."
    # a list value is JSON text in its table cell
    assert rows["reference"][1] == ('["The quick brown fox jumps over the lazy dog.", '
                                    '"A fast brown fox leaps over the dog."]')
    rows, options = registry.EXAMPLES["semantic_list_contains"]
    assert set(rows) == {"prediction", "expected"} and options == {"similarity_threshold": 0.6}


def test_importing_the_registry_and_the_cli_help_stay_cheap() -> None:
    """The registry imports the metric scripts (and so evaluate) only when a spec is asked for:
    not on import, not for ``--help``, not for a name check."""
    probe = (
        "import sys, shared.kit.registry as r; assert 'accuracy' in r.METRICS; "
        "assert list(r.METRICS)[0] == 'l3score'; "
        "assert 'evaluate' not in sys.modules, 'evaluate imported'; "
        "from shared.cli.main import build_parser; build_parser(); "
        "assert 'evaluate' not in sys.modules, 'evaluate imported by the CLI parser'"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr[-2000:]
