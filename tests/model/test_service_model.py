"""The service and its page over the embedded model: the person asking sees nothing of what the
gate held back, the clinician sees the held-back answer and its reasoning and can approve it.

The HRS thresholds here are set so that every case is escalated after the first answer
(gate_e = gate_p = 0, no orchestrator rounds): this test is about what each role sees of a real
model's held-back answer, not about when the gate releases one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from medgate.backends.llamacpp import LlamaCppModel
from medgate.careguard import (
    Controller,
    Evaluators,
    Generator,
    HallucinationJudge,
    SafetyJudge,
)
from medgate.careguard.gate import CareGuardGate
from medgate.config import CareGuardConfig, HRSConfig
from medgate.hrs import ModelOrchestrator
from medgate.hrs.gate import HRSGate
from medgate.pipeline import RoutingGate
from medgate.records import Case
from medgate.redaction import ClientVerdict
from medgate.server import create_app
from medgate.store import EscalationState, Resolution, Role, Store
from tests.unit.server.browser_support import (
    WAIT_S,
    ask,
    chromium,
    fill,
    open_queue,
    queue_case,
    require_chromium,
)
from tests.unit.server.service_support import running_server, service_config

pytestmark = pytest.mark.model
require_chromium()

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

#: One answer per case, always escalated: see the module docstring.
ALWAYS_ESCALATE = HRSConfig(
    signals=["entropy", "perplexity", "token_length"], max_iterations=0, gate_e=0.0, gate_p=0.0
)
CHECK_WAIT_S = 600  # one model call on a shared 2-core machine, with room to spare


@dataclass
class Service:
    url: str
    store: Store
    client: str
    clinician: str

    def auth(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def service(tmp_path: Path, embedded: LlamaCppModel) -> Iterator[Service]:
    hrs = HRSGate(embedded, ModelOrchestrator(embedded), ALWAYS_ESCALATE)
    careguard = CareGuardGate(
        Controller(embedded),
        Generator(embedded),
        Evaluators([SafetyJudge(embedded), HallucinationJudge(embedded)]),
        CareGuardConfig(),
    )
    gate = RoutingGate(research=hrs, patient=careguard)
    store = Store.from_url(f"sqlite:///{tmp_path / 'medgate.db'}")
    config = service_config(tmp_path, gate_timeout_s=CHECK_WAIT_S)
    client = store.create_key("app", Role.CLIENT)[1]
    clinician = store.create_key("dr a", Role.CLINICIAN)[1]
    with running_server(create_app(gate, config=config, store=store)) as url:
        yield Service(url, store, client, clinician)
    store.close()


def test_a_client_check_holds_back_what_the_clinician_sees(
    service: Service, pubmedqa_case: Case
) -> None:
    """The issue's acceptance check: a client's POST /v1/check of an escalated case, and the
    same case streamed, carry no held-back answer or reasoning; a clinician's
    GET /v1/verdicts/{id} shows both."""
    body = {"question": pubmedqa_case.question, "context": pubmedqa_case.context}
    client, clinician = service.auth(service.client), service.auth(service.clinician)
    with httpx.Client(base_url=service.url, timeout=CHECK_WAIT_S) as http:
        checked = http.post("/v1/check", json=body, headers=client)
        assert checked.status_code == 200, checked.text
        streamed = http.post("/v1/ask/stream", json=body, headers=client)
        assert streamed.status_code == 200, streamed.text
        events = [
            json.loads(line.removeprefix("data: "))
            for line in streamed.text.splitlines()
            if line.startswith("data: ")
        ]
        ids = [checked.json()["verdict_id"], events[-1]["data"]["verdict_id"]]
        as_clinician = [
            http.get(f"/v1/verdicts/{i}", headers=clinician).json()["verdict"] for i in ids
        ]
        as_client = http.get(f"/v1/verdicts/{ids[0]}", headers=client)
    assert checked.json()["status"] == "escalated"
    assert events[-1]["kind"] == "decision" and events[-1]["data"]["status"] == "escalated"
    for verdict in as_clinician:
        held = verdict["held_back"]
        assert held["answer"] in ("yes", "no", "maybe")
        assert len(held["reasoning"]) >= 20  # the model wrote its reasoning first
        assert held["source"] == "hrs round 0"
    reasoning = [v["held_back"]["reasoning"] for v in as_clinician]
    assert reasoning[0] not in checked.text and reasoning[0] not in as_client.text
    assert reasoning[1] not in streamed.text
    for response in (checked, as_client):
        # The asker's view, field by field (the abstract itself may say "trace" or the like).
        assert set(response.json()["verdict"]) == set(ClientVerdict.model_fields)
        assert response.json()["verdict"]["answer"] is None
    answer_events = [e["data"] for e in events if e["kind"] == "answer"]
    assert answer_events == [{}]  # the draft's place in the sequence, none of its text
    assert events[-1]["data"]["answer"] is None and "held_back" not in events[-1]["data"]


def test_the_page_shows_the_client_nothing_held_back_and_the_clinician_approves_it(
    service: Service, pubmedqa_case: Case
) -> None:
    with chromium() as browser:
        browser.get(service.url + "/")
        fill(browser, "client-key", service.client)
        ask(browser, pubmedqa_case.question, labels="yes,no,maybe", context=pubmedqa_case.context)
        WebDriverWait(browser, CHECK_WAIT_S).until(
            ec.text_to_be_present_in_element((By.ID, "status"), "escalated")
        )
        esc_id = browser.find_element(By.ID, "escalation").text.removeprefix("Escalation ")
        stored = service.store.get_escalation(esc_id.strip()).verdict
        held = stored.held_back
        assert held is not None and held.reasoning
        # Nothing the model wrote is on the asking side: not the reasoning, not the label.
        assert held.reasoning not in browser.page_source
        answer_box = browser.find_element(By.ID, "answer").text
        assert answer_box == "This question has been passed to a clinician, who will answer it."
        events = browser.find_element(By.ID, "events").text
        assert "draft answer, being checked" in events and held.reasoning not in events

        open_queue(browser, service.clinician)
        case = queue_case(browser, esc_id.strip())
        shown = case.find_element(By.CLASS_NAME, "model-answer").text
        assert shown == f"Model's answer (held back, hrs round 0): {held.answer}"
        case.find_element(By.CSS_SELECTOR, ".reasoning-block summary").click()
        assert case.find_element(By.CLASS_NAME, "reasoning").text == held.reasoning.strip()
        case.find_element(By.CLASS_NAME, "claim").click()
        wait = WebDriverWait(browser, WAIT_S)
        wait.until(ec.text_to_be_present_in_element((By.ID, "queue-message"), "Claimed"))
        case = queue_case(browser, esc_id.strip())
        Select(case.find_element(By.CLASS_NAME, "action")).select_by_value("approve")
        case.find_element(By.CLASS_NAME, "clinician-note").send_keys("reading checked")
        case.find_element(By.CLASS_NAME, "do-resolve").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "queue-message"), "Resolved"))

        browser.find_element(By.ID, "tab-ask").click()
        browser.find_element(By.ID, "check-review").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "review"), "approved"))
        review = browser.find_element(By.ID, "review").text
        assert review == f"A clinician approved the model's answer: {held.answer}"
        assert held.reasoning not in browser.find_element(By.ID, "ask-view").text

    resolved = service.store.get_escalation(esc_id.strip())
    assert resolved.state is EscalationState.RESOLVED
    assert (resolved.resolution, resolved.answer) == (Resolution.APPROVE, held.answer)
    assert service.store.verify_audit().ok
