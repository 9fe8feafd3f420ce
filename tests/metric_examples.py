"""One tiny, valid input set per metric (its declared ``EXAMPLE``), used by the card and
Space tests.

Judge metrics run against the real llama.cpp server (``judge_options(base_url, cache_dir)``).
"""

from __future__ import annotations

from typing import Any


def _examples() -> dict[str, dict[str, Any]]:
    """Each metric's declared ``EXAMPLE`` (the demo starts from the same one) as ``compute``
    keyword arguments: its inputs and the options it needs."""
    from shared.kit import registry

    return {name: {**spec.example.inputs, **spec.example.options}
            for name, spec in registry.METRICS.items()}


EXAMPLES: dict[str, dict[str, Any]] = _examples()

# judge options of the metric tests that send nothing (dry run) or reuse nothing (no cache)
UNCACHED: dict[str, Any] = {"show_progress": False, "use_cache": False}
DRY_RUN: dict[str, Any] = {"dry_run": True, **UNCACHED}


def judge_options(base_url: str, cache_dir: str) -> dict[str, Any]:
    return {
        "provider": "openai-compatible",
        "base_url": base_url,
        "model": "smollm2",
        "response_format": "json_object",
        "cache_dir": cache_dir,
        "show_progress": False,
    }


def metric_inputs(name: str, rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """``compute`` keyword arguments of metric ``name`` from rows with the singular columns."""
    from shared.kit import registry

    spec = registry.METRICS[name]
    columns = {**spec.columns, **spec.optional_columns}
    return {arg: [row[column] for row in rows] for arg, column in columns.items()}
