"""``python -m llama_cpp.server`` with llama.cpp's extra CPU buffer types turned off.

On this machine (a VM whose CPU reports AMX-INT8 and AVX-512), llama-cpp-python 0.3.36's first
``decode`` of the SmolLM2 GGUF dies with a segmentation fault while the model's weights sit in
the CPU's "extra" buffer types (the AMX / repacked layouts): ``Llama(...).create_chat_completion``
crashes with any ``n_threads``, and with ``use_extra_bufts=False`` in the model parameters (what
``llama-server --no-repack`` sets) it answers. llama-cpp-python's server has no option for it, so
this launcher turns it off in the default model parameters and then runs the server's own
``__main__`` with the same command line:

    python bench/_llama_server.py --model M.gguf --host 127.0.0.1 --port P --n_threads 1 ...

Plain row-major weights only cost some speed; the answers are the model's.
"""

from __future__ import annotations

import runpy

import llama_cpp.llama_cpp as _lib

_default_params = _lib.llama_model_default_params


def _params_without_extra_buffers():  # noqa: ANN202 - a ctypes struct
    params = _default_params()
    params.use_extra_bufts = False
    return params


_lib.llama_model_default_params = _params_without_extra_buffers

if __name__ == "__main__":
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
