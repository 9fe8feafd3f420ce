"""shared.llama_server: llama-cpp-python's server answers chat requests with log-probabilities on
this machine's CPU (without the launcher, llama-cpp-python 0.3.36 segfaults on the first request
where the CPU reports AMX/AVX-512)."""

from __future__ import annotations

import json
import urllib.request

import pytest

pytestmark = pytest.mark.server


def _chat(base_url: str) -> dict:
    body = {"model": "smollm2", "max_tokens": 2, "temperature": 0, "logprobs": True,
            "top_logprobs": 5, "messages": [{"role": "user", "content": "Is water wet?"}]}
    request = urllib.request.Request(f"{base_url}/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)


def test_the_server_answers_two_requests_with_top_logprobs(llama_server: str) -> None:
    for _ in range(2):  # the crash came on the first decode; the second shows the process lives
        answer = _chat(llama_server)
        top = answer["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        assert len(top) == 5 and all(entry["logprob"] <= 0.0 for entry in top)
