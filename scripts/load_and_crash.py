"""Load the service, SIGKILL it mid-load, restart it, and check nothing acknowledged was lost.

N concurrent clients post cases (a quarter of them over the SSE endpoint) to a local server
whose gate is a scripted fake: it escalates a fixed share of questions after a short delay. After
the load phase the server is killed with SIGKILL while requests are in flight, then restarted on
the same database. Every escalation whose id a client received must be in the queue, and the
audit chain must verify. Prints a JSON report; exits 1 if anything was lost or the chain broke.

    PYTHONPATH=src python scripts/load_and_crash.py --clients 32 --seconds 20
    PYTHONPATH=src python scripts/load_and_crash.py --clients 32 --seconds 20 --throwaway-postgres
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from medgate.careguard.triage import no_triage
from medgate.claims.safety_check import check_safety
from medgate.config import MedgateConfig
from medgate.events import (
    AnswerEvent,
    ClaimsEvent,
    DecisionEvent,
    DraftAnswer,
    EventSink,
    GateDecision,
    SignalsEvent,
    TriageEvent,
    discard,
)
from medgate.records import Case, SignalValue, Status
from medgate.store import EscalationState, NotFoundError, Role, Store
from medgate.verdict import Verdict


class FakeGate:
    """Escalates a fixed share of questions (by hash, so it is reproducible) after a delay."""

    def __init__(self, escalate_share: float, delay_s: float) -> None:
        self.escalate_share = escalate_share
        self.delay_s = delay_s

    def check(self, case: Case, events: EventSink = discard) -> Verdict:
        bucket = int(hashlib.sha256(case.question.encode()).hexdigest()[:8], 16) % 1000
        escalate = bucket < self.escalate_share * 1000
        events(TriageEvent(stage="fake", data=no_triage()))
        time.sleep(self.delay_s / 2)
        events(AnswerEvent(stage="fake", iteration=0, data=DraftAnswer(answer="Yes.")))
        entropy = SignalValue(name="entropy", value=0.5, layer="decision")
        events(SignalsEvent(stage="fake", iteration=0, data={"entropy": entropy}))
        time.sleep(self.delay_s / 2)
        events(ClaimsEvent(stage="fake", data=check_safety("Yes.", [])))
        status = Status.ESCALATED if escalate else Status.RELEASED
        events(DecisionEvent(stage="fake", data=GateDecision(status=status, reason="fake gate")))
        return Verdict(
            status=status,
            answer=None if escalate else "Yes.",
            reason="fake gate",
            case=case,
        )


def serve(args: argparse.Namespace) -> None:
    """The server process: the real app over the fake gate."""
    import uvicorn

    from medgate.server import create_app

    config = MedgateConfig.model_validate(
        {
            "store": {"database_url": args.database_url},
            "server": {
                "rate_per_minute": 10_000_000,
                "rate_burst": 1_000_000,
                "max_concurrent_checks": max(4, args.clients),
                "gate_timeout_s": 30,
            },
        }
    )
    app = create_app(FakeGate(args.escalate_share, args.gate_delay_ms / 1000), config=config)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    acknowledged_escalations: list[str] = field(default_factory=list)
    ok: int = 0
    errors: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def client_loop(
    base: str,
    token: str,
    number: int,
    stop: threading.Event,
    measuring: threading.Event,
    tally: Tally,
) -> None:
    use_stream = number % 4 == 0
    headers = {"Authorization": f"Bearer {token}"}
    sent = 0
    with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
        while not stop.is_set():
            sent += 1
            body = {"question": f"client {number} question {sent}: is this drug safe?"}
            started = time.perf_counter()
            try:
                escalation = _stream(http, body) if use_stream else _check(http, body)
            except (httpx.HTTPError, ValueError):
                with tally.lock:
                    tally.errors += 1
                time.sleep(0.05)
                continue
            elapsed = time.perf_counter() - started
            with tally.lock:
                tally.ok += 1
                if measuring.is_set():
                    tally.latencies.append(elapsed)
                if escalation:
                    tally.acknowledged_escalations.append(escalation)


def _check(http: httpx.Client, body: dict[str, Any]) -> str | None:
    response = http.post("/v1/check", json=body)
    response.raise_for_status()
    found: str | None = response.json()["escalation_id"]
    return found


def _stream(http: httpx.Client, body: dict[str, Any]) -> str | None:
    decision: dict[str, Any] | None = None
    with http.stream("POST", "/v1/ask/stream", json=body) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["kind"] == "decision":
                    decision = event["data"]
    if decision is None:
        raise ValueError("stream ended without a decision")
    found: str | None = decision["escalation_id"]
    return found


def start_server(args: argparse.Namespace) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, __file__, "--serve", "--port", str(args.port),
        "--database-url", args.database_url, "--clients", str(args.clients),
        "--escalate-share", str(args.escalate_share), "--gate-delay-ms", str(args.gate_delay_ms),
    ]  # fmt: skip
    process = subprocess.Popen(command, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{args.port}/readyz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the server did not become ready")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(args: argparse.Namespace) -> int:
    store = Store.from_url(args.database_url)
    _, client_token = store.create_key("load client", Role.CLIENT)
    _, clinician_token = store.create_key("load clinician", Role.CLINICIAN)
    base = f"http://127.0.0.1:{args.port}"
    server = start_server(args)
    tally, stop, measuring = Tally(), threading.Event(), threading.Event()
    clients = [
        threading.Thread(
            target=client_loop, args=(base, client_token, n, stop, measuring, tally), daemon=True
        )
        for n in range(args.clients)
    ]
    for thread in clients:
        thread.start()
    time.sleep(1.0)  # warm-up, not measured
    measuring.set()
    with tally.lock:
        ok_before = tally.ok
    measure_start = time.perf_counter()
    time.sleep(args.seconds)
    with tally.lock:
        measured_ok = tally.ok - ok_before
        latencies = list(tally.latencies)
    measured_s = time.perf_counter() - measure_start
    measuring.clear()
    with tally.lock:
        failed_before_kill = tally.errors
    os.kill(server.pid, signal.SIGKILL)  # mid-load: requests are in flight
    server.wait()
    time.sleep(1.0)  # clients keep trying against the dead server
    stop.set()
    for thread in clients:
        thread.join(35)

    server = start_server(args)
    try:
        lost = []
        for esc_id in tally.acknowledged_escalations:
            try:
                store.get_escalation(esc_id)
            except NotFoundError:
                lost.append(esc_id)
        via_api = httpx.get(
            f"{base}/v1/escalations",
            params={"state": "open", "limit": 500},
            headers={"Authorization": f"Bearer {clinician_token}"},
        )
        via_api.raise_for_status()
        audit = store.verify_audit()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    report = {
        "clients": args.clients,
        "database": store.engine.dialect.name,
        "gate_delay_ms": args.gate_delay_ms,
        "measured_seconds": round(measured_s, 2),
        "measured_requests": measured_ok,
        "throughput_rps": round(measured_ok / measured_s, 1),
        "latency_p50_ms": round(statistics.median(latencies) * 1000, 1),
        "latency_p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
        "requests_ok_total": tally.ok,
        "requests_failed_before_kill": failed_before_kill,
        "requests_failed_after_kill": tally.errors - failed_before_kill,
        "acknowledged_escalations": len(tally.acknowledged_escalations),
        "lost_escalations": len(lost),
        "open_in_queue_after_restart": store.count_escalations(EscalationState.OPEN),
        "audit_entries": audit.entries,
        "audit_ok": audit.ok,
        "audit_problems": audit.problems[:5],
    }
    print(json.dumps(report, indent=2))
    store.close()
    return 0 if not lost and audit.ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16, help="Concurrent clients (N).")
    parser.add_argument("--seconds", type=float, default=20.0, help="Measured load before kill.")
    parser.add_argument("--escalate-share", type=float, default=0.3)
    parser.add_argument("--gate-delay-ms", type=float, default=20.0, help="Fake gate work time.")
    parser.add_argument("--database-url", default=None, help="Default: a new SQLite file.")
    parser.add_argument(
        "--throwaway-postgres",
        action="store_true",
        help="Start a temporary PostgreSQL server (Debian's postgresql package) and use it.",
    )
    parser.add_argument("--port", type=int, default=0, help="Default: a free port.")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args)
        return 0
    if args.port == 0:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            args.port = sock.getsockname()[1]
    if args.throwaway_postgres:
        # The throwaway server the store tests start; medgate is killed, not PostgreSQL.
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "store"))
        from throwaway_postgres import find_bin_dir, throwaway_postgres  # type: ignore[import-not-found]

        bin_dir = find_bin_dir()
        if bin_dir is None:
            raise SystemExit("PostgreSQL binaries not found: apt-get install postgresql")
        with throwaway_postgres(bin_dir) as url:
            args.database_url = url
            return run(args)
    if args.database_url is None:
        folder = Path(tempfile.mkdtemp(prefix="medgate-load-"))
        args.database_url = f"sqlite:///{folder / 'medgate.db'}"
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
