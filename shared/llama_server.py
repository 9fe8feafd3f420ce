"""llama-cpp-python's OpenAI-compatible server, started so that it runs on any x86 CPU.

``python -m judge_metrics.llama_server ARGS`` is ``python -m llama_cpp.server ARGS`` with
llama.cpp's extra CPU buffer types turned off (what ``llama-server --no-repack`` does). On CPUs that
report AMX or AVX-512 (this project's 2-core machines do), llama-cpp-python 0.3.36 repacks the
weights into those layouts and its first ``decode`` of the embedded SmolLM2 GGUF dies with a
segmentation fault: the server accepts ``/v1/models`` and then exits on the first chat request.
Row-major weights cost some speed, never an answer. llama-cpp-python's server has no option for it,
so the default model parameters are patched before its own ``__main__`` runs.

``serve()`` starts that server on a free loopback port with the embedded judge (the tests'
fixture and the benchmarks use it) and stops it afterwards. llama-cpp-python is a test and
benchmark component (requirements-test.txt), imported only when the server starts.
"""

from __future__ import annotations

import contextlib
import runpy
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

MODEL_ALIAS = "smollm2"


def _without_extra_buffer_types() -> None:
    import llama_cpp.llama_cpp as lib

    default_params = lib.llama_model_default_params

    def params():  # noqa: ANN202 - a ctypes struct
        model_params = default_params()
        model_params.use_extra_bufts = False
        return model_params

    lib.llama_model_default_params = params


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-4000:]


@contextlib.contextmanager
def serve(n_ctx: int = 4096, ready_seconds: float = 300.0, log: Path | None = None,
          model: str | None = None, alias: str = MODEL_ALIAS) -> Iterator[str]:
    """The server with ``model`` (default: the embedded SmolLM2 GGUF) on a free loopback port,
    one thread (two spin against each other on 2 cores), aliased ``alias``; yields its base
    URL (``http://127.0.0.1:PORT/v1``) once ``/v1/models`` answers, and stops it after.
    ``log`` receives the server's output (a temporary file when None)."""
    from .base.defaults import judge_gguf_path

    port = free_port()
    if log is None:
        log = Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])
    command = [
        sys.executable, "-m", "judge_metrics.llama_server",
        "--model", model or str(judge_gguf_path()),
        "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", "1", "--n_ctx", str(n_ctx),
        "--model_alias", alias,
    ]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                   cwd=Path(__file__).resolve().parent.parent)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + ready_seconds
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited early:\n{_tail(log)}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"llama.cpp server not ready after {ready_seconds} s:\n{_tail(log)}"
                    ) from None
                time.sleep(0.3)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


if __name__ == "__main__":
    _without_extra_buffer_types()
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
