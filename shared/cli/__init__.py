"""The command line (``judge-metrics`` / ``python -m judge_metrics``): one module per command, the
arguments they share in :mod:`.common`, the parser and dispatch in :mod:`.main`."""
