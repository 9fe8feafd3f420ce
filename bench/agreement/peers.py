"""The peers' side of `make agreement`'s side-by-side section: one peer, its cells, one judge.

Run by ``bench/agreement/side.py`` under ``.venv-agreement``'s Python (RAGAS and DeepEval pin
``openai<2`` and an older ``huggingface-hub``, so they never go into ``.venv``; see
``bench/requirements-venv-agreement.txt``), one process per peer:

    .venv-agreement/bin/python bench/agreement/peers.py JOB.json OUT.json

``JOB.json``: ``{"peer", "base_url", "model", "max_tokens", "timeout", "seconds", "cells":
[{"id", "metric", "kind", "sensitive", "rows": [...]}]}``, ``"meter_url"`` when ``base_url``
is the token meter's proxy (``meter.py``: each row's tokens are read from it), and
``"vectors_url"``: where RAGAS gets MiniLM's vectors (``side.minilm_served``).
Every cell is scored row by row, in the given order, through the peer's own code path; the judge
is the llama.cpp server at ``base_url``. A row the peer raised on, or returned no number for, is
an error with its (shortened) message; the cells' rows are taken in rounds (row 1 of each cell,
then row 2, ...: ``rounds.py``), and rows left when the peer's time share (``seconds``) runs out
are "not reached". ``OUT.json`` gets, per cell, the
per-row scores (``None`` = error or not reached), the error texts, the requests sent and the time;
also the peer's version and every outbound connection it tried (all refused: only loopback is
allowed, so a peer that phones home shows up here instead of leaking).

Cells marked ``sensitive`` (Davidson's tweets) keep only the exception type of an error: a
peer's message can quote the judge's answer, which can quote the text.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import sys
import traceback
import urllib.request
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

# beside this file: bench/agreement/peer_guard.py, meter.py and rounds.py
from meter import remote
from peer_guard import OPT_OUTS, Counter, Outbound, http_clients
from rounds import RowOutcome, score_in_rounds

VALOR_SEED = 1234


class Reported(Exception):  # noqa: N818 - not raised: a peer's own error result, as a value
    """An error the peer returned as its result (valor-lite's error metric, a DeepEval metric's
    ``error``), as opposed to one it raised."""


# JSON parse positions differ row by row; without them the same error counts as the same text
_POSITION = re.compile(r":? line \d+ column \d+ \(char \d+\)")


def short(text: str, limit: int = 120) -> str:
    text = _POSITION.sub("", " ".join(str(text).split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def error_text(error: BaseException, sensitive: bool) -> str:
    if isinstance(error, Reported):
        kind, _, message = str(error).partition(": ")
        verb, name = "returned the error", kind
    else:
        verb, name, message = "raised", type(error).__name__, str(error)
    if sensitive:
        return f"{verb} {name} (message withheld: the set's texts stay private)"
    return f"{verb} {name}: {short(message)}"


def references(row: dict[str, Any]) -> list[str]:
    """A row's references: examples/rag_sample.jsonl writes one as a string, several as a list
    (valor-lite takes them all; RAGAS and DeepEval take one, the first)."""
    return [row["reference"]] if isinstance(row["reference"], str) else list(row["reference"])


#: Our RAG judge metrics the token benchmark runs on examples/rag_sample.jsonl (its rows carry
#: question, prediction, contexts and reference), next to each peer's equivalent.
RAG_METRICS = ("bias", "answer_relevance", "context_precision", "context_recall",
               "context_relevance")


# ------------------------------------------------------------------------------------ valor


def valor_scorers(job: dict[str, Any]) -> dict[str, Callable[[dict[str, Any]], Any]]:
    import openai
    from valor_lite.text_generation import Context, Evaluator, OpenAIWrapper, QueryResponse

    client, _ = http_clients(job["max_tokens"], job["timeout"])
    wrapper = OpenAIWrapper(model_name=job["model"], api_key="not-needed", seed=VALOR_SEED)
    wrapper.client = openai.OpenAI(base_url=job["base_url"], api_key="not-needed",
                                   http_client=client, max_retries=0)
    evaluator = Evaluator(client=wrapper)

    def rag(r: dict[str, Any]) -> Any:  # each metric reads the fields it needs
        return QueryResponse(query=r["question"], response=r["prediction"], context=Context(
            groundtruth=references(r), prediction=list(r["contexts"])))

    def run(name: str, make: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        compute = getattr(evaluator, f"compute_{name}")

        def score(row: dict[str, Any]) -> Any:
            metric = compute(make(row))
            if metric.type == "Error":  # valor's own error metric (after its retries)
                return Reported(f"{metric.value['type']}: {metric.value['message']}")
            return metric.value

        return score

    return {
        "faithfulness": run("faithfulness", lambda r: QueryResponse(
            query="", response=r["summary"], context=Context(prediction=[r["source"]]))),
        "hallucination": run("hallucination", lambda r: QueryResponse(
            query="", response=r["summary"], context=Context(prediction=[r["source"]]))),
        # valor reads the text that was summarised from `query`
        "summary_coherence": run("summary_coherence", lambda r: QueryResponse(
            query=r["source"], response=r["summary"])),
        "answer_correctness": run("answer_correctness", lambda r: QueryResponse(
            query=r["question"], response=r["prediction"],
            context=Context(groundtruth=[r["reference"]]))),
        "toxicity": run("toxicity", lambda r: QueryResponse(query="", response=r["text"])),
        **{name: run(name, rag) for name in RAG_METRICS},
    }


# ------------------------------------------------------------------------------------ RAGAS


def served_vectors(url: str, texts: list[str]) -> list[list[float]]:
    """MiniLM's vectors of ``texts`` from the benchmark's endpoint (``side.minilm_served``)."""
    asked = urllib.request.Request(url, json.dumps(texts).encode(),
                                   {"Content-Type": "application/json"})
    with urllib.request.urlopen(asked, timeout=60) as answer:  # noqa: S310 - loopback
        return json.loads(answer.read())


def ragas_scorers(job: dict[str, Any]) -> dict[str, Callable[[dict[str, Any]], Any]]:
    from langchain_openai import ChatOpenAI
    from ragas.dataset_schema import SingleTurnSample
    from ragas.embeddings.base import BaseRagasEmbeddings
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import (
        AnswerCorrectness,
        ContextRelevance,
        Faithfulness,
        LLMContextPrecisionWithReference,
        LLMContextRecall,
        ResponseRelevancy,
    )
    from ragas.metrics._aspect_critic import coherence, harmfulness
    from ragas.run_config import RunConfig

    client, async_client = http_clients(job["max_tokens"], job["timeout"])
    chat = ChatOpenAI(base_url=job["base_url"], api_key="not-needed", model=job["model"],
                      temperature=0, max_tokens=job["max_tokens"], timeout=job["timeout"],
                      max_retries=0, http_client=client, http_async_client=async_client)
    llm = LangchainLLMWrapper(chat)
    vectors: dict[str, list[float]] = {}

    class Served(BaseRagasEmbeddings):
        """The embedded all-MiniLM-L6-v2's vectors, computed in ``.venv`` (transformers cannot
        import next to RAGAS's huggingface-hub pin) and served at the job's ``vectors_url``
        (``side.minilm_served``); each text is asked for once."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            missing = [t for t in dict.fromkeys(texts) if t not in vectors]
            if missing and job.get("vectors_url"):
                vectors.update(zip(missing, served_vectors(job["vectors_url"], missing),
                                   strict=True))
            if any(t not in vectors for t in texts):
                raise KeyError("no MiniLM vector for this text: the job has no vectors_url")
            return [vectors[t] for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

        async def aembed_query(self, text: str) -> list[float]:
            return self.embed_query(text)

        async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
            return self.embed_documents(texts)

    config = RunConfig(timeout=int(job["timeout"]), max_retries=1, max_workers=1)
    loop = asyncio.new_event_loop()

    def run(metric: Any, make: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        metric.llm = llm
        if hasattr(metric, "embeddings"):
            metric.embeddings = Served()
        metric.init(config)

        def score(row: dict[str, Any]) -> Any:
            return loop.run_until_complete(metric.single_turn_ascore(make(row)))

        return score

    def summary(r: dict[str, Any]) -> Any:
        return SingleTurnSample(user_input="Summarise the article.", response=r["summary"],
                                retrieved_contexts=[r["source"]])

    def rag(r: dict[str, Any]) -> Any:  # each metric reads the fields it needs
        return SingleTurnSample(user_input=r["question"], response=r["prediction"],
                                reference=references(r)[0], retrieved_contexts=r["contexts"])

    return {
        "faithfulness": run(Faithfulness(), summary),
        "summary_coherence": run(coherence, lambda r: SingleTurnSample(
            user_input="Summarise the article.", response=r["summary"])),
        "answer_correctness": run(AnswerCorrectness(), lambda r: SingleTurnSample(
            user_input=r["question"], response=r["prediction"], reference=r["reference"])),
        "toxicity": run(harmfulness, lambda r: SingleTurnSample(
            user_input="", response=r["text"])),
        "answer_relevance": run(ResponseRelevancy(), rag),
        "context_precision": run(LLMContextPrecisionWithReference(), rag),
        "context_recall": run(LLMContextRecall(), rag),
        "context_relevance": run(ContextRelevance(), rag),
    }


# ---------------------------------------------------------------------------------- DeepEval


def deepeval_scorers(job: dict[str, Any]) -> dict[str, Callable[[dict[str, Any]], Any]]:
    import criteria  # bench/agreement/criteria.py: G-Eval's SummEval texts
    import openai
    from deepeval.metrics import (
        AnswerRelevancyMetric,
        BiasMetric,
        ContextualPrecisionMetric,
        ContextualRecallMetric,
        ContextualRelevancyMetric,
        FaithfulnessMetric,
        GEval,
        HallucinationMetric,
        ToxicityMetric,
    )
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.test_case import LLMTestCase, SingleTurnParams

    client, _ = http_clients(job["max_tokens"], job["timeout"])
    server = openai.OpenAI(base_url=job["base_url"], api_key="not-needed", http_client=client,
                           max_retries=0)

    class ServerModel(DeepEvalBaseLLM):
        """DeepEval's documented custom-model hook: ``generate(prompt, schema)`` returns the
        judge's text; with a schema the request asks the server for JSON of that schema (as our
        side asks for JSON), and DeepEval parses the text itself."""

        def __init__(self) -> None:
            super().__init__(job["model"])

        def load_model(self) -> Any:
            return server

        def generate(self, prompt: str, schema: Any = None) -> str:
            extra: dict[str, Any] = {}
            if schema is not None:
                extra["response_format"] = {"type": "json_object",
                                            "schema": schema.model_json_schema()}
            response = server.chat.completions.create(
                model=job["model"], messages=[{"role": "user", "content": prompt}],
                temperature=0, max_tokens=job["max_tokens"], **extra)
            return response.choices[0].message.content or ""

        async def a_generate(self, prompt: str, schema: Any = None) -> str:
            return self.generate(prompt, schema)

        def get_model_name(self) -> str:
            return f"{job['model']} (llama.cpp server)"

    model = ServerModel()
    common = {"model": model, "async_mode": False, "include_reason": False}

    def run(factory: Callable[[], Any], make: Callable[[dict[str, Any]], Any]
            ) -> Callable[[dict[str, Any]], Any]:
        # a fresh metric per row, as deepeval.evaluate() copies its metrics per test case (a
        # G-Eval instance keeps the evaluation steps it generated first)
        def score(row: dict[str, Any]) -> Any:
            metric = factory()
            value = metric.measure(make(row))
            if getattr(metric, "error", None):
                return Reported(f"{type(metric).__name__}.error: {metric.error}")
            return value

        return score

    def summary(r: dict[str, Any]) -> Any:
        return LLMTestCase(input="Summarise the article.", actual_output=r["summary"],
                           retrieval_context=[r["source"]], context=[r["source"]])

    def rag(r: dict[str, Any]) -> Any:  # each metric reads the fields it needs
        return LLMTestCase(input=r["question"], actual_output=r["prediction"],
                           expected_output=references(r)[0], retrieval_context=r["contexts"])

    rag_metrics = dict(zip(RAG_METRICS, (BiasMetric, AnswerRelevancyMetric,
                                         ContextualPrecisionMetric, ContextualRecallMetric,
                                         ContextualRelevancyMetric), strict=True))
    geval = {k: v for k, v in common.items() if k != "include_reason"}
    return {
        "faithfulness": run(lambda: FaithfulnessMetric(**common), summary),
        "hallucination": run(lambda: HallucinationMetric(**common), summary),
        # G-Eval's coherence, as DeepEval documents it for summaries
        "summary_coherence": run(lambda: GEval(
            name="Coherence",
            criteria="Coherence - the collective quality of all sentences in the actual output: "
                     "it should be well-structured and well-organized, building from sentence to "
                     "sentence to a coherent body of information about the input.",
            evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT], **geval),
            lambda r: LLMTestCase(input=r["source"], actual_output=r["summary"])),
        # DeepEval's answer-correctness recipe: G-Eval with a correctness criterion
        "answer_correctness": run(lambda: GEval(
            name="Correctness",
            criteria="Determine whether the actual output is factually correct based on the "
                     "expected output.",
            evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT,
                               SingleTurnParams.EXPECTED_OUTPUT], **geval),
            lambda r: LLMTestCase(input=r["question"], actual_output=r["prediction"],
                                  expected_output=r["reference"])),
        "toxicity": run(lambda: ToxicityMetric(**common), lambda r: LLMTestCase(
            input="", actual_output=r["text"])),
        # our g_eval's row: G-Eval's own SummEval coherence criteria and evaluation steps
        "g_eval": run(lambda: GEval(
            name="Coherence", criteria=criteria.GEVAL_COHERENCE["criteria"],
            evaluation_steps=criteria.GEVAL_COHERENCE["evaluation_steps"],
            evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT], **geval),
            lambda r: LLMTestCase(input=r["source"], actual_output=r["summary"])),
        **{name: run(partial(metric, **common), rag) for name, metric in rag_metrics.items()},
    }


