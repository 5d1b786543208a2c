"""How the CLI decides one case: options shared by `ask` and `care`, the gate run, the log."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from medgate.config import MedgateConfig

if TYPE_CHECKING:
    from medgate.backends.pool import ModelPool
    from medgate.case_record import CaseRecord
    from medgate.caselog import CaseLogError
    from medgate.events import Event, Gate
    from medgate.records import Case

NoLogOpt = Annotated[
    bool, typer.Option("--no-log", help="Do not write this case to the local case log.")
]
ProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--profile",
        help="Which gate decides: 'route' (closed research questions to HRS, patient questions "
        "to CareGuard), 'hrs', 'careguard' or 'full'; default: the configured profile.",
    ),
]


def decide(
    gate: Gate, case: Case, *, entry: str, config: MedgateConfig, pool: ModelPool
) -> CaseRecord:
    """Run ``gate`` on ``case``; the record of what it decided and how."""
    from medgate.case_record import CaseRecord, RunInfo

    events: list[Event] = []
    verdict = gate.check(case, events.append)
    return CaseRecord.of(verdict, events, RunInfo.of(entry, config, pool.roles()))


def keep(
    record: CaseRecord, config: MedgateConfig, *, log: bool
) -> tuple[str | None, CaseLogError | None]:
    """Write ``record`` to the case log (unless ``log`` is False): its id, or why it could not
    be written. The caller shows the verdict either way, then reports the failure."""
    from medgate.caselog import CaseLog, CaseLogError

    if not log:
        return None, None
    try:
        CaseLog.of(config).write(record)
    except CaseLogError as exc:
        return None, CaseLogError(f"{exc}; the case was decided but not logged (--no-log skips it)")
    return record.id, None
