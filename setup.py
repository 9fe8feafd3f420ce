"""The package map that pyproject.toml cannot compute: the import package ``judge_metrics`` is the
``shared/`` folder (every subpackage of it, found here) and ``judge_metrics.metrics`` the
``metrics/`` folder, one package per metric (its script a module; its card and Space
requirements package data). Everything else about the distribution is in pyproject.toml."""

from pathlib import Path

from setuptools import find_namespace_packages, setup

METRICS = sorted(p.parent.name for p in Path("metrics").glob("*/*.py") if p.stem == p.parent.name)

setup(
    package_dir={"judge_metrics": "shared", "judge_metrics.metrics": "metrics"},
    packages=["judge_metrics",
              *(f"judge_metrics.{name}"
                for name in find_namespace_packages("shared", exclude=["*__pycache__*"])),
              "judge_metrics.metrics", *(f"judge_metrics.metrics.{name}" for name in METRICS)],
    package_data={
        "judge_metrics.analysis.report": ["templates/*"],
        # written by `make agreement`, read by the CLI and the demo
        "judge_metrics.analysis": ["agreement_figures.json"],
        **{f"judge_metrics.metrics.{name}": ["README.md", "requirements.txt"] for name in METRICS},
    },
)
