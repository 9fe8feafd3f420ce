"""Secrets: an API key given as an argument or an environment variable appears in no cache file,
log line, stderr/stdout, exception message, metric output or CLI output file.

The judge is the real llama.cpp server (it ignores keys) behind a :class:`FaultProxy`, with
``provider="openai"`` (a remote provider, so the key is required and sent) and ``base_url`` set to
the proxy. Each test first checks that the key really was sent (the proxy saw it in the
``Authorization`` header), so the "nowhere else" checks cannot pass vacuously. One fault makes
the server quote the key back in its error message, as some proxies do.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultproxy import FaultProxy

from shared.base.redaction import redact
from shared.engine.backends.base import LogprobsUnavailable
from shared.engine.config import judge_config

pytestmark = pytest.mark.server

KEY = "sk-test-SECRET-1234567890"
METRICS = ("l3score", "context_relevance")  # loaded by the metrics fixture
FRAGMENTS = (KEY, "SECRET-1234567890", "1234567890")
REPO = Path(__file__).resolve().parent.parent
REPLAY: dict[bytes, Any] = {}

L3_INPUTS = {"questions": ["What is the capital of France?", "How many legs does a spider have?"],
             "predictions": ["Paris", "Eight"], "references": ["Paris", "Six"]}
CR_INPUTS = {"questions": ["What is the capital of France?"],
             "contexts": [["Paris is the capital of France."]]}


def assert_no_key(where: str, text: str | bytes) -> None:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    for fragment in FRAGMENTS:
        assert fragment not in text, f"the API key ({fragment!r}) leaked into {where}"


def assert_no_key_in_folder(folder: str | Path) -> None:
    files = [p for p in Path(folder).rglob("*") if p.is_file()]
    assert files, f"nothing was written under {folder}"
    for path in files:
        assert_no_key(str(path), path.read_bytes())


@pytest.fixture()
def proxy(llama_server: str) -> Iterator[FaultProxy]:
    with FaultProxy(llama_server, replay=REPLAY) as p:
        yield p


@pytest.fixture()
def captured(caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> Iterator[Any]:
    """Everything logged at DEBUG (any logger) and written to fd 1/2, as one text."""
    caplog.set_level(logging.DEBUG)

    def text() -> str:
        out, err = capfd.readouterr()
        records = []
        for record in caplog.records:
            records.append(record.getMessage())
            if record.exc_info:
                records.append(logging.Formatter().formatException(record.exc_info))
        return "\n".join([caplog.text, *records, out, err])

    yield text


def options(proxy: FaultProxy, cache_dir: str, **more: Any) -> dict[str, Any]:
    return {"provider": "openai", "base_url": proxy.url, "model": "smollm2",
            "response_format": "json_object", "cache_dir": cache_dir, "max_retries": 0,
            "show_progress": True, **more}


def assert_key_was_sent(proxy: FaultProxy) -> None:
    assert proxy.seen, "no request reached the proxy"
    for seen in proxy.seen:
        auth = seen.headers.get("Authorization") or seen.headers.get("authorization")
        assert auth == f"Bearer {KEY}", "the key was not sent to the server"


def run_everything(metrics: dict[str, Any], proxy: FaultProxy, cache_dir: str,
                   key_option: dict[str, Any]) -> list[str]:
    """Scored runs, failing runs and error paths; returns every text they produced."""
    texts = []
    # a scored run (the structured path's real answers are slow; its failures are below)
    result = metrics["l3score"].compute(**L3_INPUTS, **options(proxy, cache_dir), **key_option)
    assert result["unmeasured"] == [], result["unmeasured"]
    texts.append(json.dumps(result, default=repr))
    # a server that quotes the key in its 401, and one that fails with 500
    for fault in ("echo_auth:401", "status:500"):
        proxy.default = fault
        for name, inputs in (("l3score", L3_INPUTS), ("context_relevance", CR_INPUTS)):
            fresh = {k: [v + " (again)" if isinstance(v, str) else v for v in vs]
                     for k, vs in inputs.items()}
            result = metrics[name].compute(**fresh, **options(proxy, cache_dir), **key_option)
            assert len(result["unmeasured"]) == len(fresh["questions"])
            texts.append(json.dumps(result, default=repr))
    assert any("Incorrect API key" in t for t in texts), "the echoing server was not reached"
    # log-probabilities missing after the backend had them: a row fault with its reason
    # (the first sample again, uncached: the proxy replays its real answer without logprobs)
    proxy.default = "no_logprobs"
    first = {k: v[:1] for k, v in L3_INPUTS.items()}
    result = metrics["l3score"].compute(**first, **options(proxy, cache_dir, use_cache=False),
                                        **key_option)
    assert "no log-probabilities" in result["unmeasured"][0]["reason"]
    texts.append(json.dumps(result, default=repr))
    # a configuration error raised out of compute: a fresh backend (another concurrency) whose
    # model never returned log-probabilities
    with pytest.raises(LogprobsUnavailable) as info:
        metrics["l3score"].compute(**first, **options(proxy, cache_dir, use_cache=False,
                                                      max_concurrency=3), **key_option)
    texts += [str(info.value), repr(info.value)]
    # input errors with the key in play
    for bad in ({"max_concurrency": 0}, {"base_url": "not a url"}, {"timeout": -1}):
        with pytest.raises((ValueError, TypeError)) as info:
            metrics["l3score"].compute(**L3_INPUTS, **{**options(proxy, cache_dir), **bad},
                                       **key_option)
        texts += [str(info.value), repr(info.value)]
    proxy.default = "pass"
    return texts


def test_key_as_argument(metrics: dict[str, Any], proxy: FaultProxy, cache_dir: str,
                         captured: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    texts = run_everything(metrics, proxy, cache_dir, {"api_key": KEY})
    assert_key_was_sent(proxy)
    for i, text in enumerate(texts):
        assert_no_key(f"output/exception {i}", text)
    assert_no_key("logs, stdout or stderr", captured())
    assert_no_key_in_folder(cache_dir)
    config = judge_config(provider="openai", api_key=KEY, model="smollm2")
    assert_no_key("repr(JudgeConfig)", repr(config) + str(config))


def test_key_from_environment(metrics: dict[str, Any], proxy: FaultProxy, cache_dir: str,
                              captured: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    texts = run_everything(metrics, proxy, cache_dir, {})
    assert_key_was_sent(proxy)
    for i, text in enumerate(texts):
        assert_no_key(f"output/exception {i}", text)
    assert_no_key("logs, stdout or stderr", captured())
    assert_no_key_in_folder(cache_dir)


@pytest.mark.parametrize("how", ["flag"])
def test_cli(proxy: FaultProxy, tmp_path: Path, how: str) -> None:
    """``judge-metrics score`` with the key in OPENAI_API_KEY or --api-key: not in its
    output file, stdout, stderr (debug logging on) or cache folder."""
    source = tmp_path / "input.jsonl"
    rows = [{"question": q, "prediction": p, "reference": r}
            for q, p, r in zip(*L3_INPUTS.values(), strict=True)]
    rows.append({"question": "Fail?", "prediction": "A", "reference": "B"})
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    proxy.rule = lambda _n, body: "echo_auth:401" if "Fail?" in str(body) else None
    out = tmp_path / "scores.jsonl"
    cache = tmp_path / "cache"
    env = {**os.environ, "JUDGE_METRICS_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(REPO)}
    env.pop("OPENAI_API_KEY", None)
    command = [sys.executable, "-c",
               "import logging, sys, runpy; logging.basicConfig(level=logging.DEBUG); "
               "sys.argv = ['shared'] + sys.argv[1:]; runpy.run_module('shared', "
               "run_name='__main__')",
               "score", str(source), "--metric", "l3score", "--out", str(out),
               "--provider", "openai", "--base-url", proxy.url, "--model", "smollm2"]
    if how == "env":
        env["OPENAI_API_KEY"] = KEY
    else:
        command += ["--api-key", KEY]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert_key_was_sent(proxy)
    assert "DEBUG" in done.stderr  # debug logging was on
    assert_no_key("CLI stdout", done.stdout)
    assert_no_key("CLI stderr", done.stderr)
    assert_no_key("CLI output file", out.read_bytes())
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(written) == 3
    assert any("Incorrect API key" in json.dumps(row) for row in written) or (
        "Incorrect API key" in done.stdout + done.stderr)
    assert_no_key_in_folder(cache)



# ------------------------------------------------------------------ every provider's variables

def _bearer_key_variables() -> list[tuple[str, str]]:
    """(provider, variable) for every key variable of every provider whose protocol sends the
    key as ``Authorization: Bearer`` (the OpenAI-compatible backend)."""
    from shared.engine.backends.registry import PROVIDERS

    return [(name, variable) for name, p in PROVIDERS.items()
            if p.backend.startswith("openai_compat:") for variable in p.key_env]


@pytest.mark.parametrize(("provider", "variable"), _bearer_key_variables())
def test_each_provider_key_variable_stays_secret(
        metrics: dict[str, Any], proxy: FaultProxy, cache_dir: str, captured: Any,
        monkeypatch: pytest.MonkeyPatch, provider: str, variable: str) -> None:
    """The key read from the provider's variable is sent, and is in no output, log, cache file
    or repr, nor in the message of a server that quotes it back."""
    from shared.engine.backends.registry import PROVIDERS, providers_with

    for other in PROVIDERS[provider].key_env:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(variable, KEY)
    opts = {**options(proxy, cache_dir), "provider": provider}
    name, inputs = (("l3score", L3_INPUTS) if provider in providers_with("top_logprobs", 5)
                    else ("context_relevance", CR_INPUTS))
    result = metrics[name].compute(**inputs, **opts)
    assert result["unmeasured"] == [], result["unmeasured"]
    assert_key_was_sent(proxy)
    proxy.default = "echo_auth:401"
    echoed = metrics[name].compute(**{k: [v + " (again)" if isinstance(v, str) else v
                                           for v in vs] for k, vs in inputs.items()}, **opts)
    proxy.default = "pass"
    assert echoed["unmeasured"]
    config = judge_config(provider=provider, base_url=proxy.url, model="smollm2")
    assert config.resolved_api_key() == KEY
    for i, text in enumerate((json.dumps(result, default=repr), json.dumps(echoed, default=repr),
                              repr(config), str(config))):
        assert_no_key(f"output {i}", text)
    assert_no_key("logs, stdout or stderr", captured())
    assert_no_key_in_folder(cache_dir)


# ------------------------------------------------------------------ credentials in the base URL

USER, PASSWORD = "alice", "PASSWORD-s3cr3t-42"
BASIC = __import__("base64").b64encode(f"{USER}:{PASSWORD}".encode()).decode()
URL_FRAGMENTS = (PASSWORD, BASIC, BASIC.rstrip("="), f"{USER}:")


def assert_no_password(where: str, text: str) -> None:
    for fragment in URL_FRAGMENTS:
        assert fragment not in text, f"the URL's credentials ({fragment!r}) leaked into {where}"


def with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://{USER}:{PASSWORD}@", 1)


@pytest.mark.parametrize("port", ["", ":notaport", ":99999"])
def test_a_password_in_base_url_is_refused_without_printing_it(
        metrics: dict[str, Any], proxy: FaultProxy, cache_dir: str, captured: Any,
        port: str) -> None:
    """``http://alice:PASSWORD@host/v1`` (also malformed): refused before anything is sent, the
    error shows ``***@``; nothing is logged with it (httpx logs the URL at INFO)."""
    url = with_userinfo(proxy.url)
    if port:
        url = url.replace(url.split("@")[1].split("/")[0],
                          url.split("@")[1].split("/")[0].split(":")[0] + port)
    with pytest.raises(ValueError) as info:
        metrics["l3score"].compute(**L3_INPUTS, **options(proxy, cache_dir, base_url=url),
                                   api_key=KEY)
    message = str(info.value)
    assert "***@" in message and "credentials" in message, message
    assert_no_password("the error", message + repr(info.value))
    assert_no_key("the error", message)
    assert proxy.seen == [], "a request was sent"
    assert_no_password("logs, stdout or stderr", captured())


def cli_refusal(argv: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The command line's exit status, stdout and stderr on ``argv``, run in this process: a
    refusal happens before any work, and a new process would spend its time importing."""
    from shared.cli.main import main

    capfd.readouterr()
    try:
        code = main(argv)
    except SystemExit as exit_info:
        code = exit_info.code
    out, err = capfd.readouterr()
    return code, out, err


