"""The review queue through the HTTP API on each database: clinicians racing for one case."""

from __future__ import annotations

import threading
from pathlib import Path

from fastapi.testclient import TestClient

from medgate.config import MedgateConfig
from medgate.events import DecisionEvent, EventSink, GateDecision, discard
from medgate.records import Case, Status
from medgate.server import create_app
from medgate.store import EscalationState, Role, Store
from medgate.verdict import Verdict


class EscalatingGate:
    """Holds every case for a clinician."""

    def check(self, case: Case, events: EventSink = discard) -> Verdict:
        events(
            DecisionEvent(stage="test", data=GateDecision(status=Status.ESCALATED, reason="held"))
        )
        return Verdict(status=Status.ESCALATED, reason="always held", case=case)


def test_clinicians_racing_over_http_get_one_claim(store: Store, tmp_path: Path) -> None:
    config = MedgateConfig.model_validate(
        {"cache_dir": tmp_path, "server": {"rate_per_minute": 6000, "rate_burst": 500}}
    )
    _, client_token = store.create_key("app", Role.CLIENT)
    clinicians = [store.create_key(f"dr {n}", Role.CLINICIAN)[1] for n in range(6)]
    with TestClient(create_app(EscalatingGate(), config=config, store=store)) as http:
        created = http.post(
            "/v1/check",
            json={"question": "Can I stop my statin?"},
            headers={"Authorization": f"Bearer {client_token}"},
        )
        assert created.status_code == 200
        esc_id = created.json()["escalation_id"]
        barrier = threading.Barrier(len(clinicians))
        codes: list[int] = []

        def claim(token: str) -> None:
            barrier.wait()
            response = http.post(
                f"/v1/escalations/{esc_id}/claim", headers={"Authorization": f"Bearer {token}"}
            )
            codes.append(response.status_code)

        threads = [threading.Thread(target=claim, args=(t,)) for t in clinicians]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert sorted(codes) == [200] + [409] * (len(clinicians) - 1)
    assert store.get_escalation(esc_id).state is EscalationState.CLAIMED
    assert store.verify_audit().ok
