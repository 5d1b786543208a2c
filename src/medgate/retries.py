"""One retry and timeout policy for every call medgate makes to a remote service.

Model servers (the OpenAI-compatible backend) and the evidence services (PubMed,
ClinicalTrials.gov, openFDA, Crossref) retry the same way, through :func:`call_with_retries`,
built on tenacity:

* an attempt that fails in a way another try may cure (a timeout, a dropped connection, 408,
  409, 429, 5xx) raises :class:`Retryable`; anything else is raised at once;
* the wait before the next try doubles from ``backoff_s`` (times a jitter factor in [0.5, 1],
  so that clients that failed together do not retry together), or is the server's
  ``Retry-After``; either is capped at ``backoff_max_s``;
* at most ``max_retries`` retries; with a ``deadline_s`` the attempts and waits together never
  take longer (each attempt is told how long it may still take);
* giving up raises :class:`GaveUp` with the last failure and the number of attempts, which each
  caller turns into its own error (a :class:`~medgate.errors.ModelError` for a model, a service
  error for an evidence client), so every gate fails closed on it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

import httpx
from pydantic import Field
from tenacity import RetryCallState, Retrying, retry_if_exception_type

from medgate.records import Record

T = TypeVar("T")

#: Answers a later try may get right: the request timed out or conflicted, the server is
#: overloaded or failing.
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class RetryPolicy(Record):
    """How often and how patiently one call is tried."""

    max_retries: int = Field(ge=0, description="Tries after the first.")
    backoff_s: float = Field(default=0.5, ge=0, description="First wait; doubles each time.")
    backoff_max_s: float = Field(default=8.0, ge=0, description="Cap on one wait.")
    deadline_s: float | None = Field(
        default=None, gt=0, description="All attempts and waits of the call together; None: no cap."
    )


class Retryable(Exception):
    """One attempt failed in a way another may not: ``failure`` says how."""

    def __init__(self, failure: str, retry_after: float | None = None) -> None:
        super().__init__(failure)
        self.failure = failure
        self.retry_after = retry_after


class GaveUp(Exception):
    """No attempt succeeded: the last failure, and how many attempts were made."""

    def __init__(self, failure: str, attempts: int) -> None:
        super().__init__(f"{failure} after {attempts} attempt(s)")
        self.failure = failure
        self.attempts = attempts


def retry_after(response: httpx.Response) -> float | None:
    """The server's ``Retry-After`` in seconds, when it gives one as a number."""
    value = response.headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def call_with_retries(
    attempt: Callable[[float | None], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    jitter: Callable[[], float] = random.random,
) -> T:
    """``attempt(seconds_left)`` until it returns, as ``policy`` says; ``seconds_left`` is None
    without a deadline. Raises :class:`GaveUp`, or whatever non-retryable error ``attempt``
    raised."""
    started = clock()

    def left() -> float | None:
        if policy.deadline_s is None:
            return None
        return policy.deadline_s - (clock() - started)

    def wait(state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        backoff = policy.backoff_s * 2 ** (state.attempt_number - 1) * (0.5 + 0.5 * jitter())
        hinted = failure.retry_after if isinstance(failure, Retryable) else None
        seconds = min(backoff if hinted is None else hinted, policy.backoff_max_s)
        remaining = left()
        return seconds if remaining is None else max(0.0, min(seconds, remaining))

    def stop(state: RetryCallState) -> bool:
        remaining = left()
        return state.attempt_number > policy.max_retries or (
            remaining is not None and remaining <= 0
        )

    def once() -> T:
        remaining = left()
        if remaining is not None and remaining <= 0:
            raise Retryable(f"no reply within {policy.deadline_s:g} s")
        return attempt(remaining)

    retrying = Retrying(
        retry=retry_if_exception_type(Retryable),
        wait=wait,
        stop=stop,
        sleep=sleep,
        reraise=True,
    )
    try:
        return retrying(once)
    except Retryable as last:
        raise GaveUp(last.failure, int(retrying.statistics.get("attempt_number", 1))) from None
