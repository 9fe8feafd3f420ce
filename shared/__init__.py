"""judge-metrics' shared helper package: judge prompts, backends, log-prob scoring, runner,
embeddings, text utilities and statistics used by every metric in ``metrics/``.

Names are imported lazily, so ``import shared`` stays cheap (no torch, no gradio) until a name
that needs them is used. Inside this package every import is relative, so the package can be
vendored into a standalone Space under another name.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

# OpenMP threads that spin while they wait make torch collapse (5-10x slower) as soon as another
# process wants a core, e.g. a judge server beside the local judge on a 2-core machine. Passive
# waiting costs nothing measurable when the machine is idle. Takes effect only when set before
# torch loads, and never overrides a user's own setting.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# public name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    # inputs and metric base
    "Input": "metric_base",
    "ValidatedMetric": "metric_base",
    "Example": "metric_base",
    "rag_example": "metric_base",
    "Option": "options",
    "EMBEDDING_OPTIONS": "options",
    "options": "",
    "validation": "",
    "InputError": "validation",
    "InputTypeError": "validation",
    # per-sample results and the compute() output built from them
    "SampleResult": "results",
    "MetricOutput": "results",
    "build_output": "results",
    "with_results": "results",
    "results_of": "results",
    "mean_measured": "results",
    # judge configuration, runner, prompts
    "JudgeConfig": "config",
    "judge_config": "config",
    "JUDGE_OPTION_NAMES": "config",
    "JUDGE_OPTIONS": "config",
    "Judge": "runner",
    "get_judge": "runner",
    "JudgeMetric": "judge_metric",
    "first_failure": "judge_metric",
    "judge_fault": "judge_metric",
    "judge_output": "judge_metric",
    "split_judge_options": "judge_metric",
    "citations": "",
    "JudgeRequest": "types",
    "Outcome": "types",
    "YesNoAnswer": "types",
    "prompts": "",
    "fence": "prompts",
    # scoring helpers named in INTERFACE.md
    "l3score_from_top_logprobs": "logprobs",
    "exact_yes_probability": "logprobs",
    "l3score_breakdown": "logprobs",
    "average_precision": "scoring",
    # LLM-guided text-generation metrics: arithmetic and shared judge steps
    "scoring": "",
    "rag_judge": "",
    "text_judge": "",
    "estimate_cost": "pricing",
    # embeddings, text, stats
    "embed_texts": "embeddings",
    "embed_windows": "embeddings",
    "pooled": "embeddings",
    "load_embedding_model": "embeddings",
    "text": "",
    "qa_match": "",
    "lcs": "",
    "stats": "",
    "defaults": "",
    # agreement of a metric with human labels (`python -m shared agree`)
    "agreement": "",
    # batch scoring of a datasets.Dataset
    "score_dataset": "batch",
    "BatchSummary": "batch",
    # paired comparison of two runs, HTML reports
    "compare": "comparison",
    "CompareReport": "comparison",
    "write_score_html": "report",
    "write_compare_html": "report",
    "write_agreement_html": "report",
    # demo (gradio is imported only when these are used)
    "build_demo": "demo",
    "launch_metric_demo": "demo",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'shared' has no attribute {name!r}")
    module_name = _EXPORTS[name] or name
    module = importlib.import_module(f".{module_name}", __name__)
    value = module if not _EXPORTS[name] else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
