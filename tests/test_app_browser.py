"""The demo end to end in headless Chromium: the whole app served on a free loopback port."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, free_port
from faultproxy import FaultProxy
from test_app import FAKE_KEY, KeyEchoServer

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
WAIT_MS = 60_000


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo of every available metric, as app.py serves it, in a server thread."""
    from shared.demo import build_demo, launch

    os.environ["JUDGE_METRICS_CACHE_DIR"] = str(tmp_path_factory.mktemp("judge-cache"))
    port = free_port()
    demo = build_demo()
    launch(demo, server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()
        os.environ.pop("JUDGE_METRICS_CACHE_DIR", None)


@pytest.fixture(scope="module")
def page(app_url: str) -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (make setup-test does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(WAIT_MS)
        page.goto(app_url)
        page.wait_for_selector("#accuracy-run")
        yield page
        browser.close()


def click_and_wait(page: Any, name: str, button: str) -> None:
    """Click one of the panel's buttons and wait until the status box shows what it did."""
    page.evaluate(f"document.querySelectorAll('#{name}-status .jm-status')"
                  ".forEach(e => e.setAttribute('data-stale', ''))")
    page.click(f"#{name}-{button}")
    page.wait_for_selector(f"#{name}-status .jm-status:not([data-stale])")


def run_and_wait(page: Any, name: str) -> None:
    click_and_wait(page, name, "run")


def load_example(page: Any, name: str) -> None:
    """Load the example and wait for its values to arrive, so that a field filled next is not
    overwritten by the example's defaults landing after it."""
    click_and_wait(page, name, "example")
    assert "Example loaded" in status(page, name)


def status(page: Any, name: str) -> str:
    return page.inner_text(f"#{name}-status")


def headline(page: Any, name: str, key: str) -> str:
    return page.inner_text(f'#{name}-aggregate .jm-value[data-key="{key}"]')


def test_accuracy_example_runs_and_screenshot(page: Any, tmp_path: Path) -> None:
    page.get_by_role("tab", name="accuracy", exact=True).click()
    load_example(page, "accuracy")
    run_and_wait(page, "accuracy")
    # benchwise's card: Paris/London/Tokyo vs Paris/London/Berlin -> 66.67%
    assert headline(page, "accuracy", "accuracy") == f"{2 / 3:.4f}"
    assert "3 of 3 rows measured" in page.inner_text("#accuracy-aggregate")
    rows = page.inner_text("#accuracy-rows")
    assert "Tokyo" in rows and "Berlin" in rows
    page.wait_for_selector("#accuracy-chart canvas, #accuracy-chart svg")
    shot = tmp_path / "demo-accuracy.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    if os.environ.get("JUDGE_METRICS_UPDATE_SCREENSHOT") == "1":  # a test run leaves docs alone
        shutil.copyfile(shot, REPO / "docs" / "demo.png")


def test_bad_input_shows_a_message(page: Any, tmp_path: Path) -> None:
    page.get_by_role("tab", name="accuracy", exact=True).click()
    load_example(page, "accuracy")
    page.fill("#accuracy-option-fuzzy_threshold input", "1.5")
    run_and_wait(page, "accuracy")
    message = status(page, "accuracy")
    assert "fuzzy_threshold" in message and "[0, 1]" in message
    assert page.inner_text("#accuracy-aggregate").strip() == ""

    load_example(page, "accuracy")  # back to the defaults
    batch = tmp_path / "batch.csv"
    batch.write_text("prediction,reference\nParis,Paris\nRome,\n")
    page.set_input_files("#accuracy-upload input[type=file]", str(batch))
    page.wait_for_function(
        "document.querySelector('#accuracy-status').innerText.includes('Loaded 2 rows')")
    run_and_wait(page, "accuracy")
    message = status(page, "accuracy")
    assert "table row 2" in message and "'reference'" in message and "empty" in message
    page.screenshot(path=str(tmp_path / "demo-bad-input.png"), full_page=True)

    # the app is still up: the example runs again
    load_example(page, "accuracy")
    run_and_wait(page, "accuracy")
    assert headline(page, "accuracy", "accuracy") == f"{2 / 3:.4f}"


def choose_judge(page: Any, name: str, base_url: str, api_key: str = "",
                 use_cache: bool = True) -> None:
    page.get_by_role("tab", name=name, exact=True).click()
    page.click(f"#{name}-provider input")
    page.get_by_role("option", name="openai-compatible", exact=True).click()
    page.fill(f"#{name}-model input", "smollm2")
    page.fill(f"#{name}-base-url input", base_url)
    page.fill(f"#{name}-api-key input", api_key)
    box = page.locator(f"#{name}-use-cache input[type=checkbox]")
    if box.is_checked() != use_cache:
        box.click()


def page_text(page: Any) -> str:
    """The serialised DOM, the visible text and the browser's storage."""
    storage = page.evaluate(
        "JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])")
    return page.content() + page.inner_text("body") + storage


@pytest.mark.server
def test_judge_metric_with_a_key_that_never_comes_back(page: Any, llama_server: str,
                                                       tmp_path: Path) -> None:
    with FaultProxy(llama_server) as proxy:
        choose_judge(page, "l3score", proxy.url, FAKE_KEY)
        load_example(page, "l3score")
        run_and_wait(page, "l3score")
        sent = [v for s in proxy.seen for k, v in s.headers.items()
                if k.lower() == "authorization"]
    assert "Scored 2 rows" in status(page, "l3score"), status(page, "l3score")
    value = float(headline(page, "l3score", "L3Score"))
    assert 0.0 <= value <= 1.0
    assert re.search(r"calls 2", page.inner_text("#l3score-usage"))
    assert sent and all(v == f"Bearer {FAKE_KEY}" for v in sent)  # used for the request
    page.screenshot(path=str(tmp_path / "demo-l3score.png"), full_page=True)
    assert FAKE_KEY not in page_text(page)


def test_wrong_key_is_a_message_without_the_key(page: Any, tmp_path: Path) -> None:
    server = KeyEchoServer()  # answers 401 quoting the key it got
    try:
        choose_judge(page, "l3score", server.url, FAKE_KEY, use_cache=False)
        run_and_wait(page, "l3score")
    finally:
        server.stop()
    assert server.authorizations and server.authorizations[0] == f"Bearer {FAKE_KEY}"
    message = status(page, "l3score")
    assert "No row could be measured" in message and "401" in message
    assert "table row 1" in page.inner_text("#l3score-unmeasured")
    page.screenshot(path=str(tmp_path / "demo-wrong-key.png"), full_page=True)
    assert FAKE_KEY not in page_text(page)


def unset_number_options() -> list[tuple[str, str]]:
    """(metric, option) of every number option whose default is None, in the page."""
    from shared.kit.registry import METRICS

    return [(name, option.name) for name, spec in METRICS.items() for option in spec.options
            if option.kind in ("int", "float") and option.default is None]


def open_tab(page: Any, name: str) -> None:
    """Open a metric's tab, also one the tab strip folded into its overflow menu."""
    page.evaluate("n => { const all = Array.from(document.querySelectorAll('button'))"
                  ".filter(b => b.innerText.trim() === n);"
                  "(all.find(b => b.getAttribute('role') === 'tab') || all[all.length - 1])"
                  ".click(); }", name)
    page.wait_for_selector(f"#{name}-run")


def field_text(page: Any, name: str, option: str) -> str:
    return page.locator(f"#{name}-option-{option} textarea, #{name}-option-{option} input"
                        ).first.input_value()


def test_an_unset_number_option_reaches_compute_unset(page: Any, app_url: str) -> None:
    """On a freshly loaded page (no example loaded), a number option whose default is None
    shows empty and reaches compute unset: accuracy in mode f1 scores as the metric does
    without a threshold; a typed threshold is used; cleared again, it is unset again."""
    import evaluate

    from shared.kit.registry import METRICS, metric_path

    fresh = page.context.browser.new_page(viewport={"width": 1280, "height": 900})
    fresh.set_default_timeout(WAIT_MS)
    try:
        fresh.goto(app_url)
        fresh.wait_for_selector("#accuracy-run")
        options = unset_number_options()
        assert ("accuracy", "threshold") in options and ("g_eval", "threshold") in options
        for name, option in options:
            open_tab(fresh, name)
            assert field_text(fresh, name, option) == "", (name, option)
        open_tab(fresh, "accuracy")
        fresh.click("#accuracy-option-mode input")
        fresh.get_by_role("option", name="f1", exact=True).click()
        accuracy = evaluate.load(metric_path("accuracy"))
        example = METRICS["accuracy"].example.inputs
        for threshold in (None, 0.0, None):  # 0 passes every row: 1.0 in mode f1
            box = fresh.locator("#accuracy-option-threshold textarea, "
                                "#accuracy-option-threshold input").first
            box.fill("" if threshold is None else str(threshold))
            run_and_wait(fresh, "accuracy")
            given = {} if threshold is None else {"threshold": threshold}
            expected = accuracy.compute(**example, mode="f1", **given)["accuracy"]
            assert headline(fresh, "accuracy", "accuracy") == f"{expected:.4f}", threshold
        fresh.fill("#accuracy-option-threshold textarea, #accuracy-option-threshold input",
                   "high")
        run_and_wait(fresh, "accuracy")
        assert "threshold" in status(fresh, "accuracy") and "not a number" in status(
            fresh, "accuracy")
    finally:
        fresh.close()