PEERS = {"valor-lite": ("valor_lite", valor_scorers), "RAGAS": ("ragas", ragas_scorers),
         "DeepEval": ("deepeval", deepeval_scorers)}


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def run_cells(job: dict[str, Any], scorers: dict[str, Callable[[dict[str, Any]], Any]]
              ) -> list[dict[str, Any]]:
    """The cells' rows in rounds (``rounds.score_in_rounds``) within the peer's share."""
    cells = job["cells"]

    def score(c: int, row: dict[str, Any]) -> RowOutcome:
        cell, before = cells[c], Counter.requests
        try:
            value = scorers[cell["metric"]](row)
        except Exception as error:  # noqa: BLE001 - a peer's failure is a measured result
            value = error
        if isinstance(value, Exception):
            outcome = None, error_text(value, cell["sensitive"])
        elif number(value) is None:
            outcome = None, f"no score (returned {type(value).__name__})"
        else:
            outcome = number(value), None
        return *outcome, Counter.requests - before

    meter = remote(job["meter_url"]) if job.get("meter_url") else None
    results = score_in_rounds([cell["rows"] for cell in cells], float(job["seconds"]), score,
                              meter)
    return [{"id": cell["id"], **result} for cell, result in zip(cells, results, strict=True)]


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    os.environ.update(OPT_OUTS)
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # the log stays readable
    Outbound.install()
    module, build = PEERS[job["peer"]]
    from importlib.metadata import version

    report: dict[str, Any] = {"peer": job["peer"]}
    try:
        report["version"] = version(module.replace("_", "-"))
        scorers = build(job)
    except Exception as error:  # noqa: BLE001 - reported in the peer's rows
        report["problem"] = f"{type(error).__name__}: {short(str(error), 200)}"
        report["traceback"] = traceback.format_exc(limit=3)[-1500:]
    else:
        report["cells"] = run_cells(job, scorers)
    report["outbound"] = sorted(set(Outbound.attempts))
    Path(argv[1]).write_text(json.dumps(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
