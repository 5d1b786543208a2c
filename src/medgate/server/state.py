"""What one app instance holds; reached from a request, never from a module global."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from fastapi import Request

from medgate.case_record import RunInfo
from medgate.config import MedgateConfig
from medgate.server.limits import RateLimiter
from medgate.server.metrics import Metrics
from medgate.server.runner import GateRunner
from medgate.store import Store


@dataclass
class Services:
    config: MedgateConfig
    store: Store
    runner: GateRunner
    limiter: RateLimiter
    metrics: Metrics
    run: RunInfo
    """How this service decides cases, recorded with every verdict."""
    # Streams whose client went away keep running until their verdict is recorded; holding the
    # task here keeps it from being garbage-collected half way.
    background: set[asyncio.Task[None]] = field(default_factory=set)


def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found
