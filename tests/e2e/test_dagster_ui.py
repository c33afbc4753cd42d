"""The Dagster UI, in a real browser: ``dagster dev`` on a free loopback port, the asset graph
opened in headless Chromium (Debian's ``chromium`` and ``chromium-driver``, driven by Selenium),
annex's assets on screen, and a screenshot kept under the test's output folder.

Nothing is downloaded: the browser and its driver are named explicitly, and Selenium Manager is
told to stay offline. A missing browser fails the test (``make system-deps`` installs it), so a
machine without it cannot pass ``make test`` by skipping.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ASSETS = (
    "warehouse_schema",
    "cluster_inventory",
    "fleet_marts",
    "published_warehouse",
    "gpu_benchmarks",
    "gpu_telemetry",
    "gpu_utilisation",
)
CATALOG_FILTER = urllib.parse.quote("group:cluster_state or group:gpu_evidence")
STARTUP_SECONDS = 180
PAGE_SECONDS = 90


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_server(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"dagster dev exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(
        f"dagster dev did not answer {url} in {STARTUP_SECONDS} s:\n{log.read_text()[-3000:]}"
    )


@pytest.fixture(scope="module")
def dagster_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``dagster dev`` serving annex's code location; its URL. Stopped with its whole group.
    One server for the module's tests: it takes a minute to start."""
    tmp_path = tmp_path_factory.mktemp("dagster-dev")
    home = tmp_path / "dagster_home"
    shutil.copytree(REPO / ".dagster_home", home, ignore=shutil.ignore_patterns("storage", "*.db"))
    config = tmp_path / "annex.toml"
    config.write_text(f'[warehouse]\npath = "{tmp_path / "annex.duckdb"}"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANNEX_")}
    env.update(DAGSTER_HOME=str(home), ANNEX_CONFIG=str(config), DAGSTER_DISABLE_TELEMETRY="1")
    port = _free_port()
    command = [sys.executable, "-m", "dagster", "dev", "-m", "pipelines.definitions"]
    log = tmp_path / "dagster-dev.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*command, "-h", "127.0.0.1", "-p", str(port)],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_for_server(f"{url}/server_info", proc, log)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def _browser(profile: Path):
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail(
            f"headless Chromium is needed for this test and {', '.join(missing)} is missing: "
            "run `make system-deps` (or `sudo apt-get install chromium chromium-driver`)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never download a browser
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1600,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))


def _dismiss_welcome_dialog(driver) -> None:
    """A fresh DAGSTER_HOME greets with a newsletter dialog over the graph: skip it if shown."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    skip = "//button[normalize-space()='Skip']"

    def dismissed(d) -> bool:
        # The dialog may appear late (after the catalog's text, on a busy machine), and a click
        # during its opening animation can miss: click whatever Skip is shown until none is.
        buttons = d.find_elements(By.XPATH, skip)
        for button in buttons:
            with contextlib.suppress(WebDriverException):  # gone or covered: the next poll
                if button.is_displayed():
                    button.click()
        return not buttons

    WebDriverWait(driver, 30, poll_frequency=0.5).until(dismissed)
    # Let the graph finish drawing the nodes' status rows before the screenshot.
    WebDriverWait(driver, 15).until(
        lambda d: "Loading" not in d.find_element(By.TAG_NAME, "body").text
    )


def test_asset_graph_shows_annex_assets(dagster_ui: str, tmp_path: Path) -> None:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = _browser(tmp_path / "chromium-profile")
    screenshot = tmp_path / "dagster-asset-graph.png"
    try:
        # the catalog, filtered to the two groups (it also lists every warehouse table, and
        # draws only the rows on screen)
        driver.get(f"{dagster_ui}/assets?asset-selection={CATALOG_FILTER}")

        def shown(d) -> bool:
            text = d.find_element(By.TAG_NAME, "body").text
            return all(name in text for name in ASSETS)

        try:
            WebDriverWait(driver, PAGE_SECONDS, poll_frequency=1).until(shown)
        except TimeoutException:
            driver.save_screenshot(str(screenshot))
            body = driver.find_element(By.TAG_NAME, "body").text
            pytest.fail(
                f"the asset graph did not show {', '.join(ASSETS)} within {PAGE_SECONDS} s; "
                f"screenshot: {screenshot}; page text:\n{body[:2000]}"
            )
        _dismiss_welcome_dialog(driver)
        assert driver.save_screenshot(str(screenshot))
    finally:
        driver.quit()
    assert screenshot.stat().st_size > 10_000
    print(f"screenshot: {screenshot}")


def test_catalog_shows_a_tables_columns_with_their_descriptions(
    dagster_ui: str, tmp_path: Path
) -> None:
    """A warehouse table is an asset of the catalog, its columns described by the warehouse's
    own comments (``pipelines.defs.catalog``)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    expected = ("collection_id", "Unique id of the collection", "rejected_count")
    driver = _browser(tmp_path / "chromium-profile")
    screenshot = tmp_path / "dagster-table-columns.png"
    try:
        driver.get(f"{dagster_ui}/assets/marts/collections")

        def shown(d) -> bool:
            text = d.find_element(By.TAG_NAME, "body").text
            return all(part in text for part in expected)

        try:
            WebDriverWait(driver, PAGE_SECONDS, poll_frequency=1).until(shown)
        except TimeoutException:
            driver.save_screenshot(str(screenshot))
            body = driver.find_element(By.TAG_NAME, "body").text
            pytest.fail(
                f"the asset page of marts.collections did not show {expected} within "
                f"{PAGE_SECONDS} s; screenshot: {screenshot}; page text:\n{body[:2000]}"
            )
    finally:
        driver.quit()
