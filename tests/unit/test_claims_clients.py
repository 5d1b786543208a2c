"""Evidence clients against a local HTTP server replaying the services' real response formats."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from medgate.claims import CitationVerifier, LexicalSupportJudge, check_report
from medgate.claims.citations import find_citations
from medgate.claims.clients import (
    CircuitBreaker,
    CircuitOpenError,
    CircuitState,
    ClinicalTrialsClient,
    MalformedResponseError,
    OfflineError,
    OpenFDAClient,
    PubMedClient,
    RateLimiter,
    RequestRejectedError,
    ServiceUnavailableError,
)
from medgate.claims.records_store import OnlineRecordStore
from medgate.config import ServiceSettings

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claims"


@dataclass
class Reply:
    status: int = 200
    fixture: str | None = None
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0

    def payload(self) -> bytes:
        if self.fixture is not None:
            return (FIXTURES / self.fixture).read_bytes()
        return self.body.encode()


class ReplayServer:
    """Serves scripted replies per path, in order; the last reply of a path repeats."""

    def __init__(self) -> None:
        self.routes: dict[str, deque[Reply]] = {}
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                server.requests.append((parts.path, parse_qs(parts.query)))
                queue = server.routes.get(parts.path)
                reply = Reply(404, body='{"error": "no route"}')
                if queue:
                    reply = queue.popleft() if len(queue) > 1 else queue[0]
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                body = reply.payload()
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, path: str, *replies: Reply) -> None:
        self.routes[path] = deque(replies)

    def hits(self, path: str) -> int:
        return sum(1 for p, _ in self.requests if p == path)


class FakeClock:
    """Time that only moves when the code under test sleeps or the test advances it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    replay = ReplayServer()
    replay.thread.start()
    yield replay
    replay.httpd.shutdown()
    replay.httpd.server_close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def settings(server: ReplayServer, base: str = "", **overrides: float) -> ServiceSettings:
    values: dict[str, float] = {
        "timeout_s": 2.0,
        "max_retries": 3,
        "backoff_s": 0.5,
        "backoff_max_s": 8.0,
        "rate_per_s": 100.0,
        "failure_threshold": 3,
        "recovery_s": 30.0,
    }
    values.update(overrides)
    return ServiceSettings(base_url=server.url + base, **values)  # type: ignore[arg-type]


def pubmed(server: ReplayServer, clock: FakeClock, **overrides: float) -> PubMedClient:
    return PubMedClient(
        settings(server, "/entrez/eutils", **overrides),
        email="dev@example.org",
        api_key="",
        clock=clock,
        sleep=clock.sleep,
        jitter=lambda: 1.0,
    )


def trials(server: ReplayServer, clock: FakeClock, **overrides: float) -> ClinicalTrialsClient:
    return ClinicalTrialsClient(
        settings(server, "/api/v2", **overrides), clock=clock, sleep=clock.sleep
    )


def openfda(server: ReplayServer, clock: FakeClock, **overrides: float) -> OpenFDAClient:
    return OpenFDAClient(settings(server, **overrides), api_key="", clock=clock, sleep=clock.sleep)


EFETCH = "/entrez/eutils/efetch.fcgi"
ESEARCH = "/entrez/eutils/esearch.fcgi"


def test_pubmed_esearch_and_efetch_parse_real_formats(
    server: ReplayServer, clock: FakeClock
) -> None:
    server.script(ESEARCH, Reply(fixture="pubmed_esearch.json"))
    server.script(EFETCH, Reply(fixture="pubmed_efetch.xml"))
    client = pubmed(server, clock)

    ids = client.esearch("dapagliflozin kidney", retmax=2)
    articles = client.efetch(ids)

    assert ids == ["31535829", "26551272"]
    trial, case = articles
    assert trial.pmid == "31535829"
    assert trial.journal == "The New England journal of medicine"
    assert trial.year == 2020
    assert "Randomized Controlled Trial" in trial.publication_types
    assert trial.abstract.startswith("BACKGROUND: Patients with chronic kidney disease")
    assert "RESULTS: The primary outcome" in trial.abstract
    assert trial.doi == "10.1056/NEJMoa2024816"
    assert case.title == "Euglycaemic ketoacidosis during SGLT2 inhibitor therapy: a case report."
    _, query = server.requests[0]
    assert query["db"] == ["pubmed"] and query["retmode"] == ["json"]
    assert query["tool"] == ["medgate"] and query["email"] == ["dev@example.org"]
    assert server.requests[1][1]["id"] == ["31535829,26551272"]


