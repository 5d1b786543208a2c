"""A circuit breaker per service, so a failing service is not hammered and callers fail fast.

closed: calls go through; ``failure_threshold`` failed calls in a row open it.
open: calls are refused at once until ``recovery_s`` has passed.
half-open: one trial call goes through; success closes the breaker, failure opens it again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from enum import StrEnum


class CircuitState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    def __init__(
        self,
        name: str,
        failure_threshold: int = 5,
        recovery_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        self.name = name
        self.failure_threshold = failure_threshold
        self.recovery_s = recovery_s
        self._clock = clock
        self._lock = threading.Lock()
        self._state = CircuitState.CLOSED
        self._failures = 0
        self._opened_at = 0.0
        self._trial_in_flight = False

    @property
    def state(self) -> CircuitState:
        """The state now, moving open -> half-open once the recovery time has passed."""
        with self._lock:
            self._advance()
            return self._state

    @property
    def failures(self) -> int:
        return self._failures

    def _advance(self) -> None:
        if self._state is CircuitState.OPEN and self._clock() - self._opened_at >= self.recovery_s:
            self._state = CircuitState.HALF_OPEN
            self._trial_in_flight = False

    def allow(self) -> bool:
        """May a call go out now? In half-open state only one trial call is allowed."""
        with self._lock:
            self._advance()
            if self._state is CircuitState.CLOSED:
                return True
            if self._state is CircuitState.HALF_OPEN and not self._trial_in_flight:
                self._trial_in_flight = True
                return True
            return False

    def record_success(self) -> None:
        with self._lock:
            self._state = CircuitState.CLOSED
            self._failures = 0
            self._trial_in_flight = False

    def record_failure(self) -> None:
        with self._lock:
            self._failures += 1
            if self._state is CircuitState.HALF_OPEN or self._failures >= self.failure_threshold:
                self._state = CircuitState.OPEN
                self._opened_at = self._clock()
            self._trial_in_flight = False
