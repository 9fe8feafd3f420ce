"""The Gradio demo widget: one page (``build_demo``) for every metric, or one metric per Space.

Everything about a metric's page comes from the metric class's declarations (read through
``shared.kit.registry.spec_of``): the input columns and kinds (``INPUTS``), its options with their
types and defaults (``OPTIONS``, see ``shared.base.options``), the headline keys and the prefilled
example (``EXAMPLE``, the metric's own); a metric without one gets a generic example built
from its columns.

The API key typed into the page is used for the one request that carries it: it is passed to
``compute`` and nowhere else, never logged, and scrubbed from everything the page gets back
(error texts of a provider may quote it). The Run event is private (not in the API, not in
Gradio's run history) and :func:`launch` turns the run history off.

The modules, by responsibility:

- ``inputs``: table cells -> ``compute`` arguments, judge fields -> judge options, an uploaded
  batch (read by :mod:`shared.runs.records`, as strictly as the CLI) -> table rows, the examples;
- ``options``: a metric's declared options shown as fields and the ``compute`` value of a field;
- ``render``: results -> the page (aggregate cards, per-row table and chart, unmeasured rows,
  usage, status box, error texts);
- ``keys``: the scrubber over everything the page gets back and the release of the judge
  backend made for a typed key;
- ``metric_widget``: :class:`~shared.demo.metric_widget.MetricWidget`, one metric's widget and
  its handlers (``panel_judges``: its second and third judges, a panel of judges);
- ``page``: ``build_demo``, ``launch``, ``launch_metric_demo``.
"""

from ..kit.registry import EXAMPLES
from .keys import Scrubber
from .page import build_demo, caller_metric_dir, launch, launch_metric_demo
from .render import unmeasured_markdown

# the names app.py, the metrics' app.py and the tests import from ``shared.demo``
__all__ = [
    "EXAMPLES",
    "Scrubber",
    "build_demo",
    "caller_metric_dir",
    "launch",
    "launch_metric_demo",
    "unmeasured_markdown",
]
