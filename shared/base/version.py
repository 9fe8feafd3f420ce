"""The package's version, its one source: pyproject.toml reads it for the distribution,
``judge_metrics.__version__`` and ``judge-metrics --version`` show it (CHANGELOG.md)."""

VERSION = "0.7.0"
