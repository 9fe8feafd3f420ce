"""The command line under a hostile user: every error path redacts the keys written on the
command line, and mistakes end in one line and exit 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

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
