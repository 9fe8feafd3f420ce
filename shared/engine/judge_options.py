"""The judge options, declared once (``JUDGE_OPTIONS``: name, type, default, check, CLI flag,
doc), with the checks of one option alone and the docs read from the providers' registry.
:mod:`.config` builds the :class:`~.config.JudgeConfig` they fill and checks the rules between
them; the cards, the CLI's judge arguments, the demo's fields and ``Args:`` read these."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from ..base.options import Option
from .backends import registry
from .backends.registry import KEY_ONLY_DEFAULT, LOCAL, Provider
from .endpoints import check_base_url

#: The providers (name -> backend class, defaults, capabilities, prices), from the registry.
PROVIDERS: dict[str, Provider] = registry.PROVIDERS

#: Structured-output styles (the ``response_format`` judge option); see
#: ``shared.engine.backends.openai_compat`` for the request field each one sends.
RESPONSE_FORMATS = ("json_schema", "json_object", "json_object_plain", "none")

#: How a panel's per-sample score is made from its judges' scores (``panel_aggregate``).
PANEL_AGGREGATES = ("mean", "median", "majority")
#: The options of a whole panel, never of one of its judges.
PANEL_OPTION_NAMES = frozenset({"judges", "panel_aggregate"})
#: The options a judge of a panel inherits from the top level only when it names the top
#: level's provider (or none): another provider's key must never reach this one's endpoint.
PROVIDER_BOUND_OPTION_NAMES = ("model", "api_key", "base_url")

def _provider_doc() -> str:
    names = ", ".join(f'"{name}"' + (f" ({p.title})" if name == LOCAL else "")
                      for name, p in PROVIDERS.items())
    return (f"the judge's provider (the cards' provider table): {names}; an api_key given "
            f'without a provider means "{KEY_ONLY_DEFAULT}"')


def _model_doc() -> str:
    defaults = ", ".join(f"{p.default_model} ({name})" for name, p in PROVIDERS.items()
                         if p.default_model)
    required = ", ".join(name for name, p in PROVIDERS.items()
                         if not p.default_model and name != LOCAL)
    return (f"the judge model; default: {defaults}, the embedded SmolLM2-135M-Instruct ({LOCAL}); "
            f"for {LOCAL} also a model folder, a cached Hub id or a .gguf file; required for "
            f"{required}")


def _api_key_doc() -> str:
    return ("the provider's API key; better: its environment variable ("
            + ", ".join(registry.key_variables()) + ")")


def _base_url_doc() -> str:
    needed = ", ".join(registry.provider_names(lambda p: p.needs_base_url))
    return (f"the server's URL (the root its official SDK takes), to reach a proxy or a test "
            f"server; default: the provider's; required for {needed} (e.g. "
            f'"http://127.0.0.1:8000/v1")')


def _base_url_option(name: str, value: Any) -> str | None:
    if value is not None:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {type(value).__name__}")
        check_base_url(value)
    return value


def _judges_option(name: str, value: Any) -> tuple[dict[str, Any], ...] | None:
    """``judges``: ``None`` (one judge) or a non-empty list of dicts of judge options (each
    checked when the panel's configs are made, :func:`judge_configs`)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of dicts of judge options, got "
                        f"{type(value).__name__}")
    entries = list(value)
    if not entries:
        raise ValueError(f"{name} must list at least one judge (a dict of judge options)")
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise TypeError(f"{name}[{index}] must be a dict of judge options, got "
                            f"{type(entry).__name__}")
        panel_wide = sorted(PANEL_OPTION_NAMES & set(entry))
        if panel_wide:
            raise ValueError(f"{name}[{index}]: {', '.join(panel_wide)} is an option of the "
                             "whole panel, not of one judge")
    return tuple(dict(entry) for entry in entries)


def _positive_seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive number of seconds, got {value}")
    return float(value)


