"""shared.runs.engines: the engine of a run (this process or Ray) is chosen once and does every
engine-specific step; the input is checked once, with the same message on both engines; Ray is
imported only when its engine is chosen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from shared import UserInputError, score_dataset
from shared.cli.main import main
from shared.runs import engines, files
from shared.runs.engines import ENGINES, LocalEngine, RayEngine, choose_engine

REPO = Path(__file__).resolve().parents[2]
ROWS = [{"question": "Capital of France?", "prediction": "Paris", "reference": "Paris"},
        {"question": "Largest planet?", "prediction": "Saturn", "reference": "Jupiter"}]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_an_engine_is_chosen_by_name_or_taken_as_given() -> None:
    assert type(choose_engine()) is LocalEngine and type(choose_engine("local")) is LocalEngine
    ray = choose_engine("ray", workers=3, address="127.0.0.1:1")
    assert type(ray) is RayEngine and (ray.workers, ray.address) == (3, "127.0.0.1:1")
    given = LocalEngine()
    assert choose_engine(given) is given
    assert set(ENGINES) == {"local", "ray"}  # score's --engine choices
    with pytest.raises(UserInputError, match=r"^engine must be 'local' or 'ray', got 'spark'$"):
        choose_engine("spark")


class _Counted(LocalEngine):
    """The local engine, counting the calls of each step."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def __getattribute__(self, name: str):
        if name in ("check_input", "check_output", "read_input", "score", "write_output"):
            calls = object.__getattribute__(self, "calls")
            calls[name] = calls.get(name, 0) + 1
        return object.__getattribute__(self, name)


def test_score_chooses_its_engine_once_and_checks_the_input_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    made: list[_Counted] = []

    class Counted(_Counted):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    checked: list[Path] = []
    real_check = files.check_input_path

    def check_input_path(path: Path, label: str = "INPUT") -> None:
        checked.append(path)
        real_check(path, label)

    monkeypatch.setattr(engines, "LocalEngine", Counted)
    monkeypatch.setattr(engines, "check_input_path", check_input_path)
    monkeypatch.setattr(files, "check_input_path", check_input_path)
    source = _write_jsonl(tmp_path / "rows.jsonl", ROWS)
    out = tmp_path / "scored.jsonl"
    assert main(["score", str(source), "-m", "accuracy", "--out", str(out), "-q"]) == 0, (
        capsys.readouterr().err)
    assert len(made) == 1
    assert made[0].calls == {"check_output": 1, "check_input": 1, "read_input": 1, "score": 1,
                             "write_output": 1}
    assert checked == [source]
    expected, _ = score_dataset(datasets.Dataset.from_list(ROWS), "accuracy",
                                show_progress=False)
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert written == expected.to_list()


def test_score_dataset_scores_with_the_engine_it_is_given() -> None:
    engine = _Counted()
    dataset = datasets.Dataset.from_list(ROWS)
    scored, summary = score_dataset(dataset, ["accuracy", "rouge"], engine=engine,
                                    show_progress=False)
    default, default_summary = score_dataset(dataset, ["accuracy", "rouge"],
                                             show_progress=False)
    assert engine.calls == {"score": 1}
    assert scored.to_list() == default.to_list()
    assert [(m.metric, m.aggregates) for m in summary.metrics] == [
        (m.metric, m.aggregates) for m in default_summary.metrics]


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("make, needle", [
    (lambda tmp: tmp / "missing.jsonl", "no such file or folder"),
    (lambda tmp: _write_jsonl(tmp / "rows.txt", ROWS), "unsupported format .txt"),
    (_fifo, "not a regular file"),
])
def test_a_bad_input_is_one_message_the_same_on_both_engines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], make, needle: str) -> None:
    source = make(tmp_path)
    said = {}
    for engine in ENGINES:
        with pytest.raises(UserInputError) as raised:
            choose_engine(engine).check_input(source)
        out = tmp_path / f"{engine}.jsonl"
        assert main(["score", str(source), "-m", "rouge", "--out", str(out),
                     "--engine", engine, "-q"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err == f"judge-metrics: error: {raised.value}\n"
        said[engine] = err
    assert said["local"] == said["ray"] and needle in said["local"]


def test_ray_is_imported_only_when_its_engine_is_chosen(tmp_path: Path) -> None:
    source = _write_jsonl(tmp_path / "rows.jsonl", ROWS)
    code = ("import sys; from shared.cli.main import main; "
            f"code = main(['score', {str(source)!r}, '-m', 'accuracy', '--out', "
            f"{str(tmp_path / 'out.jsonl')!r}, '-q']); "
            "assert code == 0; assert 'ray' not in sys.modules, 'ray was imported'; "
            "from shared.runs.engines import choose_engine; choose_engine('ray'); "
            "assert 'ray' in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