def test_cli_refuses_a_password_in_base_url(proxy: FaultProxy, tmp_path: Path,
                                            capfd: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "input.jsonl"
    source.write_text(json.dumps({"question": "q", "prediction": "a", "reference": "a"}) + "\n")
    code, out, err = cli_refusal(
        ["score", str(source), "-m", "l3score", "-o", str(tmp_path / "out.jsonl"), "--provider",
         "openai-compatible", "--model", "smollm2", "--base-url", with_userinfo(proxy.url),
         "--api-key", KEY], capfd)
    assert code == 2
    assert err.count("\n") == 1 and "holds credentials" in err, err
    assert_no_password("CLI stderr", out + err)
    assert_no_key("CLI stderr", out + err)
    assert proxy.seen == []


SCHEMELESS = [f"{USER}:{PASSWORD}@127.0.0.1:9/v1", f"//{USER}:{PASSWORD}@127.0.0.1:9/v1",
              f"http://{USER}:pa/ss{PASSWORD}@127.0.0.1:9/v1",
              f"http://{USER}:p@ss{PASSWORD}@127.0.0.1:9/v1",
              f"http://127.0.0.1:notaport/v1?api_key={PASSWORD}",
              f"http://127.0.0.1:99999/v1?token={PASSWORD}",
              f"ftp://{USER}:{PASSWORD}@127.0.0.1/v1", f"http://[::1:{USER}:{PASSWORD}@h/v1"]


@pytest.mark.parametrize("url", SCHEMELESS)
def test_every_refused_base_url_is_shown_redacted(url: str) -> None:
    """A base URL without a scheme, a password holding / or @, a token in the query:
    the error names the URL with its credentials masked."""
    with pytest.raises(ValueError) as info:
        judge_config(provider="openai-compatible", model="m", base_url=url)
    message = str(info.value)
    assert "base_url=" in message and "***" in message, message
    assert_no_password("the error", message)


def test_cli_never_prints_a_schemeless_password(tmp_path: Path,
                                                capfd: pytest.CaptureFixture[str]) -> None:
    """The issue's reproduction: ``--base-url 'bob:PASSWORD@127.0.0.1:9/v1'`` is refused in one
    line that does not hold the password."""
    source = tmp_path / "input.jsonl"
    source.write_text(json.dumps({"question": "q", "prediction": "a", "contexts": ["c"]}) + "\n")
    code, out, err = cli_refusal(
        ["score", str(source), "-m", "faithfulness", "--base-url", SCHEMELESS[0], "--provider",
         "openai-compatible", "--model", "m", "--out", str(tmp_path / "o.jsonl")], capfd)
    assert code == 2 and err.count("\n") == 1, err
    assert "***@127.0.0.1:9/v1" in err, err
    assert_no_password("CLI stderr", out + err)
    assert not (tmp_path / "o.jsonl").exists()


def test_a_token_in_the_base_url_query_stays_out_of_every_message(tmp_path: Path) -> None:
    """A base URL whose query holds a token is accepted (some gateways want it) and used; the
    unmeasured reasons, the output file, the HTML report, stdout and stderr never show it, nor
    does ``repr`` of the config."""
    from conftest import free_port

    url = f"http://127.0.0.1:{free_port()}/v1?api_key={PASSWORD}"
    assert PASSWORD not in repr(judge_config(provider="openai-compatible", model="m",
                                             base_url=url))
    source = tmp_path / "input.jsonl"
    source.write_text(json.dumps({"question": "q", "prediction": "a", "contexts": ["c"]}) + "\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO),
           "JUDGE_METRICS_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "judge_metrics", "score", str(source), "-m", "faithfulness",
         "--base-url", url, "--provider", "openai-compatible", "--model", "m", "--timeout", "2",
         "--out", str(tmp_path / "o.jsonl"), "--html", str(tmp_path / "report.html")],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "o.jsonl").read_text() + (tmp_path / "report.html").read_text()
    assert "unreachable" in written  # the judge's fault is reported, with its host only
    assert_no_password("the output, the report, stdout and stderr",
                       written + done.stdout + done.stderr)


