"""Errors from the evidence clients; in the safety path each one is a failed check."""

from __future__ import annotations

from medgate.errors import MedgateError


class ServiceError(MedgateError):
    """A call to a biomedical web service did not give a usable answer."""

    def __init__(self, service: str, message: str) -> None:
        super().__init__(f"{service}: {message}")
        self.service = service


class OfflineError(ServiceError):
    """Offline mode is on; no request was sent."""


class ServiceUnavailableError(ServiceError):
    """Timeouts, connection failures, 429 or 5xx answers outlasted the retries."""


class CircuitOpenError(ServiceUnavailableError):
    """The service failed repeatedly; calls are refused until the breaker lets a trial through."""


class MalformedResponseError(ServiceError):
    """The service answered, but not in the format it documents."""


class RequestRejectedError(ServiceError):
    """The service refused the request itself (4xx other than 404 and 429)."""
