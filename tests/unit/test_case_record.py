"""A case's record: the verdict and events typed, how the case was decided, usage by role."""

from __future__ import annotations

import pytest

from medgate.backends.pool import ModelInfo, ModelPool
from medgate.careguard.records import CareGuardReport
from medgate.case_record import CaseRecord, RunInfo, usage_by_role
from medgate.config import load_config
from medgate.events import ClaimsEvent, Event, EventKind
from medgate.hrs.decision import HRSReport
from medgate.pipeline import build_gate
from medgate.records import Case, LabelSet, Usage
from medgate.routing import RouteChoice
from tests.unit.server.service_gate import ESCALATING, GENERAL, real_gate


def decided(case: Case) -> CaseRecord:
    events: list[Event] = []
    verdict = real_gate().check(case, events.append)
    return CaseRecord.of(verdict, events, RunInfo.of("test", load_config(model="fake")))


def test_a_record_reads_back_from_json_with_typed_reports_and_events() -> None:
    record = decided(Case(question=GENERAL))
    back = CaseRecord.model_validate_json(record.model_dump_json())
    assert back == record
    assert isinstance(back.verdict.trace.stages["route"], RouteChoice)
    assert isinstance(back.verdict.trace.stages["careguard"], CareGuardReport)
    (claims,) = [e for e in back.events if isinstance(e, ClaimsEvent)]
    assert claims.data.claims_count >= 1
    assert back.events[-1].kind is EventKind.DECISION


def test_usage_and_timings_are_summed_by_role_and_stage() -> None:
    record = decided(Case(question=ESCALATING, labels=LabelSet.YES_NO_MAYBE))
    report = record.verdict.trace.report(HRSReport)
    assert report is not None
    rounds = len(report.trajectory.iterations)
    assert record.usage["answerer"].calls == rounds
    assert record.usage["answerer"].completion_tokens > 0
    assert record.usage["orchestrator"].calls == 1  # it abstained after the baseline
    assert record.timings["hrs.total"] >= record.timings["hrs.round0.answer"]


def test_usage_by_role_adds_calls_up() -> None:
    calls = [
        Usage(role="sra", model="m", prompt_tokens=10, completion_tokens=2, seconds=1.0),
        Usage(role="hra", model="m", prompt_tokens=7, completion_tokens=1, cost_usd=0.5),
        Usage(role="sra", model="m", prompt_tokens=5, completion_tokens=3, seconds=0.5),
    ]
    summed = usage_by_role(calls)
    assert list(summed) == ["sra", "hra"]
    assert summed["sra"].model_dump() == {
        "calls": 2,
        "prompt_tokens": 15,
        "completion_tokens": 5,
        "cost_usd": 0.0,
        "seconds": 1.5,
    }
    assert summed["hra"].cost_usd == 0.5


def test_the_pool_names_the_model_behind_each_role() -> None:
    config = load_config(model="fake", profile="route")
    pool = ModelPool(config)
    build_gate(config, pool)
    roles = pool.roles()
    assert set(roles) == {
        "answerer",
        "orchestrator",
        "controller",
        "generator",
        "stance",
        "sra",
        "hra",
    }
    assert roles["answerer"] == ModelInfo(spec="fake", name="fake", fingerprint="fake:fake")


def test_the_config_digest_follows_the_settings_that_decide_verdicts(tmp_path: object) -> None:
    base = load_config(model="fake")
    assert load_config(model="fake").digest() == base.digest()
    assert load_config(model="fake", hrs={"tau_e": 0.5}).digest() != base.digest()
    assert load_config(model="fake", profile="hrs").digest() != base.digest()
    # Where things are kept does not decide a verdict; the store's URL may hold a password.
    elsewhere = load_config(
        model="fake",
        cache_dir=str(tmp_path),
        store={"database_url": "postgresql://u:secret@db/medgate"},
    )
    assert elsewhere.digest() == base.digest()


@pytest.mark.parametrize("entry", ["ask", "care", "serve"])
def test_run_info_records_entry_profile_and_digest(entry: str) -> None:
    config = load_config(model="fake", profile="careguard")
    run = RunInfo.of(entry, config)
    assert (run.entry, run.profile, run.config_digest) == (entry, "careguard", config.digest())