def test_redaction_removes_every_credential_form() -> None:
    """The one redaction step: what a server could echo, in the forms it could echo it."""
    echoed = [
        f"Incorrect API key provided: Bearer {KEY}",
        f"Authorization: Basic {BASIC}",
        f"proxy said: authorization=basic%20{BASIC}",
        f"GET {with_userinfo('http://127.0.0.1:8000/v1')}/models failed",
        f"key {KEY} rejected",
        f"api_key={KEY.replace('sk-', '')}",
        f"base_url='{USER}:{PASSWORD}@127.0.0.1:9/v1' is not an http(s) URL",
        f"GET //{USER}:{PASSWORD}@host/v1 failed",
        f"GET https://host/v1/models?x=1&access_token={PASSWORD}#top failed",
        f"GET https://host/v1?key={PASSWORD}",
        f"GET https://host/v1/{KEY}/models",
    ]
    for text in echoed:
        cleaned = redact(text, [KEY])
        assert_no_key(repr(text), cleaned)
        assert_no_password(repr(text), cleaned)
        assert "***" in cleaned
    # a key that does not look like one is masked when it is given, with its base64
    odd = "plain-key-without-prefix"
    b64 = __import__("base64").b64encode(odd.encode()).decode()
    assert odd not in redact(f"bad key {odd} / {b64}", [odd])
    assert b64 not in redact(f"bad key {odd} / {b64}", [odd])
    # ordinary prose is left alone
    for prose in ("Basic facts are right.", "The bearer of the news.", "Token limit reached.",
                  "see https://example.com/docs for details", "at 10:30 write to bob@example.com",
                  "pass the key with api_key=... (--api-key)", "http://[::1]:8000/v1?x=1"):
        assert redact(prose, [KEY]) == prose


