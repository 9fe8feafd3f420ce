"""Judges with planted flaws, for the judge card's tests: one OpenAI-compatible loopback server
(``judgeserver.JudgeServer``: the real ``openai`` client and the project's backend talk to it)
whose "model" name picks the judge. Each reads l3score's prompt (question, ground-truth answer,
candidate answer) and answers "Yes" or "No", with top log-probabilities as a real server gives
them.

The sound judge says Yes when the candidate holds every fact of the ground truth (its numbers
and its capitalised names past a sentence's first word), Markdown stripped. The others are the
sound judge with one flaw:

- ``verbose``: favours long answers: Yes to any answer of 4 sentences or more;
- ``obedient``: obeys instructions inside the answer: Yes when the answer addresses the
  evaluator, grader or judge;
- ``markdown``: flips its verdict when the answer holds Markdown (bold, bullet lines);
- ``random``: sampled at a high temperature: the first answer to a prompt is the sound one, and
  every later answer to the same prompt is a coin toss (seeded by the prompt and the count, so a
  test run is reproducible);
- ``yes``: always Yes;
- ``sound``: no flaw.

:class:`ContextJudges` rates g_eval's requests against their contexts: a sound judge and one
that reads only the first context (a position bias, which the ``order`` check finds).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from judgeserver import JudgeServer, fenced_fields

_PROMPT = re.compile(r"Question: (.*?)\nGround-truth answer: (.*?)\nCandidate answer: (.*)\n"
                     r"Is the semantic meaning", re.DOTALL)
_STARTS = re.compile(r"(?:^|[.!?]\s+)([A-Z][a-z]+)")
JUDGES = ("sound", "verbose", "obedient", "markdown", "random", "yes")
# the checks each judge must fail (a random judge only shows it when asked again)
PLANTED = {"sound": set(), "verbose": {"verbosity"}, "obedient": {"injection"},
           "markdown": {"format"}, "random": {"repeat"}, "yes": {"fact_swap", "answer_swap"}}


def key_facts(text: str) -> set[str]:
    first_words = {m.start(1) for m in _STARTS.finditer(text)}
    names = {m.group() for m in re.finditer(r"\b[A-Z][a-z]+\b", text)
             if m.start() not in first_words}
    return set(re.findall(r"\d+", text)) | names


def plain(text: str) -> str:
    return re.sub(r"^\s*-\s+", "", text.replace("**", ""), flags=re.MULTILINE)


def sound_verdict(truth: str, answer: str) -> bool:
    words = set(re.findall(r"\w+", plain(answer)))
    return key_facts(truth) <= words


class FlawedJudges(JudgeServer):
    """The six judges behind one URL; ``seen`` (every request body) as ``JudgeServer``."""

    def __init__(self) -> None:
        super().__init__(self.answer_of, top_logprobs=self.top_of)
        self.asked: Counter[str] = Counter()
        self._count_lock = threading.Lock()

    def options(self, model: str, api_key: str, cache: Path | None = None) -> dict[str, Any]:
        """The judge options of ``model`` behind this server (its calls cached in ``cache``)."""
        found = {"provider": "openai-compatible", "base_url": self.url, "model": model,
                 "api_key": api_key}
        if cache is not None:
            found.update(cache_dir=str(cache), max_concurrency=16)
        return found

    def verdict(self, body: dict[str, Any]) -> bool:
        content = body["messages"][-1]["content"]
        found = _PROMPT.search(content)
        if found is None:
            raise ValueError("not an l3score prompt")
        _, truth, answer = found.groups()
        model = body["model"]
        sound = sound_verdict(truth, answer)
        if model == "yes":
            return True
        if model == "verbose":
            return sound or len(re.findall(r"[.!?](?:\s|$)", answer)) >= 4
        if model == "obedient":
            return sound or bool(re.search(r"(?i)\b(evaluator|grader|judge)\b", answer))
        if model == "markdown":
            return (not sound) if ("**" in answer or "\n- " in "\n" + answer) else sound
        if model == "random":
            with self._count_lock:
                self.asked[model + content] += 1
                count = self.asked[model + content]
            if count == 1:
                return sound
            digest = hashlib.sha256(f"{count}:{content}".encode()).digest()
            return digest[0] % 2 == 0
        if model == "sound":
            return sound
        raise ValueError(f"no judge named {model!r}")

    def answer_of(self, body: dict[str, Any]) -> str:
        body["_verdict"] = self.verdict(body)
        return "Yes" if body["_verdict"] else "No"

    def top_of(self, body: dict[str, Any]) -> list[tuple[str, float]]:
        if body.get("_verdict", True):
            return [("Yes", -0.01), ("No", -4.6), ("yes", -6.0), ("The", -7.0), ("I", -8.0)]
        return [("No", -0.01), ("Yes", -4.6), ("no", -6.0), ("The", -7.0), ("I", -8.0)]


def bridge_rows(n: int = 120, wrong_every: int = 4) -> list[dict[str, Any]]:
    """``n`` question-answering rows, one town and one year each (all different); every
    ``wrong_every``-th answer gives the wrong year."""
    syllables = ["ka", "lo", "mi", "ren", "tor", "vel", "sa", "dun", "bri", "hal", "mor", "quin"]
    rows = []
    for i in range(n):
        a, b, c = i % 12, (i // 12) % 12, (i * 7 + 3) % 12
        town = (syllables[a] + syllables[b] + syllables[c]).capitalize()
        year = 1800 + i
        said = year + 50 if i % wrong_every == 0 else year
        rows.append({"question": f"In what year did the bridge at {town} open?",
                     "prediction": f"The bridge at {town} opened in {said}.",
                     "reference": f"It opened in {year}."})
    return rows


class ContextJudges(JudgeServer):
    """Two g_eval judges of an answer against its contexts (fenced JSON list), rating 1 to 5
    with top log-probabilities: ``sound`` rates 5 when any context holds every fact of the
    answer (``key_facts``) and 1 otherwise; ``first`` (a position bias) reads only the first
    context."""

    def __init__(self) -> None:
        super().__init__(self.answer_of, top_logprobs=self.top_of)

    def rating(self, body: dict[str, Any]) -> str:
        fields = fenced_fields(body)
        contexts = json.loads(fields["contexts"])
        facts = key_facts(plain(fields["text"]))
        read = contexts[:1] if body["model"] == "first" else contexts
        return "5" if any(facts <= set(re.findall(r"\w+", c)) for c in read) else "1"

    def answer_of(self, body: dict[str, Any]) -> str:
        return self.rating(body)

    def top_of(self, body: dict[str, Any]) -> list[tuple[str, float]]:
        rating = self.rating(body)
        return [(rating, -0.01)] + [(s, -6.0 - k) for k, s in enumerate("12345") if s != rating]


def context_rows(n: int = 80) -> list[dict[str, Any]]:
    """``n`` rows whose answer (a year) is held by one of three contexts, the first in half of
    them."""
    rows = []
    for i, row in enumerate(bridge_rows(n, wrong_every=n + 1)):
        town, year = re.fullmatch(r"The bridge at (\w+) opened in (\d+)\.",
                                  row["prediction"]).groups()
        held = f"The records say the bridge at {town} opened in {year}."
        others = [f"The bridge was painted in {2000 + i % 20}.", "Tolls were never charged."]
        contexts = [held, *others] if i % 2 == 0 else [others[0], held, others[1]]
        rows.append({"prediction": row["prediction"], "contexts": contexts})
    return rows
