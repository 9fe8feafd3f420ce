"""shared.analysis.report: the self-contained HTML reports, opened offline in headless Chromium with
hostile predictions (markup must show as text and never run, no request may leave the page)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.analysis.comparison import compare
from shared.analysis.report import (
    script_json,
    write_agreement_html,
    write_compare_html,
    write_score_html,
)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
SCRIPT = "</script><script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned = 2">'
COMMENT = "<!-- <script>window.__pwned = 3</script>"
HOSTILE = [SCRIPT, IMG, COMMENT, "line\u2028separator\u2029end", "plain answer"]


def _rows(prediction_of: Any, accuracy_of: Any) -> list[dict[str, Any]]:
    rows = []
    for i in range(12):
        faithful = None if i == 3 else round(0.1 * (i % 5), 2)
        details = ({"unmeasured": f"judge error: {IMG}"} if faithful is None else
                   {"statements": [f"claim {i}", SCRIPT], "verdicts": [
                       {"verdict": "yes", "reason": IMG}, {"verdict": "no", "reason": "r"}]})
        rows.append({
            "id": f"r{i}", "question": f"question {i} {COMMENT}",
            "prediction": prediction_of(i), "reference": "plain answer",
            "contexts": [f"context {i}", SCRIPT],
            "accuracy": accuracy_of(i), "accuracy_details": json.dumps({"match_types": "exact"}),
            "faithfulness": faithful, "faithfulness_details": json.dumps(details),
        })
    return rows


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("reports")
    a = _rows(lambda i: HOSTILE[i % len(HOSTILE)], lambda i: float(i % 2))
    b = _rows(lambda i: f"{HOSTILE[(i + 1) % len(HOSTILE)]} B", lambda i: float(i % 3 == 0))
    paths = {"score": folder / "score.html", "compare": folder / "compare.html",
             "agreement": folder / "agreement.html"}
    write_score_html(a, None, paths["score"], judge={"provider": "local"})
    write_compare_html(compare(a, b, n_resamples=200), paths["compare"])
    write_agreement_html({
        "metric": "faithfulness", "score_key": "faithfulness", "label": f"human {IMG}",
        "label_kind": "boolean", "n": 11, "unmeasured": 1, "unlabelled": 0,
        "judge": {"provider": "local", "model": None},
        "statistics": [{"name": "auroc", "value": 0.7, "low": 0.5, "high": 0.9, "note": SCRIPT},
                       {"name": "kappa", "value": None, "low": None, "high": None,
                        "note": "undefined"}],
        "confidence": 0.95, "seed": 0, "n_resamples": 1000,
    }, paths["agreement"], rows=a)
    return paths


def test_script_json_cannot_close_its_element() -> None:
    values = {"a": SCRIPT, "b": COMMENT, "c": "x\u2028y\u2029z", "d": "a & b > c"}
    text = script_json(values)
    assert "</" not in text and "<!--" not in text and "\u2028" not in text
    assert "\u2029" not in text and "<" not in text
    assert json.loads(text) == values


def test_html_escapes_every_text_from_the_data(reports: dict[str, Path]) -> None:
    for path in reports.values():
        html = path.read_text(encoding="utf-8")
        # no hostile markup survives as markup anywhere in the file
        for hostile in (SCRIPT, IMG, "<script>window.__pwned"):
            assert hostile not in html
        # the page's only scripts are ours: the JSON data and the report script
        assert len(re.findall(r"<script\b", html)) == 2
        assert "http://" not in html.replace("http://www.w3.org/", "")
        assert "https://" not in html


def test_big_runs_sample_the_row_table(tmp_path: Path) -> None:
    rows = [{"id": i, "prediction": "p", "accuracy": float(i % 2)} for i in range(3000)]
    html = write_score_html(rows, None, tmp_path / "big.html", max_rows=500)
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    assert len(data["rows"]) == 500
    assert "random sample of 500" in html and "3,000 rows" in html
    # the aggregate still covers every row
    assert "0.5000" in html


# ------------------------------------------------------------------------------ browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (make setup-test does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def _open(browser: Any, path: Path) -> tuple[Any, list[str], list[str]]:
    """The report in a fresh page; every request that is not the file itself is aborted and
    recorded, and so is every console error or page error."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(20_000)
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))

    def guard(route: Any) -> None:
        if route.request.url == path.as_uri():
            route.continue_()
        else:
            route.abort()

    page.route("**/*", guard)
    page.goto(path.as_uri())
    page.wait_for_selector("#rows-table tbody tr")
    return page, errors, requests


