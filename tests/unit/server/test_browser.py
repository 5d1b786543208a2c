"""The web page in headless Chromium against a real uvicorn server: ask, see the safety panel,
then resolve an escalation as a clinician."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from service_gate import ScriptedGate
from service_support import Keys, running_server, service_config

from medgate.server import create_app
from medgate.store import EscalationState, Resolution, Store

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

selenium = pytest.importorskip("selenium", reason="selenium is in the 'dev' extra")
if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()) and not shutil.which("chromium"):
    pytest.skip(
        "Chromium not installed (Debian packages 'chromium' and 'chromium-driver': "
        "scripts/ci-apt-packages.txt)",
        allow_module_level=True,
    )

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


@pytest.fixture
def server_url(tmp_path: Path, store: Store, gate: ScriptedGate) -> Iterator[str]:
    with running_server(create_app(gate, config=service_config(tmp_path), store=store)) as url:
        yield url


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def _fill(driver: WebDriver, element_id: str, text: str) -> None:
    element = driver.find_element(By.ID, element_id)
    element.clear()
    element.send_keys(text)


def test_ask_then_resolve_as_clinician(
    browser: WebDriver, server_url: str, keys: Keys, store: Store
) -> None:
    wait = WebDriverWait(browser, 20)
    browser.get(server_url + "/")
    assert browser.title == "medgate"

    # A released answer with its safety panel.
    _fill(browser, "client-key", keys.client)
    _fill(browser, "question", "Is aspirin an antiplatelet drug?")
    browser.find_element(By.ID, "ask").click()
    wait.until(ec.visibility_of_element_located((By.ID, "safety")))
    assert browser.find_element(By.ID, "status").text == "released"
    assert "Aspirin is an antiplatelet drug" in browser.find_element(By.ID, "answer").text
    groups = [g.text for g in browser.find_elements(By.CSS_SELECTOR, "#flags .flag-group h4")]
    assert groups == ["HIGH (1)", "LOW (1)"]  # by severity, most severe first
    assert "dose stated without a source" in browser.find_element(By.ID, "flags").text
    assert browser.find_element(By.ID, "warnings").text == "check renal function"
    assert "not medical advice" in browser.find_element(By.ID, "disclaimer").text
    kinds = [e.text.split(" ")[0] for e in browser.find_elements(By.CSS_SELECTOR, "#events li")]
    assert kinds == ["triage", "answer", "signals", "signals", "safety", "decision"]

    # An escalated case: no answer, no safety panel, the escalation named.
    _fill(browser, "question", "Please escalate: can I double my warfarin dose?")
    browser.find_element(By.ID, "ask").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "escalated"))
    assert not browser.find_element(By.ID, "safety").is_displayed()
    browser.find_element(By.ID, "check-review").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "review"), "Not answered yet"))
    escalation_text = browser.find_element(By.ID, "escalation").text
    esc_id = escalation_text.removeprefix("Escalation ").strip()
    assert store.get_escalation(esc_id).state is EscalationState.OPEN

    # The clinician claims and answers it.
    browser.find_element(By.ID, "tab-queue").click()
    _fill(browser, "clinician-key", keys.clinician)
    browser.find_element(By.ID, "load-queue").click()
    case = wait.until(
        ec.presence_of_element_located((By.CSS_SELECTOR, f'li.case[data-id="{esc_id}"]'))
    )
    assert "double my warfarin dose" in case.find_element(By.CLASS_NAME, "question").text
    draft = case.find_element(By.CLASS_NAME, "model-answer").text
    assert draft == "Model's draft (held back): Maybe."
    case.find_element(By.CLASS_NAME, "claim").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "queue-message"), "Claimed"))
    case = browser.find_element(By.CSS_SELECTOR, f'li.case[data-id="{esc_id}"]')
    Select(case.find_element(By.CLASS_NAME, "action")).select_by_value("answer")
    case.find_element(By.CLASS_NAME, "clinician-answer").send_keys("No. Do not change the dose.")
    case.find_element(By.CLASS_NAME, "clinician-note").send_keys("INR risk; told to call GP")
    case.find_element(By.CLASS_NAME, "do-resolve").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "queue-message"), "Resolved (answer)"))

    # Back on the asking side, the clinician's answer is there.
    browser.find_element(By.ID, "tab-ask").click()
    browser.find_element(By.ID, "check-review").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "review"), "Clinician's answer"))
    assert browser.find_element(By.ID, "review").text == (
        "Clinician's answer: No. Do not change the dose."
    )

    resolved = store.get_escalation(esc_id)
    assert resolved.state is EscalationState.RESOLVED
    assert resolved.resolution is Resolution.ANSWER
    assert resolved.answer == "No. Do not change the dose."
    assert store.verify_audit().ok


def test_api_docs_render_without_a_network(browser: WebDriver, server_url: str) -> None:
    # The browser here reaches nothing but the service, so this fails if any asset is remote.
    browser.get(server_url + "/docs")
    WebDriverWait(browser, 20).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, ".swagger-ui .opblock"))
    )
    paths = {e.text for e in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
    assert "/v1/check" in paths
    assert "/v1/escalations/{escalation_id}/resolve" in paths
