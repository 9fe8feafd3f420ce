"""The Bedrock backend (``boto3``'s ``bedrock-runtime`` client) against a fake of the Converse
API (``tests/fakes/bedrock.py``, written from the Bedrock Runtime API reference) that answers
through the real llama.cpp server (the ``llama_server`` fixture): the checks every native
protocol passes (``tests/native_checks.py``), and what is Bedrock's own. Requests are
SigV4-signed with dummy credentials (the fake checks the signature's form and scope, not its
value), or carry a Bedrock API key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.bedrock import FakeBedrock, model_id
from fakes.translating import Received
from native_checks import NativeProtocolChecks, one_row

from shared.engine.backends.pool import make_backend
from shared.engine.config import judge_config

pytestmark = pytest.mark.server

ACCESS_KEY = "AKIAFAKETESTKEY00042"
SECRET_KEY = "fake/SECRET+access/key/DO-NOT-LEAK/0xb3d9"
BEARER = "ABSKfakeBedrockApiKey-DO-NOT-LEAK-51e2"
REGION = "eu-west-3"
MODEL = "global.anthropic.claude-haiku-4-5-20251001-v1:0"


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Dummy credentials and a region in the environment, nothing from the user's files."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
                 "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # AWS_REGION comes first
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


class TestConverseAPI(NativeProtocolChecks):
    settings = {"provider": "bedrock", "model": MODEL}
    secrets = (SECRET_KEY, BEARER, "DO-NOT-LEAK")
    price = (1.00, 5.00)
    retried = ("429", "503")
    retry_waits = False  # a ThrottlingException names no wait
    unsaved = ("429", "429", "ThrottlingException")
    # a Bedrock API key goes out as a bearer token
    echoing = ("echo_key:403", "403", "UnrecognizedClientException")
    echo_options = {"api_key": BEARER}
    sdk = "boto3"
    extra = "bedrock"

    def start(self, upstream: str) -> FakeBedrock:
        return FakeBedrock(upstream, ACCESS_KEY, REGION, bearer_token=BEARER)

    def check_structured(self, seen: Received) -> None:
        """SigV4 for bedrock in AWS_REGION, the model in the path, one forced tool, greedy."""
        assert seen.headers["authorization"].startswith(
            f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
        assert f"/{REGION}/bedrock/aws4_request" in seen.headers["authorization"]
        assert model_id(seen.path) == MODEL
        config = seen.body["toolConfig"]
        [tool] = config["tools"]
        assert config["toolChoice"] == {"tool": {"name": tool["toolSpec"]["name"]}}
        assert tool["toolSpec"]["inputSchema"]["json"]["type"] == "object"
        assert seen.body["inferenceConfig"]["temperature"] == 0

    def check_written(self, seen: Received) -> None:
        assert "toolConfig" not in seen.body
        assert seen.body["inferenceConfig"] == {"maxTokens": 16, "temperature": 0}

    def check_sampled(self, seen: Received) -> None:
        """Samples at temperature 1."""
        assert seen.body["inferenceConfig"] == {"maxTokens": 16, "temperature": 1, "topP": 1}

    def check_credential(self, seen: Received) -> None:
        assert seen.headers["authorization"] == f"Bearer {BEARER}"

    def test_the_secret_key_appears_in_no_message_or_cache_file(
            self, metrics: dict[str, Any], llama_server: str, cache_dir: str) -> None:
        with FakeBedrock(llama_server, ACCESS_KEY, REGION) as fake:
            inputs = one_row("faithfulness")
            fake.add_faults("500")
            result = metrics["faithfulness"].compute(**inputs, **self.options(
                fake, cache_dir, max_retries=0))
            metrics["faithfulness"].compute(**inputs, **self.options(fake, cache_dir))
            config = judge_config(**self.options(fake, cache_dir))
            self.assert_nowhere("the backend's repr", repr(make_backend(config)))
        assert "InternalServerException" in result["unmeasured"][0]["reason"]
        self.assert_nowhere("the result", repr(result))
        self.assert_no_file_holds_a_secret(cache_dir)

    def test_no_region_is_a_one_line_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("AWS_REGION")
        monkeypatch.delenv("AWS_DEFAULT_REGION")
        with pytest.raises(ValueError, match="AWS_REGION") as raised:  # with the options
            judge_config(provider="bedrock", model=MODEL, max_concurrency=3)
        assert "\n" not in str(raised.value)
