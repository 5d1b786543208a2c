"""The web page in headless Chromium against a real uvicorn server over the real gates on
scripted fake models: ask, see the safety panel, then work an escalation as a clinician."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_support import ask, chromium, fill, open_queue, queue_case, require_chromium
from service_gate import (
    ESCALATING,
    GENERAL,
    HELD_REASONING,
    RELEASED_DRAFT,
    ServiceGate,
    held_back_texts,
)
from service_support import Keys, running_server, service_config

from medgate.server import create_app
from medgate.store import EscalationState, Resolution, Store

require_chromium()

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


@pytest.fixture
def server_url(tmp_path: Path, store: Store, gate: ServiceGate) -> Iterator[str]:
    with running_server(create_app(gate, config=service_config(tmp_path), store=store)) as url:
        yield url


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    with chromium() as driver:
        yield driver


def test_ask_then_approve_as_clinician(
    browser: WebDriver, server_url: str, keys: Keys, store: Store
) -> None:
    wait = WebDriverWait(browser, 20)
    browser.get(server_url + "/")
    assert browser.title == "medgate"

    # A patient question: routed to CareGuard, released with the safety panel of its answer.
    fill(browser, "client-key", keys.client)
    ask(browser, GENERAL)
    wait.until(ec.visibility_of_element_located((By.ID, "safety")))
    assert browser.find_element(By.ID, "status").text == "released"
    assert browser.find_element(By.ID, "route").text.startswith("Answered by the CareGuard")
    assert RELEASED_DRAFT in browser.find_element(By.ID, "answer").text
    groups = [g.text for g in browser.find_elements(By.CSS_SELECTOR, "#flags .flag-group h4")]
    assert groups == ["MEDIUM (1)"]
    assert "A 2019 review found" in browser.find_element(By.ID, "flags").text
    assert "No sources cited" in browser.find_element(By.ID, "warnings").text
    assert "not a substitute" in browser.find_element(By.ID, "disclaimer").text
    kinds = [e.text.split(" ")[0] for e in browser.find_elements(By.CSS_SELECTOR, "#events li")]
    assert kinds == ["route", "triage", "answer", "signals", "claims", "safety", "decision"]

    # A closed research question the HRS gate escalates: nothing the model wrote is on the page.
    ask(browser, ESCALATING, "yes,no,maybe")
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "escalated"))
    assert not browser.find_element(By.ID, "safety").is_displayed()
    assert browser.find_element(By.ID, "route").text.startswith("Answered by the HRS gate")
    for secret in held_back_texts():
        assert secret not in browser.page_source
    browser.find_element(By.ID, "check-review").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "review"), "Not answered yet"))
    escalation_text = browser.find_element(By.ID, "escalation").text
    esc_id = escalation_text.removeprefix("Escalation ").strip()
    assert store.get_escalation(esc_id).state is EscalationState.OPEN

    # The clinician sees the held-back answer and its reasoning, claims and approves it.
    open_queue(browser, keys.clinician)
    case = queue_case(browser, esc_id)
    assert ESCALATING in case.find_element(By.CLASS_NAME, "question").text
    held = case.find_element(By.CLASS_NAME, "model-answer").text
    assert held == "Model's answer (held back, hrs round 0): yes"
    case.find_element(By.CSS_SELECTOR, ".reasoning-block summary").click()
    assert case.find_element(By.CLASS_NAME, "reasoning").text == HELD_REASONING
    case.find_element(By.CLASS_NAME, "claim").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "queue-message"), "Claimed"))
    case = queue_case(browser, esc_id)
    Select(case.find_element(By.CLASS_NAME, "action")).select_by_value("approve")
    case.find_element(By.CLASS_NAME, "clinician-note").send_keys("baseline reading is right")
    case.find_element(By.CLASS_NAME, "do-resolve").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "queue-message"), "Resolved (approve)"))
    assert (
        "released: yes" in queue_case(browser, esc_id).find_element(By.CLASS_NAME, "outcome").text
    )

    # Back on the asking side, the approved answer is there, and still no reasoning.
    browser.find_element(By.ID, "tab-ask").click()
    browser.find_element(By.ID, "check-review").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "review"), "approved"))
    assert browser.find_element(By.ID, "review").text == (
        "A clinician approved the model's answer: yes"
    )
    assert HELD_REASONING not in browser.find_element(By.ID, "ask-view").text

    resolved = store.get_escalation(esc_id)
    assert resolved.state is EscalationState.RESOLVED
    assert resolved.resolution is Resolution.APPROVE
    assert resolved.answer == "yes"
    assert store.verify_audit().ok


def test_a_clinician_hands_a_case_over_then_it_is_answered(
    browser: WebDriver, server_url: str, keys: Keys, store: Store
) -> None:
    wait = WebDriverWait(browser, 20)
    browser.get(server_url + "/")
    fill(browser, "client-key", keys.client)
    ask(browser, ESCALATING, "yes,no,maybe")
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "escalated"))
    esc_id = browser.find_element(By.ID, "escalation").text.removeprefix("Escalation ").strip()
    dr_b = next(k.id for k in store.list_keys() if k.name == "dr b")

    open_queue(browser, keys.clinician)
    queue_case(browser, esc_id).find_element(By.CLASS_NAME, "claim").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "queue-message"), "Claimed"))
    case = queue_case(browser, esc_id)
    Select(case.find_element(By.CLASS_NAME, "colleague")).select_by_value(dr_b)
    case.find_element(By.CLASS_NAME, "reassign").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "queue-message"), f"Reassigned to {dr_b}"))
    assert store.get_escalation(esc_id).claimed_by == dr_b

    # Dr B gives it back to the queue, then Dr A takes it again and answers it.
    open_queue(browser, keys.other_clinician, "claimed")
    queue_case(browser, esc_id).find_element(By.CLASS_NAME, "release").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "queue-message"), "Released"))
    assert store.get_escalation(esc_id).state is EscalationState.OPEN
    open_queue(browser, keys.clinician)
    queue_case(browser, esc_id).find_element(By.CLASS_NAME, "claim").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "queue-message"), "Claimed"))
    case = queue_case(browser, esc_id)
    Select(case.find_element(By.CLASS_NAME, "action")).select_by_value("answer")
    case.find_element(By.CLASS_NAME, "clinician-answer").send_keys("Probably not; see the trial.")
    case.find_element(By.CLASS_NAME, "clinician-note").send_keys("read the full paper")
    case.find_element(By.CLASS_NAME, "do-resolve").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "queue-message"), "Resolved (answer)"))

    browser.find_element(By.ID, "tab-ask").click()
    browser.find_element(By.ID, "check-review").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "review"), "Clinician's answer"))
    assert browser.find_element(By.ID, "review").text == (
        "Clinician's answer: Probably not; see the trial."
    )
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
