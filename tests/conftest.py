"""Session fixtures shared by the whole suite: real components, started once, stopped after."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see shared/__init__.py

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_ready(url: str, process: subprocess.Popen, log: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama.cpp server exited early:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"llama.cpp server not ready after {seconds}s:\n{log.read_text()[-4000:]}")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real OpenAI-compatible server (llama-cpp-python) with the embedded SmolLM2 GGUF on a free
    loopback port; yields its base URL (``http://127.0.0.1:PORT/v1``)."""
    from shared.defaults import judge_gguf_path

    port = free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    command = [
        # llama_cpp.server with the CPU's extra buffer types off (it segfaults here with them)
        sys.executable, str(REPO / "bench" / "_llama_server.py"),
        "--model", str(judge_gguf_path()),
        "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", "1", "--n_ctx", "4096",
        "--model_alias", "smollm2",
    ]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_until_ready(f"http://127.0.0.1:{port}/v1/models", process, log, 120)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


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
