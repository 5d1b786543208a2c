"""One typed record per decided case: what was asked, what was decided, and everything behind it.

Every entry point writes the same record: ``medgate ask`` and ``medgate care`` to the local case
log (:mod:`medgate.caselog`), the service to its store, an evaluation run per item. A record
holds the verdict with its typed stage reports, the gate's typed events in order, and what the
run was: the entry point and profile, a digest of the settings that decide verdicts, the model
(and weights) behind each role, and the tokens, cost and time spent, by role and by stage.
Read back from JSON, it is the same typed record.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic import Field

from medgate import __version__
from medgate.backends.pool import ModelInfo
from medgate.config import MedgateConfig
from medgate.events import Event
from medgate.records import Case, Record, Status, Usage
from medgate.verdict import Verdict


class RunInfo(Record):
    """How a case was decided: by which entry point, profile, settings and models."""

    entry: str = Field(description="The entry point: 'ask', 'care', 'serve', 'eval', ...")
    profile: str = Field(description="The gate profile that decided the case.")
    medgate_version: str = __version__
    config_digest: str = Field(
        description="sha256 of the settings that decide verdicts (MedgateConfig.digest)."
    )
    models: dict[str, ModelInfo] = Field(
        default_factory=dict, description="The model behind each role, by role."
    )

    @classmethod
    def of(
        cls, entry: str, config: MedgateConfig, models: dict[str, ModelInfo] | None = None
    ) -> RunInfo:
        return cls(
            entry=entry,
            profile=config.profile,
            config_digest=config.digest(),
            models=models or {},
        )


class RoleUsage(Record):
    """What one role's model calls cost for a case."""

    calls: int = Field(ge=0)
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    cost_usd: float = Field(ge=0)
    seconds: float = Field(ge=0, description="Wall time of the role's calls.")


def usage_by_role(usage: Sequence[Usage]) -> dict[str, RoleUsage]:
    """The trace's calls summed per role, in the order the roles first called."""
    out: dict[str, RoleUsage] = {}
    for call in usage:
        seen = out.get(call.role) or RoleUsage(
            calls=0, prompt_tokens=0, completion_tokens=0, cost_usd=0.0, seconds=0.0
        )
        out[call.role] = RoleUsage(
            calls=seen.calls + 1,
            prompt_tokens=seen.prompt_tokens + call.prompt_tokens,
            completion_tokens=seen.completion_tokens + call.completion_tokens,
            cost_usd=seen.cost_usd + call.cost_usd,
            seconds=seen.seconds + call.seconds,
        )
    return out


def new_record_id() -> str:
    return uuid.uuid4().hex


def now() -> str:
    """The current time in UTC, ISO 8601 with microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


class CaseRecord(Record):
    """One decided case, whole."""

    id: str = Field(default_factory=new_record_id, description="The record's own identifier.")
    created_at: str = Field(default_factory=now, description="When it was decided (UTC).")
    run: RunInfo
    verdict: Verdict = Field(description="The verdict, with each stage's typed report.")
    events: list[Event] = Field(
        default_factory=list, description="The gate's events, in the order it emitted them."
    )
    usage: dict[str, RoleUsage] = Field(
        default_factory=dict, description="Tokens, cost and time of the model calls, by role."
    )
    timings: dict[str, float] = Field(
        default_factory=dict, description="Seconds spent, by stage (as the trace names them)."
    )

    @property
    def case(self) -> Case:
        return self.verdict.case

    @property
    def status(self) -> Status:
        return self.verdict.status

    @classmethod
    def of(
        cls,
        verdict: Verdict,
        events: Sequence[Event],
        run: RunInfo,
        *,
        record_id: str | None = None,
        created_at: str | None = None,
    ) -> CaseRecord:
        """The record of ``verdict``; usage and timings are read from its trace."""
        timings: dict[str, float] = {}
        for timing in verdict.trace.timings:
            timings[timing.stage] = timings.get(timing.stage, 0.0) + timing.seconds
        return cls(
            id=record_id or new_record_id(),
            created_at=created_at or now(),
            run=run,
            verdict=verdict,
            events=list(events),
            usage=usage_by_role(verdict.trace.usage),
            timings=timings,
        )