@pytest.mark.browser
def test_compare_report_offline_drill_down_and_inert_markup(browser: Any,
                                                            reports: dict[str, Path]) -> None:
    page, errors, requests = _open(browser, reports["compare"])
    # the rows where A and B differ most open the same drill-down as the table
    page.click("table.top tbody tr >> nth=0")
    detail = page.locator("#detail")
    assert detail.is_visible()
    text = detail.inner_text()
    assert "A: output" in text and "B: output" in text and "faithfulness details" in text
    # open the pair whose prediction holds <script> and <img onerror>: shown as text
    row = page.locator("#rows-table tbody tr", has_text="r0").first
    row.click()
    text = page.inner_text("#detail")
    assert SCRIPT in text and IMG in text
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("document.querySelectorAll('script').length") == 2
    # sorting by a delta column puts the largest first; filtering narrows the rows
    header = "#rows-table th:has-text('Δ accuracy')"
    cell = "#rows-table tbody tr >> nth=0 >> td >> nth=2"
    page.click(header)  # numbers sort largest first
    assert page.inner_text(cell) == "1"
    page.click(header)
    assert page.inner_text(cell) == "-1"
    page.fill("#rows-filter", "question 11")
    assert page.locator("#rows-table tbody tr").count() == 1
    assert page.evaluate("document.querySelectorAll('svg.plot').length") >= 3
    page.close()
    assert errors == []
    assert [u for u in requests if u != reports["compare"].as_uri()] == []


@pytest.mark.browser
def test_score_report_shows_unmeasured_reason_and_judge_details(
        browser: Any, reports: dict[str, Path]) -> None:
    page, errors, requests = _open(browser, reports["score"])
    body = page.inner_text("body")
    assert "embedded default" in body  # the local judge is named next to the judge metrics
    page.check("#rows-unmeasured")
    assert page.locator("#rows-table tbody tr").count() == 1
    page.click("#rows-table tbody tr >> nth=0")
    text = page.inner_text("#detail")
    assert f"judge error: {IMG}" in text
    page.uncheck("#rows-unmeasured")
    page.locator("#rows-table tbody tr", has_text="r1").first.click()
    text = page.inner_text("#detail")
    assert "statements" in text and "verdicts" in text and SCRIPT in text
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    page.close()
    assert errors == []
    assert [u for u in requests if u != reports["score"].as_uri()] == []


@pytest.mark.browser
def test_agreement_report_from_a_plain_dict(browser: Any, reports: dict[str, Path]) -> None:
    page, errors, requests = _open(browser, reports["agreement"])
    body = page.inner_text("body")
    assert "auroc" in body and "0.7000" in body and "[0.5000, 0.9000]" in body
    assert f"human {IMG}" in body and "embedded default" in body
    assert page.evaluate("window.__pwned") is None
    page.close()
    assert errors == [] and [u for u in requests if u != reports["agreement"].as_uri()] == []


def test_demo_compare_tab(tmp_path: Path) -> None:
    """The demo's Compare tab: two uploaded outputs in, the table and the report out."""
    import gradio as gr

    from shared.demo.compare_tab import TABLE_COLUMNS, build_compare_tab, handle

    a = _rows(lambda i: HOSTILE[i % len(HOSTILE)], lambda i: float(i % 2))
    b = _rows(lambda i: "other", lambda i: 1.0)
    for name, rows in (("a.jsonl", a), ("b.jsonl", b)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows),
                                     encoding="utf-8")
    status, table, report = handle(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "",
                                   folder=tmp_path)
    assert "12 pairs by id" in status
    assert list(table.columns) == TABLE_COLUMNS and list(table["score"]) == ["accuracy",
                                                                             "faithfulness"]
    assert table.loc[0, "B wins/ties/losses"] == "6/6/0"
    assert Path(report).is_file() and SCRIPT not in Path(report).read_text(encoding="utf-8")
    status, _, report = handle(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "nope")
    assert "jm-error" in status and "--key &#x27;nope&#x27;" in status and report is None
    with gr.Blocks():
        parts = build_compare_tab()
    assert {"a", "b", "run", "table", "report"} <= set(parts)


