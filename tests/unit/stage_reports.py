"""The typed stage reports of a verdict, for assertions."""

from __future__ import annotations

from medgate.careguard.records import CareGuardReport
from medgate.hrs.decision import HRSReport
from medgate.verdict import Verdict


def hrs_report(verdict: Verdict) -> HRSReport:
    report = verdict.trace.report(HRSReport)
    assert report is not None, "the HRS stage did not run"
    return report


def careguard_report(verdict: Verdict) -> CareGuardReport:
    report = verdict.trace.report(CareGuardReport)
    assert report is not None, "the CareGuard stage did not run"
    return report
