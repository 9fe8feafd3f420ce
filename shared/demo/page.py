"""The page: ``build_demo`` (every metric, or one for a Space), ``launch``, and
``launch_metric_demo`` (a Space's ``app.py``)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..kit.registry import METRICS, available
from .metric_widget import MetricWidget, build_widget

TITLE = "judge-metrics"


def build_demo(metric_names: list[str] | None = None,
               metric_dirs: Mapping[str, str | Path] | None = None) -> Any:
    """The ``gr.Blocks`` demo of the given metrics (default: every available one).

    One metric: its widget alone (a Space); several: one tab each. ``metric_dirs`` maps a metric
    to the folder to load it from (default: the repo's ``metrics/<name>``). The widgets are
    on the returned Blocks as ``demo.jm_widgets`` (name -> :class:`MetricWidget`), also under
    the earlier name ``demo.jm_panels``."""
    import gradio as gr

    if metric_names is None:  # instant string metrics first, then embedding, then judge ones
        metric_names = sorted(available(), key=lambda n: (METRICS[n].judge, METRICS[n].embeds))
    names = list(metric_names)
    dirs = dict(metric_dirs or {})
    unknown = [n for n in names if n not in METRICS and n not in dirs]
    if unknown:
        raise ValueError(f"unknown metric(s): {', '.join(unknown)}; known: {', '.join(METRICS)}")
    if not names:
        raise ValueError("no metric to show: metrics/<name>/<name>.py exists for none of them")
    widgets: dict[str, MetricWidget] = {}
    title = f"{TITLE}: {names[0]}" if len(names) == 1 else TITLE
    with gr.Blocks(title=title, analytics_enabled=False) as demo:
        if len(names) == 1:
            gr.Markdown(f"# {names[0]}")
            widgets[names[0]] = build_widget(names[0], dirs.get(names[0]))
        else:
            gr.Markdown(f"# {TITLE}\nScore LLM and QA outputs with any metric: pick a tab, "
                        "edit the example (or upload a batch), press **Run**.")
            with gr.Tabs():
                for name in names:
                    with gr.Tab(name, id=name, elem_id=f"tab-{name}"):
                        widgets[name] = build_widget(name, dirs.get(name))
                with gr.Tab("Compare", id="compare", elem_id="tab-compare"):
                    from .compare_tab import build_compare_tab

                    demo.jm_compare = build_compare_tab()
                with gr.Tab("Calibrate", id="calibrate", elem_id="tab-calibrate"):
                    from .calibrate_tab import build_calibrate_tab

                    demo.jm_calibrate = build_calibrate_tab()
    demo.jm_widgets = demo.jm_panels = widgets
    return demo


def launch(demo: Any, **kwargs: Any) -> Any:
    """``demo.launch`` with what the demo needs: no run history (it would keep the inputs,
    the API key among them, in the browser), no API page link."""
    kwargs.setdefault("run_history", False)
    kwargs.setdefault("footer_links", ["gradio", "settings"])
    return demo.launch(**kwargs)


def caller_metric_dir(name: str, caller_file: str | None) -> Path | None:
    """The folder of ``caller_file`` when it holds ``<name>.py`` (a standalone Space), else
    None (load from the repo's ``metrics/<name>``)."""
    if not caller_file:
        return None
    folder = Path(caller_file).resolve().parent
    return folder if (folder / f"{name}.py").is_file() else None


def launch_metric_demo(name: str, metric_dir: str | Path | None = None, **kwargs: Any) -> Any:
    """Serve the widget of one metric (a Space's ``app.py``).

    ``metric_dir``: the folder holding ``<name>.py``; default the calling script's folder when
    it holds ``<name>.py`` (a standalone Space), else the repo's ``metrics/<name>``."""
    if metric_dir is None:
        metric_dir = caller_metric_dir(name, sys._getframe(1).f_globals.get("__file__"))
    demo = build_demo([name], {name: metric_dir} if metric_dir is not None else None)
    return launch(demo, **kwargs)