def test_pubmed_unknown_pmid_is_none(server: ReplayServer, clock: FakeClock) -> None:
    server.script(EFETCH, Reply(fixture="pubmed_efetch_empty.xml"))
    assert pubmed(server, clock).fetch("99999999") is None


def test_retry_after_500_and_429_then_success(server: ReplayServer, clock: FakeClock) -> None:
    server.script(
        ESEARCH,
        Reply(500, body="Internal Server Error"),
        Reply(429, body='{"error":"API rate limit exceeded"}', headers={"Retry-After": "2"}),
        Reply(fixture="pubmed_esearch.json"),
    )
    client = pubmed(server, clock)

    assert client.esearch("x") == ["31535829", "26551272"]
    assert server.hits(ESEARCH) == 3
    backoffs = [s for s in clock.sleeps if s >= 0.1]  # rate-limit waits are 0.01 s here
    # first retry: backoff_s * 2**0 with jitter 1.0 = 0.5 s; second: Retry-After of 2 s wins
    assert backoffs == [0.5, 2.0]
    assert client.http.state is CircuitState.CLOSED


def test_retries_exhausted_raise_unavailable(server: ReplayServer, clock: FakeClock) -> None:
    server.script(ESEARCH, Reply(503, body="Service Unavailable"))
    client = pubmed(server, clock, max_retries=2)
    with pytest.raises(ServiceUnavailableError, match="HTTP 503 after 3 attempt"):
        client.esearch("x")
    assert server.hits(ESEARCH) == 3


def test_timeout_is_retried(server: ReplayServer, clock: FakeClock) -> None:
    server.script(
        ESEARCH,
        Reply(delay_s=0.6, fixture="pubmed_esearch.json"),
        Reply(fixture="pubmed_esearch.json"),
    )
    client = pubmed(server, clock, timeout_s=0.2)
    started = time.monotonic()
    assert client.esearch("x") == ["31535829", "26551272"]
    assert time.monotonic() - started < 0.6  # did not wait for the slow reply
    assert client.http.attempts == 2


def test_timeouts_exhausted_name_the_timeout(server: ReplayServer, clock: FakeClock) -> None:
    server.script(ESEARCH, Reply(delay_s=0.5, fixture="pubmed_esearch.json"))
    client = pubmed(server, clock, timeout_s=0.15, max_retries=1)
    with pytest.raises(ServiceUnavailableError, match="timed out"):
        client.esearch("x")


def test_breaker_opens_half_opens_and_closes(server: ReplayServer, clock: FakeClock) -> None:
    server.script("/api/v2/studies/NCT03036150", Reply(502, body="Bad Gateway"))
    client = trials(server, clock, max_retries=0, failure_threshold=2, recovery_s=30.0)

    for _ in range(2):
        with pytest.raises(ServiceUnavailableError):
            client.study("NCT03036150")
    assert client.http.state is CircuitState.OPEN

    sent = server.hits("/api/v2/studies/NCT03036150")
    with pytest.raises(CircuitOpenError):
        client.study("NCT03036150")
    assert server.hits("/api/v2/studies/NCT03036150") == sent  # refused without a request

    clock.now += 30.0
    assert client.http.state is CircuitState.HALF_OPEN
    # the trial call fails: straight back to open
    with pytest.raises(ServiceUnavailableError):
        client.study("NCT03036150")
    assert client.http.state is CircuitState.OPEN

    clock.now += 30.0
    server.script("/api/v2/studies/NCT03036150", Reply(fixture="ctgov_study.json"))
    assert client.http.state is CircuitState.HALF_OPEN
    study = client.study("NCT03036150")
    assert study is not None and study.nct_id == "NCT03036150"
    assert client.http.state is CircuitState.CLOSED


