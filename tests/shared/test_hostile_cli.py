"""The command line under a hostile user: every error path redacts the keys written on the
command line, and mistakes end in one line and exit 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judgeserver import JudgeServer

from shared import judge_config
from shared.cli.main import main

KEYS = ("ABCDEF123456XYZ", "sk-proj-abcdefghijklmnop", "hunter2-is-my-key", "x" * 40)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("spec", [
    "provider=openai,api_key={key},modle=gpt-4o-mini",
    "provider=openai,api_key={key},timeout=abc",
    "provdier=openai,api_key={key}",
    "api_key={key},model=m,max_concurrency=-3",
    "{key}"])
def test_a_bad_judge_spec_never_echoes_its_key(spec: str, key: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as info:
        main(["score", str(tmp_path / "x.jsonl"), "-m", "l3score", "--out",
              str(tmp_path / "o.jsonl"), "--judge", spec.format(key=key)])
    captured = capsys.readouterr()
    assert info.value.code == 2 and "--judge" in captured.err
    assert key not in captured.err + captured.out


@pytest.mark.parametrize("key", KEYS)
def test_a_key_given_to_the_wrong_flag_is_not_echoed(key: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as info:
        main(["score", str(tmp_path / "x.jsonl"), "-m", "l3score", "--api-key", key,
              "--timeout", key])
    assert info.value.code == 2 and key not in capsys.readouterr().err


def rows(path: Path, n: int = 3) -> Path:
    path.write_text("".join(json.dumps(
        {"question": f"Capital of country {i}?", "prediction": "Paris", "reference": "Paris",
         "contexts": ["Paris is the capital of France."]}) + "\n" for i in range(n)))
    return path


def one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("judge-metrics: error: "), err
    return err[0]


def test_a_panel_checks_every_judge_before_any_request(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture) -> None:
    """The judge without log-probabilities second: the first is asked nothing."""
    monkeypatch.setenv("MISTRAL_API_KEY", "mistral-test-key")
    with JudgeServer(lambda body: "Yes", top_logprobs=lambda body: [("Yes", -0.1)]) as server:
        first = f"provider=openai-compatible,base_url={server.url},model=m"
        for judges in ([first, "provider=mistral"], ["provider=mistral", first]):
            line = one_line_exit_2(
                ["score", str(rows(tmp_path / "in.jsonl")), "-m", "l3score", "-q", "--out",
                 str(tmp_path / "o.jsonl"), "--cache-dir", str(tmp_path / "c"),
                 *(x for j in judges for x in ("--judge", j))], capsys)
            assert "mistral" in line and "log-probabilities" in line
        assert server.seen == []


def test_a_single_judge_without_a_capability_is_one_line(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "mistral-test-key")
    line = one_line_exit_2(["score", str(rows(tmp_path / "in.jsonl")), "-m", "l3score", "-q",
                            "--out", str(tmp_path / "o.jsonl"), "--provider", "mistral"], capsys)
    assert "provider='mistral'" in line


def test_majority_on_graded_scores_is_one_line(tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    with JudgeServer(lambda body: "Yes",
                     top_logprobs=lambda body: [("Yes", -0.3), ("No", -1.5)]) as server:
        judges = [f"provider=openai-compatible,base_url={server.url},model={m}"
                  for m in ("a", "b")]
        line = one_line_exit_2(
            ["score", str(rows(tmp_path / "in.jsonl")), "-m", "l3score", "-q", "--out",
             str(tmp_path / "o.jsonl"), "--cache-dir", str(tmp_path / "c"),
             "--panel-aggregate", "majority", *(x for j in judges for x in ("--judge", j))],
            capsys)
    assert "majority" in line and "0/1 scores" in line


@pytest.mark.parametrize(("env", "says"), [
    ({}, "needs an AWS region"),
    ({"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIATESTTESTTEST"},
     "PartialCredentialsError")])
def test_bedrock_without_region_or_with_partial_credentials_is_one_line(
        env: dict[str, str], says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
                 "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    line = one_line_exit_2(["score", str(rows(tmp_path / "in.jsonl")), "-m", "faithfulness",
                            "-q", "--out", str(tmp_path / "o.jsonl"), "--provider", "bedrock",
                            "--model", "anthropic.claude-3-haiku"], capsys)
    assert says in line


@pytest.mark.parametrize(("provider", "variable"), [
    ("anthropic", "ANTHROPIC_BASE_URL"), ("azure", "AZURE_OPENAI_ENDPOINT")])
@pytest.mark.parametrize("url", ["http://user:pw-secret@127.0.0.1:9/v1", "not a url",
                                 "ftp://127.0.0.1/v1", "http://127.0.0.1:99999"])
def test_a_base_url_from_the_environment_passes_the_same_checks(
        provider: str, variable: str, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variable, url)
    with pytest.raises(ValueError) as info:
        judge_config(provider=provider, api_key="test-key-123456", model="m")
    assert variable in str(info.value) and "pw-secret" not in str(info.value)


@pytest.mark.parametrize("key", [" ", "\t\n", "   "])
def test_a_blank_key_is_a_missing_key(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="needs an API key .the key given is blank."):
        judge_config(provider="openai", api_key=key, model="gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with pytest.raises(ValueError, match="needs an API key"):
        judge_config(provider="openai", model="gpt-4o-mini")


def graded(body: dict) -> list[tuple[str, float]]:
    """Top log-probabilities that differ by judge (model) and question: some agreement."""
    import hashlib

    digest = hashlib.sha256(json.dumps([body.get("model"), body["messages"]]).encode()).digest()
    return [("Yes", -0.05 - digest[0] / 64.0), ("No", -0.05 - digest[1] / 64.0)]


def test_a_gate_on_judge_agreement_reads_the_panels_alpha(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    from shared.analysis.gates import evaluate_gates

    with JudgeServer(lambda body: "Yes", top_logprobs=graded) as server:
        judges = [f"provider=openai-compatible,base_url={server.url},model={m}"
                  for m in ("a", "b")]
        base = ["score", str(rows(tmp_path / "in.jsonl", 8)), "-m", "l3score", "-q",
                "--out", str(tmp_path / "o.jsonl"), "--cache-dir", str(tmp_path / "c"),
                *(x for j in judges for x in ("--judge", j))]
        assert main([*base, "--gate", "l3score.judge_agreement>=-1"]) == 0
        printed = capsys.readouterr().out
        assert main([*base, "--gate", "l3score.judge_agreement>=1"]) == 1
        scored = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
        import krippendorff

        alpha = krippendorff.alpha(reliability_data=[[r["l3score_judge_1"] for r in scored],
                                                     [r["l3score_judge_2"] for r in scored]],
                                   level_of_measurement="interval")
        assert f"{alpha:.4f}" in printed
        output = {"L3Score": 0.5, "judge_agreement": alpha,
                  "judge_agreement_ci": [alpha - 0.1, alpha + 0.1],
                  "scores": [r["l3score"] for r in scored]}
        (outcome,) = evaluate_gates(output, "l3score.judge_agreement>=0.5", gate_on="lower")
        assert outcome.gated == pytest.approx(alpha - 0.1)
        assert outcome.passed == (alpha - 0.1 >= 0.5)
    capsys.readouterr()
    line = one_line_exit_2(base[:9] + ["--gate", "l3score.judge_agreement>=0.5"], capsys)
    assert "two or more --judge" in line
