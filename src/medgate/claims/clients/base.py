"""The HTTP plumbing every evidence client shares.

One :class:`ServiceClient` per service owns a circuit breaker and a rate limiter. A logical call
retries timeouts, connection errors, 408, 409, 429 and 5xx answers under medgate's one retry
policy (:mod:`medgate.retries`: exponential backoff with jitter, honouring ``Retry-After`` up to
the cap); 404 means "no such record" and is returned to the caller; other
4xx answers are the caller's fault and are not retried. Only a call that fails after its retries
counts against the breaker, and so does a malformed body, because a service that answers garbage
is as unusable as one that does not answer.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx

from medgate.claims.clients.breaker import CircuitBreaker, CircuitState
from medgate.claims.clients.errors import (
    CircuitOpenError,
    MalformedResponseError,
    OfflineError,
    RequestRejectedError,
    ServiceUnavailableError,
)
from medgate.claims.clients.ratelimit import RateLimiter
from medgate.config import ServiceSettings
from medgate.retries import (
    RETRYABLE_STATUS,
    GaveUp,
    Retryable,
    RetryPolicy,
    call_with_retries,
    retry_after,
)

T = TypeVar("T")
Params = Mapping[str, str | int]


class ServiceClient:
    """GET requests to one service: timeouts, retries, a breaker, a rate limit, offline mode."""

    def __init__(
        self,
        service: str,
        settings: ServiceSettings,
        *,
        offline: bool = False,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.service = service
        self.settings = settings
        self.offline = offline
        self.breaker = CircuitBreaker(
            service, settings.failure_threshold, settings.recovery_s, clock=clock
        )
        self.limiter = RateLimiter(settings.rate_per_s, clock=clock, sleep=sleep)
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter
        self._retries = RetryPolicy(
            max_retries=settings.max_retries,
            backoff_s=settings.backoff_s,
            backoff_max_s=settings.backoff_max_s,
        )
        self._http = httpx.Client(
            base_url=settings.base_url.rstrip("/") + "/",
            timeout=httpx.Timeout(settings.timeout_s),
            transport=transport,
            headers={"User-Agent": "medgate (citation verification)"},
            follow_redirects=True,
        )
        self.attempts = 0
        """Requests actually sent, for tests and metrics."""

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def state(self) -> CircuitState:
        return self.breaker.state

    def get(self, path: str, params: Params | None = None) -> httpx.Response | None:
        """GET ``path``; None for 404, the response for 2xx, an error otherwise."""
        if self.offline:
            raise OfflineError(self.service, "offline mode is on; no request sent")
        if not self.breaker.allow():
            raise CircuitOpenError(self.service, "circuit breaker is open after repeated failures")

        def attempt(left: float | None) -> httpx.Response | None:
            self.limiter.acquire()
            self.attempts += 1
            try:
                response = self._http.get(path.lstrip("/"), params=dict(params or {}))
            except httpx.TimeoutException:
                raise Retryable(f"timed out after {self.settings.timeout_s:g} s") from None
            except httpx.TransportError as exc:
                raise Retryable(f"connection failed ({type(exc).__name__})") from None
            except Exception as exc:
                # Anything else (an invalid URL, a decoding bug) must still count against the
                # breaker, or a half-open trial would never report back and the breaker would
                # stay half-open for good.
                self.breaker.record_failure()
                raise ServiceUnavailableError(
                    self.service, f"request failed ({type(exc).__name__}: {exc})"
                ) from exc
            if response.status_code in RETRYABLE_STATUS:
                raise Retryable(f"HTTP {response.status_code}", retry_after(response))
            if response.status_code == 404:
                self.breaker.record_success()
                return None
            if response.status_code >= 400:
                # The request is wrong, the service is fine: no retry, no breaker failure.
                self.breaker.record_success()
                raise RequestRejectedError(
                    self.service, f"HTTP {response.status_code}: {response.text[:200]}"
                )
            return response

        try:
            return call_with_retries(
                attempt, self._retries, sleep=self._sleep, clock=self._clock, jitter=self._jitter
            )
        except GaveUp as exc:
            self.breaker.record_failure()
            raise ServiceUnavailableError(self.service, str(exc)) from None

    def parse(self, response: httpx.Response, parser: Callable[[httpx.Response], T]) -> T:
        """Parse a 2xx body; a body that does not parse counts as a failed call."""
        try:
            value = parser(response)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            self.breaker.record_failure()
            raise MalformedResponseError(
                self.service, f"unexpected response body ({type(exc).__name__}: {exc})"
            ) from exc
        self.breaker.record_success()
        return value

    def get_json(self, path: str, params: Params | None = None) -> Any | None:
        """GET and decode JSON; None for 404."""
        response = self.get(path, params)
        if response is None:
            return None
        return self.parse(response, lambda r: json.loads(r.text))