def test_score_html_from_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`score --html`: the report of a real run (accuracy on the shipped example)."""
    from conftest import REPO

    from shared.cli.main import main

    out, report = tmp_path / "scored.jsonl", tmp_path / "run.html"
    assert main(["score", str(REPO / "examples/rag_sample.jsonl"), "-m", "accuracy", "-o",
                 str(out), "--html", str(report), "-q"]) == 0, capsys.readouterr().err
    html = report.read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    scored = [json.loads(line) for line in out.open(encoding="utf-8")]
    assert len(data["rows"]) == len(scored) == 20
    assert [r["c"]["accuracy"] for r in data["rows"]] == [r["accuracy"] for r in scored]
    mean = sum(r["accuracy"] for r in scored) / len(scored)
    assert f"{mean:.4f}" in html and "<svg" in html
    assert main(["score", str(REPO / "examples/rag_sample.jsonl"), "-m", "accuracy", "-o",
                 str(out), "--html", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_prompt_versions_of_the_metrics_run() -> None:
    from shared import prompts
    from shared.analysis.report.page import prompts_of

    assert prompts_of(["faithfulness", "accuracy"]) == sorted(
        [prompts.FAITHFULNESS.prompt_id, prompts.STATEMENTS.prompt_id])
    assert prompts_of(["toxicity"]) == sorted([prompts.TOXICITY.prompt_id,
                                                prompts.OPINIONS.prompt_id])
    assert prompts_of(["rouge"]) == []
    # a question is always shown when answer relevance splits an answer into statements
    assert prompts_of(["answer_relevance"]) == sorted([prompts.ANSWER_RELEVANCE.prompt_id,
                                                       prompts.STATEMENTS_WITH_QUESTION.prompt_id])
    # prompts written from the options: g_eval's (its reason's with explain) and pairwise's
    assert prompts_of(["g_eval", "pairwise"]) == ["g_eval@2", "pairwise@2"]
    assert prompts_of(["g_eval"], {"g_eval": {"criteria": "Polite?", "explain": True}}) == [
        "g_eval@2", "g_eval_reason@2"]
    # a metric's own extraction prompts, declared with the rest in its PROMPTS
    assert prompts_of(["knowledge_retention", "task_completion"]) == sorted(
        [prompts.KNOWLEDGE_RETENTION.prompt_id, prompts.USER_FACTS.prompt_id,
         prompts.TASK_COMPLETION.prompt_id])


# ------------------------------------------------------------------ reports, the tab


def _report_data(html: str) -> dict[str, Any]:
    return json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))


def test_score_html_names_its_input(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from conftest import REPO

    from shared.cli.main import main

    source = REPO / "examples/rag_sample.jsonl"
    report = tmp_path / "run.html"
    assert main(["score", str(source), "-m", "accuracy", "-o", str(tmp_path / "o.jsonl"),
                 "--html", str(report), "-q"]) == 0, capsys.readouterr().err
    html = report.read_text(encoding="utf-8")
    assert f"<dt>input</dt><dd>{source}</dd>" in html


def test_a_long_cell_is_cut_in_tables_and_written_in_full_once(tmp_path: Path) -> None:
    """A 300,000-character id, question and prediction: the table, titles and top lists show
    its start; the row's drill-down holds it once."""
    long = "y" * 300_000
    for column in ("id", "question", "prediction"):
        rows = [{"id": f"r{i}", "question": f"q{i}", "prediction": f"p{i}", "reference": "ref",
                 "accuracy": float(i % 2), "faithfulness": 0.5} for i in range(6)]
        rows[0][column] = long
        other = [{**r, "accuracy": 1.0, "faithfulness": 1.0, "prediction": "b"} for r in rows]
        compare_html = write_compare_html(compare(rows, other, n_resamples=10),
                                          tmp_path / "c.html")
        score_html = write_score_html(rows, None, tmp_path / "s.html")
        for html in (compare_html, score_html):
            assert html.count(long) == 1, column
            data = _report_data(html)
            assert all(len(str(v)) <= 160 for r in data["rows"] for v in r["c"].values())
            assert all(len(r["title"]) < 200 for r in data["rows"])


