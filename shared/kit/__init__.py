"""The metric kit: metric base classes, declared inputs and options, per-sample results, the
judge steps and the arithmetic the metric scripts share, the registry and the cards."""
