"""Tools that write the project's generated files, each run as ``python -m shared.tools.<name>``:
:mod:`.cards` (the options, provider and rounds tables of the metric cards, docs/BACKENDS.md and
docs/COST.md; ``make cards``) with :mod:`.provider_tables`. A front end: they read the metric
kit's declarations and the provider registry, and nothing in the package imports them."""
