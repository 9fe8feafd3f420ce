"""The Gradio demo widget: one page (``build_demo``) for every metric, or one metric per Space.

Everything about a metric's page comes from the metric itself and the registry: the input
columns (``registry.METRICS``), their kinds (the metric class's ``INPUTS``), its options and their
defaults (the ``Args:`` section of its ``inputs_description`` plus the defaults of ``_compute``),
and the headline keys. The prefilled examples come from ``registry.EXAMPLES`` (from the seed
cards); a metric without one gets a generic example built from its columns.

The API key typed into the page is used for the one request that carries it: it is passed to
``compute`` and nowhere else, never logged, and scrubbed from everything the page gets back
(error texts of a provider may quote it). The Run event is private (not in the API, not in
Gradio's run history) and :func:`launch` turns the run history off.

The modules, by responsibility:

- ``inputs``: table cells -> ``compute`` arguments, judge fields -> judge options, an uploaded
  batch (read by :mod:`shared.records`, as strictly as the CLI) -> table rows, the examples;
- ``options``: a metric's options (kinds, defaults) and the ``compute`` value of an option field;
- ``render``: results -> the page (aggregate cards, per-row table and chart, unmeasured rows,
  usage, status box, error texts);
- ``secrets``: the scrubber over everything the page gets back and the release of the judge
  backend made for a typed key;
- ``panel``: :class:`~shared.demo.panel.MetricPanel`, one metric's widget and its handlers;
- ``page``: ``build_demo``, ``launch``, ``launch_metric_demo``.
"""

from ..registry import EXAMPLES
from .page import build_demo, caller_metric_dir, launch, launch_metric_demo
from .render import unmeasured_markdown
from .secrets import _Scrubber

# the names app.py, the metrics' app.py and the tests import from ``shared.demo``
__all__ = [
    "EXAMPLES",
    "_Scrubber",
    "build_demo",
    "caller_metric_dir",
    "launch",
    "launch_metric_demo",
    "unmeasured_markdown",
]
