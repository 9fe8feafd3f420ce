"""One judge carrier (docs/ARCHITECTURE.md, "The judge, resolved once"): a ``JudgeConfig`` is made
from a dict of options only by the one converter (``engine.config.judge_config``), the embedded
judge is one predicate (``JudgeConfig.is_embedded``), judge options are picked out of a mix by one
filter, and an unknown option is refused in the same words by compute, the CLI, the runs and the
integrations (the one checker, ``runs.options.check_run_options``)."""

from __future__ import annotations

import ast
from pathlib import Path

import datasets
import evaluate
import pytest
from conftest import REPO

from shared.base.errors import UnknownOptionError, UserInputError
from shared.cli.main import main
from shared.engine.config import JudgeConfig, judge_config
from shared.kit import registry
from shared.runs.batch import score_dataset
from shared.runs.options import check_run_options
from shared.runs.rows import MetricRows

#: the modules allowed to build a JudgeConfig from options, or to read the converter's parts
CONVERTER = "shared/engine/config.py"
SCANNED = sorted([*(REPO / "shared").rglob("*.py"), *(REPO / "metrics").rglob("*.py"),
                  REPO / "app.py"])
#: the only callers of the converter besides engine/config.py: the checker, compute's door
CALLERS = {"shared/runs/options.py", "shared/kit/judge_metric.py"}
#: the converter's internals: what only engine/ may import from the config modules
INTERNALS = {"DEFAULTS", "provider_of"}


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(REPO)}:{getattr(node, 'lineno', '?')}"


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _trees() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"))) for path in SCANNED
            if str(path.relative_to(REPO)) != CONVERTER]


def test_the_scan_reads_the_code() -> None:
    assert REPO / "shared" / "engine" / "config.py" in SCANNED
    assert len(SCANNED) > 100


def test_no_judge_config_is_built_outside_the_converter() -> None:
    """``JudgeConfig(...)`` (with ``**options`` or not) and ``dataclasses.replace`` of a config
    appear in engine/config.py only; the converter (``judge_config``) is called by the one
    checker of a run's options and by compute's door (``split_judge_options``) only: every
    other place asks the checker (or takes the config already built)."""
    found = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            called = _name(node.func)
            if called == "judge_config" and str(path.relative_to(REPO)) not in CALLERS:
                found.append(f"{_where(path, node)}: judge_config(...)")
            elif called == "JudgeConfig":
                found.append(f"{_where(path, node)}: JudgeConfig(...)")
            elif called == "replace" and node.args and any(
                    word in ast.unparse(node.args[0]).lower() for word in ("config", "judge")):
                found.append(f"{_where(path, node)}: replace({ast.unparse(node.args[0])}, ...)")
            elif called == "__new__" and node.args and _name(node.args[0]) == "JudgeConfig":
                found.append(f"{_where(path, node)}: JudgeConfig.__new__")
    assert not found, "a JudgeConfig built outside the converter: " + "; ".join(found)


def test_the_converter_internals_stay_in_the_engine() -> None:
    found = []
    for path, tree in _trees():
        if path.is_relative_to(REPO / "shared" / "engine"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith(
                    ("config", "judge_options")):
                found += [f"{_where(path, node)}: {a.name}" for a in node.names
                          if a.name in INTERNALS]
    assert not found, "the converter's internals imported: " + "; ".join(found)


def test_judge_options_are_picked_by_one_filter() -> None:
    """``{k: v ... if k in JUDGE_OPTION_NAMES}`` is ``engine.config.judge_options_of``."""
    found = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.comprehension):
                for test in node.ifs:
                    for compare in ast.walk(test):
                        if isinstance(compare, ast.Compare) and any(
                                isinstance(op, ast.In) for op in compare.ops) and any(
                                _name(c) == "JUDGE_OPTION_NAMES" for c in compare.comparators):
                            found.append(_where(path, compare))
    assert not found, "a filter of judge options by name: " + "; ".join(found)


def test_the_embedded_judge_is_one_predicate() -> None:
    """``provider == LOCAL and not model`` is ``JudgeConfig.is_embedded``."""
    found = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            if not isinstance(node, ast.BoolOp):
                continue
            no_model = any(isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not)
                           and _name(v.operand) == "model" for v in node.values)
            local = any(isinstance(v, ast.Compare) and "LOCAL" in ast.unparse(v)
                        for v in node.values)
            if no_model and local:
                found.append(f"{_where(path, node)}: {ast.unparse(node)}")
    assert not found, "the embedded judge tested by hand: " + "; ".join(found)


def test_is_embedded() -> None:
    assert judge_config().is_embedded
    assert judge_config({"provider": None, "model": None}).is_embedded
    assert not judge_config(api_key="k").is_embedded  # the key-only default is hosted
    assert not judge_config(judges=[{}, {}]).is_embedded  # a panel
    assert not judge_config(model="HuggingFaceTB/SmolLM2-135M-Instruct").is_embedded