def test_half_open_lets_one_trial_through() -> None:
    now = [0.0]
    breaker = CircuitBreaker("x", failure_threshold=1, recovery_s=5.0, clock=lambda: now[0])
    breaker.record_failure()
    assert not breaker.allow()
    now[0] = 5.0
    assert breaker.allow()  # the trial
    assert not breaker.allow()  # a second caller waits for the trial's outcome
    breaker.record_success()
    assert breaker.state is CircuitState.CLOSED and breaker.allow()


def test_malformed_xml_body(server: ReplayServer, clock: FakeClock) -> None:
    server.script(EFETCH, Reply(fixture="pubmed_efetch_truncated.xml"))
    client = pubmed(server, clock, failure_threshold=1)
    with pytest.raises(MalformedResponseError, match="invalid XML"):
        client.fetch("31535829")
    # a service that answers garbage is as unusable as one that does not answer
    assert client.http.state is CircuitState.OPEN


def test_malformed_json_bodies(server: ReplayServer, clock: FakeClock) -> None:
    server.script(ESEARCH, Reply(body="<html>Service maintenance</html>"))
    server.script("/api/v2/studies/NCT03036150", Reply(fixture="ctgov_malformed.json"))
    server.script("/drug/event.json", Reply(fixture="openfda_malformed.json"))
    with pytest.raises(MalformedResponseError):
        pubmed(server, clock).esearch("x")
    with pytest.raises(MalformedResponseError, match="KeyError"):
        trials(server, clock).study("NCT03036150")
    with pytest.raises(MalformedResponseError, match="not a list"):
        openfda(server, clock).adverse_event_counts("metformin")


def test_esearch_error_field_is_malformed(server: ReplayServer, clock: FakeClock) -> None:
    server.script(ESEARCH, Reply(fixture="pubmed_esearch_error.json"))
    with pytest.raises(MalformedResponseError, match="Invalid query"):
        pubmed(server, clock).esearch("((")


def test_clinicaltrials_study_search_and_not_found(server: ReplayServer, clock: FakeClock) -> None:
    server.script("/api/v2/studies/NCT03036150", Reply(fixture="ctgov_study.json"))
    server.script("/api/v2/studies", Reply(fixture="ctgov_search.json"))
    server.script("/api/v2/studies/NCT00000000", Reply(404, fixture="ctgov_not_found.json"))
    client = trials(server, clock)

    study = client.study("nct03036150")
    assert study is not None
    assert study.allocation == "RANDOMIZED" and study.phases == ["PHASE3"]
    assert study.status == "COMPLETED" and study.has_results
    assert [s.nct_id for s in client.search("dapagliflozin")] == ["NCT03036150"]
    assert client.study("NCT00000000") is None
    with pytest.raises(ValueError, match="not an NCT id"):
        client.study("NCT123")


def test_openfda_label_counts_and_no_match(server: ReplayServer, clock: FakeClock) -> None:
    server.script("/drug/label.json", Reply(fixture="openfda_label.json"))
    server.script("/drug/event.json", Reply(fixture="openfda_event_count.json"))
    client = openfda(server, clock)

    (label,) = client.drug_labels("metformin hydrochloride")
    assert "500 mg orally twice a day" in label.dosage
    assert "LACTIC ACIDOSIS" in label.boxed_warning
    assert label.generic_names == ["METFORMIN HYDROCHLORIDE"]
    counts = client.adverse_event_counts("metformin")
    assert (counts[0].term, counts[0].count) == ("NAUSEA", 10731)
    query = server.requests[0][1]
    assert query["search"] == ['openfda.generic_name:"metformin hydrochloride"']

    server.script("/drug/label.json", Reply(404, fixture="openfda_not_found.json"))
    assert client.drug_labels("nosuchdrug") == []


