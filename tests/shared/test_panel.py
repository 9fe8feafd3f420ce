"""A panel of judges: the aggregates and Krippendorff's alpha against independent computations
(the ``krippendorff`` package, numpy, statistics), and real two-model panels (SmolLM2-135M and
Gemma-3-270M, each behind its own llama.cpp server): each judge's scores against that judge
alone, a judge that fails on one sample, per-judge cache keys, a rerun with 0 requests, the
CLI's repeatable ``--judge``."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import evaluate
import krippendorff
import numpy as np
import pytest
from faultproxy import FaultProxy

from shared.base.types import JudgeRequest
from shared.cli.main import main
from shared.engine.config import judge_config, judge_configs
from shared.engine.runner import get_judge
from shared.kit import panel_stats
from shared.kit.panel import panel_agreement

QUESTIONS = ["What is the capital of France?", "How many legs does a spider have?",
             "What is 2 + 2?"]
PREDICTIONS = ["Paris", "Six", "4"]
REFERENCES = ["Paris", "Eight", "4"]
MARKER = "spider"  # the failing judge's proxy refuses the requests that mention it


def _reference_alpha(matrix: np.ndarray, level: str) -> float:
    return float(krippendorff.alpha(reliability_data=matrix.T, level_of_measurement=level))


def _random_ratings(rng: np.random.Generator, level: str) -> np.ndarray:
    units, judges = int(rng.integers(4, 40)), int(rng.integers(2, 5))
    if level == "nominal":
        matrix = rng.integers(0, 2, size=(units, judges)).astype(float)
    else:
        matrix = rng.random((units, judges)).round(3)
    matrix[rng.random(matrix.shape) < 0.2] = np.nan
    return matrix


@pytest.mark.parametrize("level", ["interval", "nominal"])
def test_alpha_matches_the_krippendorff_package(level: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        matrix = _random_ratings(rng, level)
        expected = _reference_alpha(matrix, level)
        got = panel_stats.krippendorff_alpha(matrix, level)
        if np.isnan(expected):
            assert got is None
        else:
            assert got == pytest.approx(expected, abs=1e-12)


def test_alpha_is_none_when_undefined() -> None:
    assert panel_stats.krippendorff_alpha([[1.0, 1.0], [1.0, 1.0]]) is None  # no variation
    assert panel_stats.krippendorff_alpha([[1.0, None], [None, 0.0]]) is None  # nothing paired
    assert panel_agreement([[0.2, 0.4]])["judge_agreement"] is None  # one judge


def test_the_bootstrap_interval_resamples_samples_as_an_independent_loop_does() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.random((25, 3)).round(2)
    matrix[2, 1] = np.nan
    low, high = panel_stats.alpha_interval(matrix, "interval", n_resamples=300, seed=11)
    pairable = matrix[(~np.isnan(matrix)).sum(axis=1) >= 2]
    draws = np.random.default_rng(11).integers(0, len(pairable), size=(300, len(pairable)))
    alphas = [_reference_alpha(pairable[d], "interval") for d in draws]
    assert [low, high] == pytest.approx(list(np.percentile(alphas, [2.5, 97.5])), abs=1e-9)
    assert panel_stats.alpha_interval(matrix, "interval", n_resamples=300, seed=11) == [low, high]


def test_combine_mean_median_majority() -> None:
    values = [0.2, 0.9, 0.4, 0.7]
    assert panel_stats.combine(values, "mean") == pytest.approx(np.mean(values))
    assert panel_stats.combine(values, "median") == pytest.approx(statistics.median(values))
    assert panel_stats.combine([1, 0, 1], "majority") == 1.0
    assert panel_stats.combine([0, 0, 1], "majority") == 0.0
    assert panel_stats.combine([1, 0], "majority") == panel_stats.MAJORITY_TIE == 0.5
    with pytest.raises(ValueError, match="0/1"):
        panel_stats.combine([0.5, 1], "majority")


def test_a_judge_inherits_the_top_level_but_never_another_providers_key() -> None:
    config = judge_config(provider="openai", api_key="sk-top", model="gpt-4o-mini", timeout=7.0,
                          judges=[{"model": "gpt-4o"},
                                  {"provider": "openai-compatible",
                                   "base_url": "http://127.0.0.1:9/v1", "model": "m"}])
    first, second = judge_configs(config)
    assert (first.provider, first.model, first.api_key, first.timeout) == \
        ("openai", "gpt-4o", "sk-top", 7.0)
    assert (second.provider, second.api_key, second.timeout) == ("openai-compatible", None, 7.0)
    assert "sk-top" not in repr(config)
    with pytest.raises(ValueError, match=r"judges\[1\]: .*needs base_url"):
        judge_config(judges=[{}, {"provider": "openai-compatible"}])
    with pytest.raises(ValueError, match="whole panel"):
        judge_config(judges=[{"panel_aggregate": "mean"}])
    with pytest.raises(TypeError, match=r"judges\[0\] must be a dict"):
        judge_config(judges=["openai"])


# ------------------------------------------------------------- real two-model panels


def _judge(base_url: str, model: str, **options: Any) -> dict[str, Any]:
    return {"provider": "openai-compatible", "base_url": base_url, "model": model, **options}


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One call cache for the tests that count no requests (the same rows, the same judges)."""
    return str(tmp_path_factory.mktemp("panel-cache"))


