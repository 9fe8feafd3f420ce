"""The peers' side of `make bench-load` (bench/bench_load.py): one peer scores every row through
its own batch entry point against the rate-limited judge, as a user runs it.

Run under ``.venv-agreement``'s Python (RAGAS and DeepEval pin packages .venv cannot hold:
bench/requirements-venv-agreement.txt):

    .venv-agreement/bin/python bench/load_peers.py JOB.json OUT.json

``JOB.json``: ``{"peer": "RAGAS" | "DeepEval", "base_url", "model", "rows": [{"question",
"prediction", "reference"}]}``. Each peer runs with its documented defaults for an
OpenAI-compatible judge:

- DeepEval: ``deepeval.evaluate`` (``AsyncConfig()``: 20 test cases at once) over a G-Eval
  correctness metric with fixed evaluation steps (one judge request per row) whose model is
  ``LocalModel`` (DeepEval's OpenAI-compatible model; its own tenacity retries);
- RAGAS: ``ragas.evaluate`` (``RunConfig()``: 16 workers, 10 retries with exponential waits up to
  60 s) over an ``AspectCritic`` correctness verdict (one request per row) judged by
  langchain's ``ChatOpenAI`` (the SDK's default retries).

``OUT.json``: ``{"peer", "version", "scored", "lost", "seconds", "error"}`` (``lost``: rows
without a number; ``error``: why the peer could not run at all).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "agreement"))
from peer_guard import OPT_OUTS, Outbound  # noqa: E402  (bench/agreement/peer_guard.py)

CRITERION = "Determine whether the actual output is factually correct based on the expected output."


def number(value: Any) -> bool:
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(value))


def deepeval_scores(job: dict[str, Any]) -> list[Any]:
    from deepeval import evaluate
    from deepeval.evaluate.configs import CacheConfig, DisplayConfig, ErrorConfig
    from deepeval.metrics import GEval
    from deepeval.models import LocalModel
    from deepeval.test_case import LLMTestCase, SingleTurnParams

    model = LocalModel(model=job["model"], base_url=job["base_url"], api_key="not-needed",
                       format="json")
    metric = GEval(name="Correctness", criteria=CRITERION, model=model,
                   evaluation_steps=["Compare the actual output with the expected output.",
                                     "Penalise facts that contradict the expected output."],
                   evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT,
                                      SingleTurnParams.EXPECTED_OUTPUT])
    cases = [LLMTestCase(input=r["question"], actual_output=r["prediction"],
                         expected_output=r["reference"]) for r in job["rows"]]
    result = evaluate(cases, [metric],
                      display_config=DisplayConfig(show_indicator=False, print_results=False),
                      error_config=ErrorConfig(ignore_errors=True),
                      cache_config=CacheConfig(write_cache=False, use_cache=False))
    return [None if not t.metrics_data or t.metrics_data[0].error else t.metrics_data[0].score
            for t in result.test_results]


def ragas_scores(job: dict[str, Any]) -> list[Any]:
    from langchain_openai import ChatOpenAI
    from ragas import EvaluationDataset, evaluate
    from ragas.dataset_schema import SingleTurnSample
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import AspectCritic

    llm = LangchainLLMWrapper(ChatOpenAI(base_url=job["base_url"], api_key="not-needed",
                                         model=job["model"], temperature=0))
    critic = AspectCritic(name="correctness", definition=CRITERION)
    samples = [SingleTurnSample(user_input=r["question"], response=r["prediction"],
                                reference=r["reference"]) for r in job["rows"]]
    result = evaluate(EvaluationDataset(samples=samples), metrics=[critic], llm=llm,
                      raise_exceptions=False, show_progress=False)
    return list(result.to_pandas()["correctness"])


PEERS = {"DeepEval": ("deepeval", deepeval_scores), "RAGAS": ("ragas", ragas_scores)}


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    os.environ.update(OPT_OUTS)
    warnings.filterwarnings("ignore")
    Outbound.install()
    module, scores = PEERS[job["peer"]]
    from importlib.metadata import version

    report: dict[str, Any] = {"peer": job["peer"], "version": version(module)}
    started = time.monotonic()
    try:
        got = scores(job)
    except Exception as error:  # noqa: BLE001 - the peer could not run: its row says why
        report["error"] = f"{type(error).__name__}: {str(error)[:200]}"
        got = []
    report["seconds"] = time.monotonic() - started
    report["scored"] = sum(number(v) for v in got)
    report["lost"] = len(job["rows"]) - report["scored"]
    Path(argv[1]).write_text(json.dumps(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
