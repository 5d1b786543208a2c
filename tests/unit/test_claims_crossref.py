"""Crossref against a local HTTP server replaying its response format; DOI and author-year
citations resolved end to end through the online record store."""

from __future__ import annotations

import pytest

from medgate.claims import CitationVerifier, LexicalSupportJudge, check_report
from medgate.claims.clients import MalformedResponseError
from medgate.claims.clients.crossref import CrossrefClient
from medgate.claims.records_store import OnlineRecordStore
from tests.unit.test_claims_clients import (
    FakeClock,
    ReplayServer,
    Reply,
    clock,
    pubmed,
    server,
    settings,
    trials,
)

__all__ = ["clock", "server"]  # pytest fixtures, imported for their names

WORK = "/works/10.1056/nejmoa2032183"
SEARCH = "/works"


def crossref(server: ReplayServer, clock: FakeClock, **overrides: float) -> CrossrefClient:
    return CrossrefClient(
        settings(server, **overrides), mailto="dev@example.org", clock=clock, sleep=clock.sleep
    )


def test_work_by_doi_parses_the_format(server: ReplayServer, clock: FakeClock) -> None:
    server.script(WORK, Reply(fixture="crossref_work.json"))
    work = crossref(server, clock).work("10.1056/NEJMoa2032183")
    assert work is not None
    assert work.doi == "10.1056/nejmoa2032183"
    assert work.authors == ["Wilding", "Batterham", "Calanna"]
    assert work.year == 2021
    assert work.journal == "New England Journal of Medicine"
    assert work.abstract.startswith("In adults with overweight or obesity")
    assert "<jats" not in work.abstract
    _, query = server.requests[0]
    assert query["mailto"] == ["dev@example.org"]


def test_unknown_doi_is_none_and_bad_body_is_malformed(
    server: ReplayServer, clock: FakeClock
) -> None:
    server.script("/works/10.1000/nothing", Reply(404, body="Resource not found."))
    server.script("/works/10.1000/broken", Reply(fixture="crossref_malformed.json"))
    client = crossref(server, clock)
    assert client.work("10.1000/nothing") is None
    with pytest.raises(MalformedResponseError):
        client.work("10.1000/broken")
    with pytest.raises(ValueError, match="not a DOI"):
        client.work("nejm 2021")


def test_search_sends_author_year_and_topic(server: ReplayServer, clock: FakeClock) -> None:
    server.script(SEARCH, Reply(fixture="crossref_search.json"))
    works = crossref(server, clock).search("Wilding", 2021, about="semaglutide body weight")
    assert [w.doi for w in works] == ["10.1016/j.jhep.2021.01.004", "10.1056/nejmoa2032183"]
    _, query = server.requests[0]
    assert query["query.author"] == ["Wilding"]
    assert query["filter"] == ["from-pub-date:2021,until-pub-date:2021"]
    assert query["query.bibliographic"] == ["semaglutide body weight"]


def _store(server: ReplayServer, clock: FakeClock) -> OnlineRecordStore:
    return OnlineRecordStore(pubmed(server, clock), trials(server, clock), crossref(server, clock))


def test_online_store_resolves_doi_and_author_year(server: ReplayServer, clock: FakeClock) -> None:
    server.script(WORK, Reply(fixture="crossref_work.json"))
    server.script(SEARCH, Reply(fixture="crossref_search.json"))
    verifier = CitationVerifier(_store(server, clock), LexicalSupportJudge(0.65))
    report = (
        "Semaglutide reduced body weight by 14.9% in adults with obesity "
        "(doi:10.1056/NEJMoa2032183).\n"
        "In adults with overweight or obesity, semaglutide reduced body weight by 14.9% "
        "(Wilding et al., 2021)."
    )
    result = check_report(report, verifier)
    assert result.verification is not None
    statuses = [(c.resolved_key, c.status.value) for c in result.verification.checks]
    assert statuses == [
        ("DOI:10.1056/nejmoa2032183", "supported"),
        ("Wilding 2021", "supported"),
    ]
    # Among the author's two works of 2021, the one about the claim was judged.
    assert result.verification.checks[1].credibility is not None
    assert result.verification.checks[1].credibility.score == 98
    assert result.unresolvable_count == 0 and result.unsupported_count == 0


def test_author_with_no_work_that_year_is_unresolvable(
    server: ReplayServer, clock: FakeClock
) -> None:
    server.script(SEARCH, Reply(fixture="crossref_search_empty.json"))
    verifier = CitationVerifier(_store(server, clock), LexicalSupportJudge())
    text = "Metformin halves cardiovascular deaths in older adults (Smith et al., 2019)."
    result = check_report(text, verifier)
    assert [f.kind.value for f in result.flags] == ["unresolvable"]
    assert not result.is_safe


def test_crossref_outage_fails_closed(server: ReplayServer, clock: FakeClock) -> None:
    server.script(SEARCH, Reply(503, body="busy"))
    store = OnlineRecordStore(
        pubmed(server, clock),
        trials(server, clock),
        crossref(server, clock, max_retries=1),
    )
    text = "Metformin halves cardiovascular deaths in older adults (Smith et al., 2019)."
    result = check_report(text, CitationVerifier(store, LexicalSupportJudge()))
    assert result.verification is not None
    assert result.verification.checks[0].status.value == "error"
    assert result.errors and not result.is_safe