@pytest.fixture(scope="module")
def l3score() -> evaluate.EvaluationModule:
    return evaluate.load("metrics/l3score")


def _l3(metric: evaluate.EvaluationModule, cache_dir: str, **options: Any) -> dict[str, Any]:
    return metric.compute(questions=QUESTIONS, predictions=PREDICTIONS, references=REFERENCES,
                          cache_dir=cache_dir, show_progress=False, **options)


@pytest.mark.server
def test_a_two_model_panel_through_the_real_servers(
        l3score: evaluate.EvaluationModule, llama_server: str, gemma_server: str,
        shared_cache: str) -> None:
    cache_dir = shared_cache
    judges = [_judge(llama_server, "smollm2"), _judge(gemma_server, "gemma3")]
    result = _l3(l3score, cache_dir, judges=judges)
    # each judge alone, on the same cache: the panel's answers, 0 requests
    alone = [_l3(l3score, cache_dir, **judge) for judge in judges]
    assert [a["usage"]["calls"] for a in alone] == [0, 0]
    per_judge = [[d["judge_scores"][k] for d in result["details"]] for k in range(2)]
    assert per_judge == [a["scores"] for a in alone]
    assert per_judge[0] != per_judge[1]  # two model families disagree on these samples
    assert result["scores"] == pytest.approx([np.mean(s) for s in zip(*per_judge, strict=True)])
    assert result["L3Score"] == pytest.approx(np.mean(result["scores"]))
    matrix = np.array(per_judge).T
    assert result["judge_agreement"] == pytest.approx(_reference_alpha(matrix, "interval"))
    assert result["judge_agreement_level"] == "interval"
    low, high = result["judge_agreement_ci"]
    assert low <= high
    # usage and cost: per judge and in total
    assert [j["judge"] for j in result["judges"]] == ["openai-compatible/smollm2",
                                                      "openai-compatible/gemma3"]
    assert [j["L3Score"] for j in result["judges"]] == [a["L3Score"] for a in alone]
    for key in ("calls", "cache_hits", "prompt_tokens"):
        assert result["usage"][key] == sum(j["usage"][key] for j in result["judges"])
    assert [j["usage"]["calls"] + j["usage"]["cache_hits"] for j in result["judges"]] == [3, 3]
    assert result["Cost"] is None  # a self-hosted model has no known price

    again = _l3(l3score, cache_dir, judges=judges, panel_aggregate="median")
    assert again["usage"]["calls"] == 0 and again["usage"]["cache_hits"] == 6
    assert again["scores"] == pytest.approx(
        [statistics.median(s) for s in zip(*per_judge, strict=True)])
    with pytest.raises(ValueError, match="majority.*0/1"):
        _l3(l3score, cache_dir, judges=judges, panel_aggregate="majority")


@pytest.mark.server
def test_each_judge_has_its_own_cache_key(llama_server: str, gemma_server: str) -> None:
    config = judge_config(judges=[_judge(llama_server, "smollm2"),
                                  _judge(gemma_server, "gemma3")])
    request = JudgeRequest([("user", "Is Paris in France?")], "probe")
    keys = {get_judge(c).call_key("yes_no", request, {}, {"top_k": 5})
            for c in judge_configs(config)}
    assert len(keys) == 2


@pytest.mark.server
def test_a_judge_that_fails_leaves_the_sample_to_the_others(
        l3score: evaluate.EvaluationModule, llama_server: str, gemma_server: str,
        shared_cache: str) -> None:
    cache_dir = shared_cache  # the proxy is a new endpoint: its judge's answers are not cached
    def refuse(_number: int, body: dict[str, Any]) -> str | None:
        return "status:500" if MARKER in json.dumps(body) else None

    with FaultProxy(gemma_server, default="pass", rule=refuse) as proxy:
        judges = [_judge(llama_server, "smollm2"),
                  _judge(proxy.url, "gemma3", max_retries=0)]
        result = _l3(l3score, cache_dir, judges=judges)
    failed = result["details"][1]
    assert failed["judge_scores"][0] is not None and failed["judge_scores"][1] is None
    assert failed["judge_errors"][0] is None and "500" in failed["judge_errors"][1]
    assert result["scores"][1] == failed["judge_scores"][0]  # scored by the other judge
    assert result["unmeasured"] == []
    assert [j["unmeasured"] for j in result["judges"]] == [0, 1]
    assert "judge_errors" not in result["details"][0]
    # alpha over what both judges rated: the refused sample counts for neither
    per_judge = np.array([d["judge_scores"] for d in result["details"]], dtype=float)
    expected = _reference_alpha(per_judge, "interval")
    assert result["judge_agreement"] == pytest.approx(expected)


