"""The one retry and timeout policy, on a clock that moves only when the code sleeps."""

from __future__ import annotations

import httpx
import pytest

from medgate.retries import GaveUp, Retryable, RetryPolicy, call_with_retries, retry_after


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def failing(*failures: Retryable | Exception, then: str = "ok") -> object:
    remaining = list(failures)
    seen: list[float | None] = []

    def attempt(left: float | None) -> str:
        seen.append(left)
        if remaining:
            raise remaining.pop(0)
        return then

    attempt.seen = seen  # type: ignore[attr-defined]
    return attempt


def run(attempt: object, policy: RetryPolicy, clock: Clock, jitter: float = 1.0) -> object:
    return call_with_retries(
        attempt,  # type: ignore[arg-type]
        policy,
        sleep=clock.sleep,
        clock=clock.time,
        jitter=lambda: jitter,
    )


def test_backoff_doubles_and_a_retry_after_wins() -> None:
    clock = Clock()
    attempt = failing(Retryable("HTTP 503"), Retryable("HTTP 503"), Retryable("429", 2.0))
    assert run(attempt, RetryPolicy(max_retries=3, backoff_s=0.5), clock) == "ok"
    assert clock.sleeps == [0.5, 1.0, 2.0]


def test_jitter_spreads_waits_between_half_and_the_full_backoff() -> None:
    clock = Clock()
    run(failing(Retryable("x")), RetryPolicy(max_retries=1, backoff_s=1.0), clock, jitter=0.0)
    assert clock.sleeps == [0.5]


def test_waits_are_capped() -> None:
    clock = Clock()
    attempt = failing(Retryable("429", 120.0))
    run(attempt, RetryPolicy(max_retries=1, backoff_max_s=8.0), clock)
    assert clock.sleeps == [8.0]


def test_giving_up_names_the_last_failure_and_the_attempts() -> None:
    clock = Clock()
    attempt = failing(*[Retryable(f"HTTP 50{i}") for i in range(5)])
    with pytest.raises(GaveUp) as caught:
        run(attempt, RetryPolicy(max_retries=2), clock)
    assert (caught.value.failure, caught.value.attempts) == ("HTTP 502", 3)
    assert str(caught.value) == "HTTP 502 after 3 attempt(s)"


def test_other_errors_are_not_retried() -> None:
    clock = Clock()
    attempt = failing(ValueError("HTTP 401: bad key"))
    with pytest.raises(ValueError, match="bad key"):
        run(attempt, RetryPolicy(max_retries=3), clock)
    assert clock.sleeps == []


def test_a_deadline_bounds_the_whole_call() -> None:
    clock = Clock()
    attempt = failing(*[Retryable("HTTP 503")] * 10)
    with pytest.raises(GaveUp) as caught:
        run(attempt, RetryPolicy(max_retries=10, backoff_s=1.0, deadline_s=2.5), clock)
    assert sum(clock.sleeps) <= 2.5
    # each attempt was told how long it may still take
    assert attempt.seen[0] == 2.5 and all(s is not None and s <= 2.5 for s in attempt.seen)  # type: ignore[attr-defined]
    assert caught.value.attempts <= 3


@pytest.mark.parametrize(
    ("header", "seconds"), [("2", 2.0), ("0.5", 0.5), ("soon", None), ("-1", None), (None, None)]
)
def test_retry_after_reads_seconds(header: str | None, seconds: float | None) -> None:
    headers = {} if header is None else {"Retry-After": header}
    assert retry_after(httpx.Response(429, headers=headers)) == seconds