def test_client_error_is_not_retried(server: ReplayServer, clock: FakeClock) -> None:
    server.script("/drug/label.json", Reply(400, body='{"error": {"code": "BAD_REQUEST"}}'))
    client = openfda(server, clock)
    with pytest.raises(RequestRejectedError, match="HTTP 400"):
        client.drug_labels("metformin")
    assert server.hits("/drug/label.json") == 1
    assert client.http.state is CircuitState.CLOSED


def test_offline_mode_sends_nothing(server: ReplayServer, clock: FakeClock) -> None:
    client = PubMedClient(settings(server, "/entrez/eutils"), offline=True)
    with pytest.raises(OfflineError):
        client.esearch("x")
    assert server.requests == []


def test_rate_limiter_spaces_requests() -> None:
    clock = FakeClock()
    limiter = RateLimiter(2.0, clock=clock, sleep=clock.sleep)
    waits = [limiter.acquire() for _ in range(3)]
    assert waits == [0.0, 0.5, 0.5]


def test_online_store_verifies_citations_end_to_end(server: ReplayServer, clock: FakeClock) -> None:
    server.script(EFETCH, Reply(fixture="pubmed_efetch.xml"))
    server.script("/api/v2/studies/NCT03036150", Reply(fixture="ctgov_study.json"))
    server.script("/api/v2/studies/NCT09999999", Reply(404, fixture="ctgov_not_found.json"))
    store = OnlineRecordStore(pubmed(server, clock), trials(server, clock))
    verifier = CitationVerifier(store, LexicalSupportJudge(0.65))
    report = (
        "Dapagliflozin lowered the risk of end-stage kidney disease or renal death in patients "
        "with chronic kidney disease, as clinical trials have shown (PMID: 31535829).\n"
        "A trial found that dapagliflozin cures migraine in 80% of patients (NCT09999999)."
    )

    result = check_report(report, verifier)

    assert result.verification is not None
    statuses = [(c.resolved_key, c.status.value) for c in result.verification.checks]
    assert statuses == [("PMID:31535829", "supported"), ("NCT09999999", "unresolvable")]
    first = result.verification.checks[0]
    assert first.evidence is not None and first.evidence.level is not None
    assert first.evidence.level.value == "II"
    assert first.credibility is not None and first.credibility.score == 98
    assert [f.kind.value for f in result.flags] == ["unresolvable"]
    assert not result.is_safe


def test_service_outage_fails_closed(server: ReplayServer, clock: FakeClock) -> None:
    server.script(EFETCH, Reply(500, body="error"))
    store = OnlineRecordStore(pubmed(server, clock, max_retries=1), trials(server, clock))
    verifier = CitationVerifier(store, LexicalSupportJudge())
    text = "Studies show that dapagliflozin protects the kidney (PMID: 31535829)."
    result = check_report(text, verifier)
    assert result.verification is not None
    assert result.verification.checks[0].status.value == "error"
    assert result.errors and not result.is_safe
    assert find_citations(text)[0].value == "31535829"


def test_unexpected_request_error_counts_against_the_breaker(clock: FakeClock) -> None:
    import httpx

    def broken(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("decoder bug")

    client = ClinicalTrialsClient(
        ServiceSettings(base_url="http://127.0.0.1:9", failure_threshold=1, max_retries=0),
        transport=httpx.MockTransport(broken),
        clock=clock,
        sleep=clock.sleep,
    )
    with pytest.raises(ServiceUnavailableError, match="decoder bug"):
        client.study("NCT03036150")
    assert client.http.state is CircuitState.OPEN