def _summary_cells(stdout: str, metric: str) -> list[str]:
    return next(line.split() for line in stdout.splitlines() if line.startswith(metric + " "))


@pytest.mark.server
def test_the_cli_takes_repeatable_judges(tmp_path: Path, llama_server: str, gemma_server: str,
                                         shared_cache: str,
                                         capsys: pytest.CaptureFixture) -> None:
    cache_dir = shared_cache
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps({"question": q, "prediction": p, "reference": r}) + "\n"
                              for q, p, r in zip(QUESTIONS, PREDICTIONS, REFERENCES,
                                                 strict=True)))
    out, html = tmp_path / "scored.jsonl", tmp_path / "report.html"
    common = ["score", str(source), "--metric", "l3score", "--out", str(out),
              "--cache-dir", cache_dir, "-q"]
    argv = [*common, "--html", str(html),
            "--judge", f"provider=openai-compatible,model=smollm2,base_url={llama_server}",
            "--judge", f"provider=openai-compatible,model=gemma3,base_url={gemma_server}"]
    assert main(argv) == 0, capsys.readouterr().err
    first = _summary_cells(capsys.readouterr().out, "l3score")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    per_judge = [[row[f"l3score_judge_{k}"] for row in rows] for k in (1, 2)]
    assert [row["l3score"] for row in rows] == pytest.approx(
        [np.mean(s) for s in zip(*per_judge, strict=True)])
    alpha = _reference_alpha(np.array(per_judge).T, "interval")
    assert f"judge_agreement={alpha:.4f}" in first
    assert first[-5] == "0" and int(first[-4]) + int(first[-3]) == 6  # unmeasured, requests
    assert first[-2] == "unknown"  # a self-hosted model has no known price
    # the report: each judge's column, the spread, the rows where the judges disagree most
    page = html.read_text()
    data = json.loads(page.split('id="report-data">', 1)[1].split("</script>", 1)[0])
    keys = [c["key"] for c in data["columns"]]
    assert keys[-4:] == ["l3score", "l3score_judge_1", "l3score_judge_2", "l3score_judge_spread"]
    gaps = [abs(a - b) for a, b in zip(*per_judge, strict=True)]
    assert [r["h"] for r in data["rows"]] == [g == max(gaps) for g in gaps]  # top 10%: 1 row
    assert "Panel of judges" in page and "openai-compatible/gemma3" in page

    assert main(argv) == 0  # a rerun: every answer from the cache
    assert _summary_cells(capsys.readouterr().out, "l3score")[-5:-1] == [
        "0", "0", "6", "unknown"]

    with pytest.raises(SystemExit) as exit_info:
        main([*common, "--judge", "provider=openai-compatible,nope=1"])
    assert exit_info.value.code == 2
    assert "NAME=VALUE" in capsys.readouterr().err


@pytest.mark.server
def test_agree_sets_each_judge_beside_the_panel(llama_server: str, gemma_server: str,
                                                shared_cache: str, tmp_path: Path) -> None:
    import datasets

    from shared.analysis.agreement import agree, compare
    from shared.analysis.report import write_agreement_html

    rows = datasets.Dataset.from_dict({"question": QUESTIONS, "prediction": PREDICTIONS,
                                       "reference": REFERENCES,
                                       "correct": [True, False, True]})
    judges = [_judge(llama_server, "smollm2"), _judge(gemma_server, "gemma3")]
    scored, report = agree(rows, "l3score", "correct", judges=judges, cache_dir=shared_cache,
                           show_progress=False, n_resamples=50)
    assert report.judge == {"provider": "panel", "model": "openai-compatible/smollm2 + "
                            "openai-compatible/gemma3"}
    for k, judge in enumerate(report.judges):
        alone = compare(scored[f"l3score_judge_{k + 1}"], scored["correct"], threshold=0.5,
                        threshold_source="metric", n_resamples=50)
        assert judge["statistics"] == [vars(s) for s in alone.statistics]
    per_judge = np.array([scored["l3score_judge_1"], scored["l3score_judge_2"]]).T
    assert report.judge_agreement["judge_agreement"] == pytest.approx(
        _reference_alpha(per_judge, "interval"))
    table = report.table()
    assert "judge 2: openai-compatible/gemma3" in table and "Krippendorff" in table
    page = write_agreement_html(report.as_dict(), tmp_path / "agree.html")
    assert "judge 2: openai-compatible/gemma3</th>" in page
    assert "The panel and each judge against the labels" in page


