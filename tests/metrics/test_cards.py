"""Every metric card: Hub front matter, and documented output keys equal to what compute returns."""

from __future__ import annotations

import re
from pathlib import Path

import evaluate
import pytest
import yaml
from metric_examples import EXAMPLES, judge_options

from shared.kit import registry

KEY_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|[^|]*\|\s*([^|]*?)\s*\|", re.MULTILINE)


def card(name: str) -> str:
    return (Path(registry.metric_path(name)) / "README.md").read_text(encoding="utf-8")


def front_matter(text: str) -> dict:
    match = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
    assert match, "the card has no YAML front matter"
    return yaml.safe_load(match.group(1))


def documented_keys(text: str) -> dict[str, str]:
    """``{key: when}`` from the Output Values table."""
    section = re.search(r"^## Output Values\n(.*?)(?=^## |\Z)", text, re.DOTALL | re.MULTILINE)
    assert section, "the card has no '## Output Values' section"
    return {key: when.strip().lower() for key, when in KEY_ROW.findall(section.group(1))}


@pytest.mark.parametrize("name", registry.available())
def test_front_matter(name: str) -> None:
    meta = front_matter(card(name))
    assert meta.get("title")
    assert {"evaluate", "metric"} <= set(meta.get("tags", []))
    assert meta.get("sdk") == "gradio"
    assert meta.get("app_file") == "app.py"
    assert meta.get("description")


@pytest.mark.parametrize("name", registry.available())
def test_documented_output_keys_match_compute(
    name: str, examples_cache_dir: str, request: pytest.FixtureRequest
) -> None:
    documented = documented_keys(card(name))
    inputs = dict(EXAMPLES[name])
    if registry.METRICS[name].judge:
        inputs.update(judge_options(request.getfixturevalue("llama_server"), examples_cache_dir))
    result = evaluate.load(registry.metric_path(name)).compute(**inputs)
    always = {key for key, when in documented.items() if when == "always"}
    assert always <= set(result), f"documented but not returned: {always - set(result)}"
    undocumented = set(result) - set(documented)
    assert not undocumented, f"returned but not documented: {undocumented}"
