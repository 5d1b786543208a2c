"""A verdict's trace holds typed stage reports that read back from JSON as they were written."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from medgate.careguard.records import CareGuardReport, Outcome
from medgate.hrs.decision import HRSReport
from medgate.records import Case, LabelSet, Status
from medgate.routing import Route, RouteChoice
from medgate.verdict import ExtensionReport, Trace, Verdict
from tests.unit.server.service_gate import ESCALATING, GENERAL, real_gate


def _round_trip(verdict: Verdict) -> Verdict:
    return Verdict.model_validate_json(verdict.model_dump_json())


@pytest.mark.parametrize(
    "case",
    [Case(question=ESCALATING, labels=LabelSet.YES_NO_MAYBE), Case(question=GENERAL)],
)
def test_a_verdict_reads_back_with_the_same_typed_reports(case: Case) -> None:
    verdict = real_gate().check(case)
    back = _round_trip(verdict)
    assert back == verdict
    assert isinstance(back.trace.stages["route"], RouteChoice)
    reports = [type(r) for r in back.trace.stages.values()]
    assert reports[0] is RouteChoice and reports[1] in (HRSReport, CareGuardReport)


def test_report_finds_a_stage_by_its_type() -> None:
    verdict = real_gate().check(Case(question=GENERAL))
    careguard = verdict.trace.report(CareGuardReport)
    assert careguard is not None and careguard.outcome is Outcome.RELEASED
    assert verdict.trace.report(HRSReport) is None  # the HRS stage did not run


def test_a_stored_verdict_whose_reports_carry_no_tag_reads_by_its_key() -> None:
    verdict = real_gate().check(Case(question=ESCALATING, labels=LabelSet.YES_NO_MAYBE))
    old = verdict.model_dump(mode="json")
    for report in old["trace"]["stages"].values():
        del report["stage"]  # how verdicts were stored before the reports were tagged
    assert Verdict.model_validate(old) == verdict


def test_a_report_under_another_stages_key_is_refused() -> None:
    choice = RouteChoice(route=Route.RESEARCH, why="labels given")
    with pytest.raises(ValidationError, match="the 'route' stage's"):
        Trace(stages={"hrs": choice})


def test_a_stage_medgate_does_not_know_reads_as_an_extension_report() -> None:
    trace = Trace.model_validate(
        {"stages": {"toxicity": {"stage": "toxicity", "data": {"score": 0.1}}}}
    )
    assert trace.stages["toxicity"] == ExtensionReport(stage="toxicity", data={"score": 0.1})
    verdict = Verdict(status=Status.RELEASED, reason="r", case=Case(question="q?"), trace=trace)
    assert _round_trip(verdict) == verdict
