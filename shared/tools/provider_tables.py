"""The provider tables of the metric cards and of docs/BACKENDS.md, generated from the provider
registry (``shared.engine.backends.registry.PROVIDERS``) and each judge metric's ``REQUIRES``.

A card holds its table between ``<!-- providers:start -->`` and ``<!-- providers:end -->``,
docs/BACKENDS.md its own between the same markers; ``python -m judge_metrics.tools.cards``
rewrites them with the options tables, and its ``--check`` (run by a test) fails when one is
out of date.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..engine.backends.registry import KEY_ONLY_DEFAULT, LOCAL, PROVIDERS, Provider, providers_with

START = "<!-- providers:start -->"
END = "<!-- providers:end -->"
_NOTE = ("<!-- generated from the provider registry by "
         "`python -m judge_metrics.tools.cards`; do not edit by hand -->")

Requirement = tuple[str, "bool | int"]

STRUCTURED = {
    "json_schema": "the JSON schema (`response_format` `json_schema`)",
    "json_object": "the JSON schema (`response_format` `json_object`)",
    "json_object_plain": "JSON mode without the schema: validated, one repair retry",
    "tool": "a forced tool call taking the schema",
    "response_json_schema": "the JSON schema (`responseJsonSchema`)",
    "grammar": "decoding constrained to the schema (xgrammar)",
    None: "free text: validated, one repair retry",
}
_WORDS = {"logprobs": "log-probabilities", "top_logprobs": "top-{n} log-probabilities",
          "full_distribution": "the full next-token distribution"}


def _code(values: Sequence[str]) -> str:
    return ", ".join(f"`{v}`" for v in values) or "none"


def how_to_call(name: str, provider: Provider) -> str:
    if name == LOCAL:
        return "no `provider`, no `api_key`"
    parts = [f'provider="{name}"']
    if provider.needs_base_url:
        parts.append("base_url=...")
    parts.append(f'model="{provider.default_model}"' if provider.default_model else "model=...")
    return f"`{', '.join(parts)}`"


def key_cell(provider: Provider) -> str:
    if not provider.key_env:
        return "none"
    keys = _code(provider.key_env[:1])
    return keys if provider.needs_key else f"{keys} (optional)"


def logprobs_cell(provider: Provider) -> str:
    caps = provider.capabilities
    if caps.full_distribution:
        return "the full next-token distribution"
    return f"top-{caps.top_logprobs}" if caps.logprobs else "none"


def missing(name: str, requires: Sequence[Requirement]) -> list[str]:
    """The requirements provider ``name`` does not meet, in words."""
    return [_WORDS.get(capability, capability).format(n=minimum)
            for capability, minimum in requires
            if name not in providers_with(capability, minimum)]


def runs_cell(name: str, requires: Sequence[Requirement]) -> str:
    lacking = missing(name, requires)
    return "yes" if not lacking else f"no: needs {' and '.join(lacking)} (refused at once)"


def provider_cell(name: str, provider: Provider) -> str:
    if name == LOCAL:
        return f"`{name}` ({provider.title}; the default)"
    if name == KEY_ONLY_DEFAULT:
        return f"`{name}` ({provider.title}; also when only `api_key` is given)"
    return f"`{name}` ({provider.title})"


def card_table(requires: Sequence[Requirement]) -> str:
    """A card's provider table: how to call each provider, its key variable, how it answers a
    JSON schema, its log-probabilities and whether it can run the metric."""
    rows = ["| provider | how to call | key variable | structured answers | log-probabilities "
            "| runs this metric |", "|---|---|---|---|---|---|"]
    for name, p in PROVIDERS.items():
        rows.append(f"| {provider_cell(name, p)} | {how_to_call(name, p)} | "
                    f"{key_cell(p)} | {STRUCTURED.get(p.capabilities.structured, '?')} | "
                    f"{logprobs_cell(p)} | {runs_cell(name, requires)} |")
    return "\n".join(rows)


def card_block(requires: Sequence[Requirement]) -> str:
    return "\n".join([START, _NOTE, "", card_table(requires), "", END])


def _base_url_cell(name: str, provider: Provider) -> str:
    default = (f"`{provider.base_url}`" if provider.base_url
               else "required" if provider.needs_base_url else "none")
    if provider.base_url_env:
        default += f" (or `{provider.base_url_env}`)"
    meaning = provider.base_url_doc or (
        "the OpenAI-compatible API root (requests to `{base_url}/chat/completions`)"
        if provider.backend.startswith("openai_compat:")
        else "the root the provider's official SDK takes (a proxy or a test server can stand in)")
    return f"{default}: {meaning}"


def _model_cell(name: str, provider: Provider) -> str:
    if provider.default_model:
        return f"`{provider.default_model}`"
    return "the embedded SmolLM2-135M-Instruct" if name == LOCAL else "required"


def _yes(value: object) -> str:
    return str(value) if isinstance(value, str) else ("yes" if value else "no")


def _prefers_cell(name: str, prefers: Sequence[Requirement]) -> str:
    lacking = missing(name, prefers)
    return "from log-probabilities" if not lacking else "from the written answer (`sampled`)"


def docs_block(requires: dict[str, Sequence[Requirement]],
               prefers: dict[str, Sequence[Requirement]]) -> str:
    """docs/BACKENDS.md's tables: each provider's entry (protocol, endpoint, keys, capabilities,
    SDK) and what each judge metric can do on it (judge metric -> its ``REQUIRES``, its
    ``PREFERS``)."""
    rows = ["| provider | protocol (backend) | `base_url` (default: meaning) | key variables | "
            "default model | structured answers | log-probabilities | seed | batch API | "
            "prompt caching | SDK |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, p in PROVIDERS.items():
        caps = p.capabilities
        sdk = f"`pip install 'judge-metrics[{p.extra}]'`" if p.extra else "included"
        batch = (f"{caps.batch} ({caps.batch_discount:g} x the price)" if caps.batch else "no")
        optional = "" if p.needs_key or not p.key_env else " (optional)"
        rows.append(
            f"| {provider_cell(name, p)} | `{p.backend}` | {_base_url_cell(name, p)} | "
            f"{_code(p.key_env)}{optional} | {_model_cell(name, p)} | "
            f"{STRUCTURED.get(caps.structured, '?')} | {logprobs_cell(p)} | {_yes(caps.seed)} | "
            f"{batch} | {_yes(caps.prompt_caching)} | {sdk} |")
    needing = [m for m, r in requires.items() if r]
    preferring = [m for m, r in prefers.items() if r and not requires.get(m)]
    others = [m for m in requires if m not in needing and m not in preferring]
    head = ["provider", *needing, *(f"{m} (label scores)" for m in preferring),
            "the other judge metrics"]
    matrix = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in PROVIDERS:
        cells = [*(runs_cell(name, requires[m]) for m in needing),
                 *(_prefers_cell(name, prefers[m]) for m in preferring), "yes"]
        matrix.append("| " + " | ".join([f"`{name}`", *cells]) + " |")
    return "\n".join([
        START, _NOTE, "", *rows, "",
        "What each judge metric can do on each provider (from each metric's `REQUIRES` and "
        f"`PREFERS`); the other judge metrics ({', '.join(others)}) need only structured "
        "answers, which every provider gives:", "", *matrix, "", END])


def replace_block(text: str, block: str, where: str) -> str:
    """``text`` with its provider block replaced by ``block``; ``ValueError`` without one."""
    head, start, rest = text.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise ValueError(f"{where} has no {START} ... {END} block")
    return head + block + tail