def test_echoed_credentials_never_reach_the_output(
        metrics: dict[str, Any], proxy: FaultProxy, cache_dir: str) -> None:
    """A server's 401 quoting the Authorization header: the unmeasured reason and the details
    pass through the redaction step."""
    proxy.default = "echo_auth:401"
    fresh = {k: [v + " (echo)" for v in vs] for k, vs in L3_INPUTS.items()}
    result = metrics["l3score"].compute(**fresh, **options(proxy, cache_dir), api_key=KEY)
    assert_key_was_sent(proxy)
    reasons = [u["reason"] for u in result["unmeasured"]]
    assert reasons and all("Incorrect API key provided: ***" in r for r in reasons), reasons
    assert_no_key("the result", json.dumps(result, default=repr))


def test_demo_status_never_shows_the_url_credentials(proxy: FaultProxy, cache_dir: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo page with a password in its base URL field (a well-formed one and one with a bad
    port): the status says why in one message, with ``***@``, and nothing on the page holds the
    password or the key; no request reached the server."""
    from shared.demo import build_demo

    monkeypatch.setenv("JUDGE_METRICS_CACHE_DIR", cache_dir)
    panel = build_demo(["l3score"]).jm_panels["l3score"]
    for url in (with_userinfo(proxy.url), with_userinfo(proxy.url).replace(
            proxy.url.split("/")[2].split(":")[1], "notaport")):
        values = panel.initial_values()
        for name, value in {"provider": "openai-compatible", "base_url": url,
                            "model": "smollm2", "api_key": KEY}.items():
            values[panel.judge_fields[name]] = value
        out = panel.handle(values)
        page = json.dumps({str(k): v for k, v in out.items()}, default=str)
        status = str(out[panel.outputs["status"]])
        assert "credentials" in status and "***@" in status, status
        assert_no_password("the demo page", page)
        assert_no_key("the demo page", page)
    assert proxy.seen == []
