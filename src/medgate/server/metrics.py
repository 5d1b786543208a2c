"""Prometheus metrics in a registry owned by one app (no process-wide state)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "medgate_http_requests",
            "HTTP requests by route and status code.",
            ["method", "route", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "medgate_http_request_seconds",
            "HTTP request latency (until the response starts, for streams).",
            ["route"],
            registry=self.registry,
        )
        self.verdicts = Counter(
            "medgate_verdicts", "Verdicts recorded, by status.", ["status"], registry=self.registry
        )
        self.gate_failures = Counter(
            "medgate_gate_failures",
            "Gate checks that failed closed (exception, timeout, bad result).",
            registry=self.registry,
        )
        self.gate_seconds = Histogram(
            "medgate_gate_seconds",
            "Time a gate check took, including waiting for a slot.",
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300),
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "medgate_rate_limited", "Requests refused by rate limiting.", registry=self.registry
        )
        self.escalations_open = Gauge(
            "medgate_escalations_open",
            "Escalations waiting for a clinician.",
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