@pytest.mark.parametrize("options", [
    {}, {"api_key": "k"}, {"provider": "local", "api_key": "k"}, {"timeout": 5.0, "batch": False},
    {"provider": "vllm", "base_url": "http://127.0.0.1:9/v1", "model": "m"},
    {"judges": [{"provider": "local"}, {"timeout": 9.0}], "panel_aggregate": "median"},
])
def test_a_config_converts_back_to_itself(options: dict) -> None:
    """``JudgeConfig.options()``: what a run hands each compute, which converts it back."""
    config = judge_config(options)
    assert judge_config(config.options()) == config


def test_the_converter_takes_a_dict_or_keywords_and_names_a_typo() -> None:
    assert judge_config({"timeout": 5}) == judge_config(timeout=5)
    assert judge_config({"timeout": 5}, max_retries=1).max_retries == 1
    with pytest.raises(UnknownOptionError) as raised:
        judge_config({"modle": "x"})
    assert str(raised.value) == "the judge has no option 'modle' (did you mean 'model'?)"
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, UserInputError)


def test_the_checker_splits_a_run_and_takes_a_built_judge() -> None:
    checked = check_run_options({"model": None, "timeout": 5, "embedding_model": None,
                                 "show_progress": False})
    assert checked.judge == judge_config(timeout=5)
    assert checked.embedding == {"embedding_model": None}
    built = judge_config(timeout=7)
    assert check_run_options({}, judge=built).judge is built
    with pytest.raises(UserInputError, match="the judge is given twice"):
        check_run_options({"timeout": 5}, judge=built)
    spec = registry.METRICS["accuracy"]
    with pytest.raises(UnknownOptionError, match="accuracy has no option 'model'"):
        check_run_options({"model": "m"}, metric=spec)  # no judge metric, no judge options
    call = check_run_options({"provider": "local", "timeout": 5},
                             metric=registry.METRICS["l3score"]).call_options(
                                 registry.METRICS["l3score"])
    assert call == {"timeout": 5.0, "show_progress": False}  # own options: as given (none)


def test_a_metric_s_own_judge_option_wins_over_the_run_s_judge() -> None:
    """``--option l3score.model=B`` beside the run's ``--model A``: l3score's calls take B
    (the more specific), the rest of the run's judge stays."""
    spec = registry.METRICS["l3score"]
    run = check_run_options({"provider": "openai", "model": "run-model", "api_key": "sk-test",
                             "timeout": 5})
    call = run.call_options(spec, {"model": "metric-model"})
    assert call["model"] == "metric-model"
    assert call["api_key"] == "sk-test" and call["timeout"] == 5.0
    assert run.call_options(spec, {})["model"] == "run-model"


def _cli_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    return capsys.readouterr().err.strip()


TYPO = "l3score has no option 'modle' (did you mean 'model'?)"


def test_an_unknown_option_is_refused_in_the_same_words_everywhere(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """compute, the CLI's --option, MetricRows (inspect's and MLflow's scorers, assert_metric)
    and the one checker say the same line."""
    from shared.integrations import assert_metric

    metric = evaluate.load(str(registry.metric_path("l3score")))
    example = dict(registry.METRICS["l3score"].example.inputs)
    with pytest.raises(TypeError) as raised:
        metric.compute(**example, modle="x")
    assert str(raised.value) == TYPO

    data = tmp_path / "rows.jsonl"
    data.write_text('{"question": "q", "prediction": "p", "reference": "r"}\n')
    said = _cli_error(capsys, ["score", str(data), "--metric", "l3score", "--option",
                               "l3score.modle=x", "--out", str(tmp_path / "out.jsonl")])
    assert said == f"judge-metrics: error: --option 'l3score.modle=x': {TYPO}"

    for make in (lambda: MetricRows("l3score", modle="x"),
                 lambda: check_run_options({"modle": "x"}, metric=registry.METRICS["l3score"]),
                 lambda: assert_metric("l3score", [{"question": "q", "prediction": "p",
                                                    "reference": "r"}], at_least=0.5,
                                       modle="x")):
        with pytest.raises(UserInputError) as raised:
            make()
        assert str(raised.value) == TYPO

    with pytest.raises(UserInputError) as raised:
        score_dataset(datasets.Dataset.from_list([{"prediction": "p", "reference": "r"}]),
                      "rouge", modle="x", show_progress=False)
    assert str(raised.value) == "the run has no option 'modle' (did you mean 'model'?)"


def test_score_dataset_takes_the_judge_the_cli_built() -> None:
    rows = datasets.Dataset.from_list([{"prediction": "p", "reference": "r", "question": "q"}])
    judge = judge_config(dry_run=True)
    _, summary = score_dataset(rows, ["l3score", "rouge"], judge=judge, show_progress=False)
    assert summary.dry_run and [m.metric for m in summary.metrics] == ["l3score"]
    assert isinstance(judge, JudgeConfig)