def test_demo_compare_tab_shows_file_names_and_cleans_up(tmp_path: Path) -> None:
    import gradio as gr

    from shared.demo import compare_tab

    a = _rows(lambda i: "a", lambda i: float(i % 2))
    for name, rows in (("a.jsonl", a), ("b.jsonl", a)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows),
                                     encoding="utf-8")
    (tmp_path / "bad.jsonl").write_text('{"id": "r0"}\nnot json\n', encoding="utf-8")
    status, _, report = compare_tab.handle(str(tmp_path / "bad.jsonl"), str(tmp_path / "b.jsonl"))
    assert report is None and "INPUT bad.jsonl, line 2: not valid JSON" in status
    assert str(tmp_path) not in status
    # one report per session: the next comparison removes the previous one
    _, _, first, state = compare_tab.handle_in_session(
        str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "", None)
    assert first == state and Path(first).is_file() and Path(first).parent.name.startswith(
        "jm-compare-")
    _, _, second, state = compare_tab.handle_in_session(
        str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "", state)
    assert Path(second).is_file() and not Path(first).parent.exists()
    # the session's end (Gradio calls the state's delete_callback) removes the last one
    with gr.Blocks():
        parts = compare_tab.build_compare_tab()
    parts["last_report"].delete_callback(state)
    assert not Path(second).parent.exists()
    # and the process's exit removes any left (registered with atexit)
    _, _, third, _ = compare_tab.handle_in_session(
        str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "", None)
    compare_tab.remove_all_report_folders()
    assert not Path(third).parent.exists()
    exit_hook = subprocess.run(
        [sys.executable, "-c", "from shared.demo import compare_tab; "
         "print(compare_tab.new_report_folder())"],
        capture_output=True, text=True, timeout=120)
    assert exit_hook.returncode == 0, exit_hook.stderr
    assert not Path(exit_hook.stdout.strip()).exists()


def test_the_embedded_judge_note_says_it_once_and_tabulates_the_figures(tmp_path: Path) -> None:
    """The run report of `make run` with the embedded judge: "a pipeline demo, not a
    measurement" once, then one table row per judge metric with its measured agreement."""
    from shared.analysis.embedded_judge import AGREEMENT_HEADER, agreement_rows

    rows = [{"l3score": 1.0, "faithfulness": 1.0, "hallucination": 0.0, "bias": 0.0,
             "g_eval": 0.5, "accuracy": 1.0} for _ in range(6)]
    page = write_score_html(rows, None, tmp_path / "run.html", judge={"provider": "local"})
    assert page.count("a pipeline demo, not a measurement") == 1
    note = page.split('class="note"')[1].split("</table>")[0]
    assert len(note.split("</p>")[0].split()) < 60  # a short paragraph, then the table
    table = note.split('id="judge-agreement"')[1]
    cells = [re.findall(r"<t[hd]>(.*?)</t[hd]>", row) for row in table.split("</tr>")[:-1]]
    assert tuple(html_unescape(c) for c in cells[0]) == AGREEMENT_HEADER
    shown_metrics = [c[0] for c in cells[1:]]
    assert sorted(shown_metrics) == sorted(  # the judge metrics only
        ["l3score", "faithfulness", "hallucination", "bias", "g_eval"])
    for shown, row in zip(cells[1:], agreement_rows(shown_metrics), strict=True):
        assert [html_unescape(c) for c in shown] == list(row.values())
    other = write_score_html(rows, None, tmp_path / "other.html",
                             judge={"provider": "openai", "model": "gpt-4o-mini"})
    assert "judge-agreement" not in other and "pipeline demo" not in other


def html_unescape(text: str) -> str:
    import html

    return html.unescape(text)
