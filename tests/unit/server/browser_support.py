"""Headless Chromium for the page tests (Debian's chromium and chromium-driver packages)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

WAIT_S = 20

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--window-size=1200,1000",
]


def require_chromium() -> None:
    """Skip the calling test module unless selenium and Chromium are installed."""
    pytest.importorskip("selenium", reason="selenium is in the 'dev' extra")
    found = Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()
    if not found and not shutil.which("chromium"):
        pytest.skip(
            "Chromium not installed (Debian packages 'chromium' and 'chromium-driver': "
            "scripts/ci-apt-packages.txt)",
            allow_module_level=True,
        )


@contextmanager
def chromium() -> Iterator[WebDriver]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def fill(driver: WebDriver, element_id: str, text: str) -> None:
    from selenium.webdriver.common.by import By

    element = driver.find_element(By.ID, element_id)
    element.clear()
    element.send_keys(text)


def ask(driver: WebDriver, question: str, labels: str = "", context: str = "") -> None:
    """Fill the ask form (the kind of question by its labels, '' for an open one) and send."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    fill(driver, "question", question)
    # Set as one value: typing an abstract of 1,500 characters key by key takes long.
    driver.execute_script("document.getElementById('context').value = arguments[0];", context)
    Select(driver.find_element(By.ID, "labels")).select_by_value(labels)
    driver.find_element(By.ID, "ask").click()


def open_queue(driver: WebDriver, token: str, state: str = "open") -> None:
    """Show the clinician queue in ``state`` with ``token``, waiting for the list to reload."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver.find_element(By.ID, "tab-queue").click()
    fill(driver, "clinician-key", token)
    Select(driver.find_element(By.ID, "queue-state")).select_by_value(state)
    shown = driver.find_elements(By.CSS_SELECTOR, "li.case")
    driver.find_element(By.ID, "load-queue").click()
    if shown:  # wait for the list to be replaced, not for the old one to be found again
        WebDriverWait(driver, WAIT_S).until(ec.staleness_of(shown[0]))


def queue_case(driver: WebDriver, escalation_id: str) -> WebElement:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    found: WebElement = WebDriverWait(driver, WAIT_S).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, f'li.case[data-id="{escalation_id}"]'))
    )
    return found