@pytest.mark.server
def test_the_demo_adds_a_second_judge(llama_server: str, gemma_server: str, shared_cache: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    from shared.demo import build_demo
    from shared.engine.backends.pool import live_backends

    monkeypatch.setenv("JUDGE_METRICS_CACHE_DIR", shared_cache)
    keys = ["sk-first-PANEL-0123456789abcdef", "sk-second-PANEL-0123456789abcdef"]
    panel = build_demo(["l3score"]).jm_panels["l3score"]
    values = panel.initial_values()
    values[panel.table] = pd.DataFrame({"question": QUESTIONS[:2],
                                        "prediction": PREDICTIONS[:2],
                                        "reference": REFERENCES[:2]})
    for name, value in {"provider": "openai-compatible", "base_url": llama_server,
                        "model": "smollm2", "api_key": keys[0],
                        "judge2_provider": "openai-compatible", "judge2_base_url": gemma_server,
                        "judge2_model": "gemma3", "judge2_api_key": keys[1],
                        "panel_aggregate": "median"}.items():
        values[panel.judge_fields[name]] = value
    out = panel.handle(values)
    raw = out[panel.outputs["raw"]]
    assert [j["judge"] for j in raw["judges"]] == ["openai-compatible/smollm2",
                                                   "openai-compatible/gemma3"]
    per_judge = [d["judge_scores"] for d in raw["details"]]
    assert raw["scores"] == pytest.approx([statistics.median(s) for s in per_judge])
    shown_alpha = re.search(r"judge_agreement</span> ([-0-9.]+)", out[panel.outputs["aggregate"]])
    assert shown_alpha and float(shown_alpha[1]) == pytest.approx(
        _reference_alpha(np.array(per_judge, dtype=float), "interval"), abs=5e-5)
    shown = json.dumps({str(k): str(v) for k, v in out.items()})
    assert not any(key in shown for key in keys)
    assert not any(backend.uses_api_key(key) for backend in live_backends()
                   for key in keys if hasattr(backend, "uses_api_key"))


@pytest.mark.server
@pytest.mark.slow
def test_a_panel_of_two_protocols(llama_server: str, gemma_server: str,
                                  shared_cache: str) -> None:
    """Anthropic's Messages API (a fake written from its reference, answering through the
    SmolLM2 server: no log-probabilities, so the written label) beside an OpenAI-compatible
    judge (Gemma-3-270M): each judge's scores as that judge alone, the mean, the alpha."""
    from fakes.anthropic import FakeAnthropic

    from shared.kit.registry import metric_path

    pairwise = evaluate.load(metric_path("pairwise"))
    # one sample: the 135M model often writes no A/B label, an answer never cached
    inputs = dict(predictions=PREDICTIONS[:1], baseline_predictions=["Lyon"],
                  questions=QUESTIONS[:1], cache_dir=shared_cache, show_progress=False)
    key = "sk-ant-panel-test-0123456789"
    with FakeAnthropic(llama_server, key) as fake:
        judges = [{"provider": "anthropic", "base_url": fake.url, "api_key": key,
                   "model": "claude-haiku-4-5"},
                  _judge(gemma_server, "gemma3")]
        result = pairwise.compute(**inputs, judges=judges)
        alone = [pairwise.compute(**inputs, **judge) for judge in judges]
    per_judge = [[d["judge_scores"][k] for d in result["details"]] for k in range(2)]
    # a measured answer is cached; an unusable one is asked again (and may stay unusable)
    for ours, own in zip(per_judge, alone, strict=True):  # at most two orders a sample
        assert own["usage"]["calls"] <= ours.count(None) * 2
    for ours, own in zip(per_judge, (a["scores"] for a in alone), strict=True):
        assert [s for s in ours if s is not None] == [s for s, o in zip(own, ours, strict=True)
                                                      if o is not None]
    for score, judged in zip(result["scores"], zip(*per_judge, strict=True), strict=True):
        measured = [s for s in judged if s is not None]
        assert score == (pytest.approx(np.mean(measured)) if measured else None)
    expected = _reference_alpha(np.array(per_judge, dtype=float).T, "interval") \
        if sum(all(s is not None for s in judged) for judged in zip(*per_judge,
                                                                    strict=True)) else None
    if expected is None or np.isnan(expected):
        assert result["judge_agreement"] is None
    else:
        assert result["judge_agreement"] == pytest.approx(expected)
    assert result["judges"][0]["Cost"] is not None  # a listed price: the Anthropic model's
    assert result["Cost"] is None  # the self-hosted judge has none
