"""The Judge panel's second and third judges: with either one set, the run is a panel of judges
(the ``judges`` judge option: the first judge is the one of the fields above), scored by each,
combined by ``panel_aggregate``, their agreement shown beside the headline (docs/PANEL.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.backends.registry import LOCAL
from ..engine.config import PANEL_AGGREGATES, PROVIDERS

#: The page's extra judges (judge 1 is the Judge fields themselves).
EXTRA_JUDGES = (2, 3)
_JUDGE_FIELDS = ("provider", "model", "base_url", "api_key")

_HELP = (
    "Add a second and a third judge, ideally from other model families: every row is then "
    "judged by each, the score is their mean (or median, or majority of 0/1 scores), and the "
    "output shows each judge's scores (`judge_scores`) and how far the judges agree "
    "(`judge_agreement`, Krippendorff's alpha). Each judge costs its own requests.")


def field_name(judge: int, name: str) -> str:
    return f"judge{judge}_{name}"


def add_judge_fields(fields: dict[str, Any], name: str) -> None:
    """Lay out the extra judges' fields (inside the Judge accordion) into ``fields``."""
    import gradio as gr

    with gr.Accordion("More judges (a panel)", open=False):
        gr.Markdown(_HELP)
        for judge in EXTRA_JUDGES:
            with gr.Row():
                fields[field_name(judge, "provider")] = gr.Dropdown(
                    choices=["", *PROVIDERS], value="", label=f"judge {judge}: provider",
                    info="empty: no such judge", elem_id=f"{name}-judge{judge}-provider")
                fields[field_name(judge, "model")] = gr.Textbox(
                    label=f"judge {judge}: model", max_lines=1,
                    placeholder="the provider's default model",
                    elem_id=f"{name}-judge{judge}-model")
                fields[field_name(judge, "base_url")] = gr.Textbox(
                    label=f"judge {judge}: base URL", max_lines=1,
                    elem_id=f"{name}-judge{judge}-base-url")
                fields[field_name(judge, "api_key")] = gr.Textbox(
                    label=f"judge {judge}: API key", type="password", max_lines=1,
                    placeholder="used for this request only",
                    elem_id=f"{name}-judge{judge}-api-key")
        fields["panel_aggregate"] = gr.Dropdown(
            choices=list(PANEL_AGGREGATES), value="mean", label="panel aggregate",
            elem_id=f"{name}-panel-aggregate")


def panel_options(values: Mapping[str, Any], first: Mapping[str, Any]) -> dict[str, Any]:
    """``judges`` and ``panel_aggregate`` from the page's fields (``values``: field name ->
    value) and the first judge's options (``first``); ``{}`` when no extra judge is set."""
    extra = []
    for judge in EXTRA_JUDGES:
        options = _texts(values, {name: field_name(judge, name) for name in _JUDGE_FIELDS})
        if options.get("provider"):
            extra.append(options)
    if not extra:
        return {}
    head = {name: first[name] for name in _JUDGE_FIELDS if first.get(name)}
    head.setdefault("provider", LOCAL)
    return {"judges": [head, *extra],
            "panel_aggregate": values.get("panel_aggregate") or PANEL_AGGREGATES[0]}


def typed_keys(values: Mapping[str, Any]) -> list[str]:
    """The API keys typed into the extra judges' fields (scrubbed from what the page shows)."""
    keys = [values.get(field_name(judge, "api_key")) for judge in EXTRA_JUDGES]
    return [key.strip() for key in keys if isinstance(key, str) and key.strip()]


def _texts(values: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    options = {}
    for option, field in names.items():
        value = values.get(field)
        if isinstance(value, str) and value.strip():
            options[option] = value.strip()
    if options.get("provider", LOCAL) == LOCAL:
        options.pop("api_key", None)
    return options