JUDGE_OPTIONS: tuple[Option, ...] = (
    Option("provider", str, LOCAL, choices=tuple(PROVIDERS), cli="--provider",
           doc=_provider_doc()),
    Option("model", str, None, nullable=True, cli="--model", doc=_model_doc()),
    Option("api_key", str, None, nullable=True, cli="--api-key", doc=_api_key_doc()),
    Option("base_url", str, None, nullable=True, check=_base_url_option, cli="--base-url",
           doc=_base_url_doc()),
    Option("max_concurrency", int, 16, range=(1, None), cli="--max-concurrency", metavar="N",
           doc="judge requests in flight at once"),
    Option("use_cache", bool, True, cli="--no-cache",
           doc="read and write the on-disk call cache (without it a killed run cannot resume)"),
    Option("cache_dir", str, None, nullable=True, cli="--cache-dir",
           doc="call cache folder; default: $JUDGE_METRICS_CACHE_DIR or ~/.cache/judge-metrics"),
    Option("show_progress", bool, True, doc="show progress bars"),
    Option("timeout", float, 60.0, check=_positive_seconds, type_doc="float > 0", cli="--timeout",
           metavar="SECONDS", doc="seconds per judge request"),
    Option("max_retries", int, 3, range=(0, None),
           doc="retries on 5xx/timeouts; 429s: docs/RELIABILITY.md, under load"),
    Option("max_requests_per_minute", float, None, nullable=True, range=(0.001, None),
           type_doc="float > 0 or None", cli="--max-requests-per-minute", metavar="N",
           doc="cap the judge's requests per minute up front; default: its announced limit"),
    Option("max_tokens_per_minute", float, None, nullable=True, range=(1, None), metavar="N",
           cli="--max-tokens-per-minute", doc="cap the judge's (estimated) tokens per minute up "
           "front; default: as announced"),
    Option("response_format", str, None, nullable=True, choices=RESPONSE_FORMATS,
           cli="--response-format", metavar="STYLE",
           doc="override how the server takes a JSON schema: json_schema (OpenAI, vLLM, xAI), "
           "json_object (llama-cpp-python's server), json_object_plain or none; default: the "
           "provider's"),
    Option("device", str, None, nullable=True, doc='local judge: the torch device ("cpu", '
           '"cuda", ...); default: the best available'),
    Option("batch_size", int, 32, range=(1, None), doc="local judge: prompts decoded together"),
    Option("dry_run", bool, False, cli="--dry-run",
           doc="send nothing; report the planned judge requests and their estimated cost (under "
           "dry_run)"),
    Option("batch", bool, False, cli="--batch",
           doc="send the judge requests through the provider's batch API (half the price, "
           "answers within hours): one batch per step round; an interrupted run re-attaches to "
           "its pending batch"),
    Option("retry_unmeasured", bool, False, cli="--retry-unmeasured",
           doc="ask again the requests whose cached answer the checks refused (by default a "
           "refused answer is cached like any other and a rerun sends nothing)"),
    Option("judges", list, None, nullable=True, check=_judges_option,
           type_doc="list of dict or None", cli="--judge", metavar="SPEC",
           doc="a panel of judges: one dict of judge options per judge (provider, model, "
           "base_url, api_key, ...), each judging every sample; an option a judge leaves out "
           "comes from the top level (model, api_key and base_url only when it names "
           "the top level's provider or none); adds details[i]['judge_scores'], "
           "judges (each judge's results, usage and Cost) and judge_agreement (Krippendorff's "
           "alpha among the judges); None: one judge (docs/PANEL.md)"),
    Option("panel_aggregate", str, "mean", choices=PANEL_AGGREGATES, cli="--panel-aggregate",
           metavar="HOW",
           doc="a panel's per-sample score from its judges' scores: mean, median, or majority "
           "(0/1 scores only; a tie scores 0.5)"),
)
JUDGE_OPTION_NAMES = tuple(option.name for option in JUDGE_OPTIONS)
#: The options the runner reads (caching, progress, dry run); every other one shapes the
#: backend, and the backend pool keys on them (:meth:`JudgeConfig.backend_settings`).
RUN_OPTION_NAMES = frozenset({"use_cache", "cache_dir", "show_progress", "dry_run",
                              "retry_unmeasured"})
#: Each judge option's default, the defaults of ``JudgeConfig``'s fields.
DEFAULTS = {option.name: option.default for option in JUDGE_OPTIONS}
