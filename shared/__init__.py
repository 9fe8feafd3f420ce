"""judge-metrics: Hugging Face ``evaluate`` metrics for LLM, RAG and agent outputs, and the helper
package every metric uses (judge prompts, backends, log-prob scoring, runner, embeddings, text
utilities, statistics, CLI, integrations).

Installed, this package is ``judge_metrics``: ``judge_metrics.load("accuracy")`` returns a metric,
``from judge_metrics import assert_metric`` gates a pytest suite, ``judge-metrics score ...`` is
the CLI. Its source is the checkout's ``shared/`` folder (docs/INSTALL.md says how the two map);
inside the checkout ``import shared`` names the same modules (see the end of this file).

Names are imported lazily, so ``import judge_metrics`` stays cheap (no torch, no gradio) until a
name that needs them is used. Inside this package every import is relative, so the package can be
vendored into a standalone Space under another name.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from .base.version import VERSION as __version__  # noqa: F401 - the package's version

# OpenMP threads that spin while they wait make torch collapse (5-10x slower) as soon as another
# process wants a core, e.g. a judge server beside the local judge on a 2-core machine. Passive
# waiting costs nothing measurable when the machine is idle. Takes effect only when set before
# torch loads, and never overrides a user's own setting.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# public name -> "module:name" (a name the module defines) or "module" (the module itself)
_EXPORTS: dict[str, str] = {
    # inputs and metric base
    "Input": "kit.metric_base:Input",
    "ValidatedMetric": "kit.metric_base:ValidatedMetric",
    "Example": "kit.metric_base:Example",
    "rag_example": "kit.metric_base:rag_example",
    "Option": "base.options:Option",
    "EMBEDDING_OPTIONS": "base.options:EMBEDDING_OPTIONS",
    "options": "base.options",
    "validation": "base.validation",
    "InputError": "base.validation:InputError",
    "InputTypeError": "base.validation:InputTypeError",
    "UserInputError": "base.errors:UserInputError",
    # per-sample results and the compute() output built from them
    "SampleResult": "kit.results:SampleResult",
    "MetricOutput": "kit.results:MetricOutput",
    "build_output": "kit.results:build_output",
    "with_results": "kit.results:with_results",
    "results_of": "kit.results:results_of",
    "mean_measured": "kit.results:mean_measured",
    # judge configuration, runner, prompts
    "JudgeConfig": "engine.config:JudgeConfig",
    "judge_config": "engine.config:judge_config",
    "JUDGE_OPTION_NAMES": "engine.config:JUDGE_OPTION_NAMES",
    "JUDGE_OPTIONS": "engine.config:JUDGE_OPTIONS",
    "Judge": "engine.runner:Judge",
    "get_judge": "engine.runner:get_judge",
    "JudgeMetric": "kit.judge_metric:JudgeMetric",
    "OpinionShare": "kit.opinion_share:OpinionShare",
    "About": "kit.about:About",
    "first_failure": "kit.judge_metric:first_failure",
    "judge_fault": "kit.judge_metric:judge_fault",
    "split_judge_options": "kit.judge_metric:split_judge_options",
    "citations": "kit.citations",
    "JudgeRequest": "base.types:JudgeRequest",
    "Outcome": "base.types:Outcome",
    "YesNoAnswer": "base.types:YesNoAnswer",
    "LabelAnswer": "base.types:LabelAnswer",
    "prompts": "kit.steps.prompts",
    "fence": "base.text:fence",
    # scoring helpers, public: l3score's rule and average precision, for users to reuse
    "l3score_from_top_logprobs": "engine.logprobs:l3score_from_top_logprobs",
    "exact_yes_probability": "engine.logprobs:exact_yes_probability",
    "l3score_breakdown": "engine.logprobs:l3score_breakdown",
    "average_precision": "kit.scoring:average_precision",
    # LLM-guided text-generation metrics: arithmetic and shared judge steps
    "scoring": "kit.scoring",
    "steps": "kit.steps",
    "user_criteria": "kit.steps.criteria",
    "criteria_judge": "kit.steps.criteria",  # the earlier name of user_criteria, kept for callers
    "estimate_cost": "engine.pricing:estimate_cost",
    # embeddings, text, stats
    "embed_texts": "kit.embeddings:embed_texts",
    "embed_windows": "kit.embeddings:embed_windows",
    "pooled": "kit.embeddings:pooled",
    "load_embedding_model": "kit.embeddings:load_embedding_model",
    "text": "base.text",
    # the algorithms that each serve one metric (kit/algorithms/), under their module names
    "qa_match": "kit.algorithms.qa_match",
    "lcs": "kit.algorithms.lcs",
    "bleu": "kit.algorithms.bleu",
    "stats": "kit.stats",
    "defaults": "base.defaults",
    # conversations in OpenAI's chat format, and converters from inspect_ai, RAGAS, DeepEval
    "conversations": "kit.conversations",
    "check_messages": "kit.conversations:check_messages",
    "from_inspect": "kit.conversations:from_inspect",
    "from_ragas": "kit.conversations:from_ragas",
    "from_deepeval": "kit.conversations:from_deepeval",
    "calls_from_deepeval": "kit.conversations:calls_from_deepeval",
    "calls_from_ragas": "kit.conversations:calls_from_ragas",
    # tool calls against expected calls, equal to BFCL's AST checker (tool_call_correctness)
    "tool_calls": "kit.algorithms.tool_calls",
    # agreement of a metric with human labels (`judge-metrics agree`)
    "agreement": "analysis.agreement",
    # the corrected mean label from a few labels and a metric's scores (docs/CALIBRATION.md)
    "prediction_powered_mean": "analysis.ppi:prediction_powered_mean",
    "align": "analysis.alignment_profile:align",
    # reliability over repeated trials per task (docs/CONVERSATIONS.md)
    "pass_hat_k": "analysis.pass_k:pass_hat_k",
    "pass_at_k": "analysis.pass_k:pass_at_k",
    "align_scores": "analysis.alignment:align_scores",
    # batch scoring of a datasets.Dataset
    "score_dataset": "runs.batch:score_dataset",
    "BatchSummary": "runs.batch:BatchSummary",
    # paired comparison of two runs, HTML reports
    "compare": "analysis.comparison:compare",
    "CompareReport": "analysis.comparison:CompareReport",
    # gates for CI (docs/GATES.md)
    "assert_gates": "analysis.gates:assert_gates",
    # pytest assertions with honest verdicts (docs/INTEGRATIONS.md)
    "assert_metric": "integrations.assertions:assert_metric",
    "Verdict": "integrations.assertions:Verdict",
    "evaluate_gates": "analysis.gates:evaluate_gates",
    # judge cards: a judge certified on the user's rows (docs/CERTIFY.md)
    "certify": "certification.run:certify",
    "regression_checks": "analysis.regressions:regression_checks",
    "write_score_html": "analysis.report:write_score_html",
    "write_compare_html": "analysis.report:write_compare_html",
    "write_agreement_html": "analysis.report:write_agreement_html",
    # the metrics by name, wherever the package is installed
    "load": "kit.registry:load",
    "metric_names": "kit.registry:available",
    # the traces teams already collect, read and scored (docs/TRACES.md)
    "traces": "traces",
    # demo (gradio is imported only when these are used)
    "build_demo": "demo:build_demo",
    "launch_metric_demo": "demo:launch_metric_demo",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, _, attribute = _EXPORTS[name].partition(":")
    module = importlib.import_module(f".{module_name}", __name__)
    value = getattr(module, attribute) if attribute else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if __name__ == "shared":
    # The checkout's rounds 1-6 name: ``shared`` and ``shared.x.y`` are the very modules of
    # ``judge_metrics`` (one copy, so classes, caches and patches agree whichever name a caller
    # used). The package is found as judge_metrics through the checkout's editable install, or,
    # where only the checkout is on the path (another venv with PYTHONPATH set to it), this very
    # folder is loaded as judge_metrics first.
    import importlib.util
    import sys

    if "judge_metrics" not in sys.modules and importlib.util.find_spec("judge_metrics") is None:
        _spec = importlib.util.spec_from_file_location(
            "judge_metrics", __file__, submodule_search_locations=[os.path.dirname(__file__)])
        _package = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
        sys.modules["judge_metrics"] = _package
        _spec.loader.exec_module(_package)  # type: ignore[union-attr]
    importlib.import_module("judge_metrics.base.aliases").alias_package("shared", "judge_metrics")
