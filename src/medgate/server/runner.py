"""Running a gate for the service: in a worker thread, with a timeout, failing closed.

The gate's ``check`` is blocking (model calls) and is trusted to fail closed itself, but the
service does not rely on that: an exception, a timeout or a return value that is not a Verdict
all become an ESCALATED verdict whose trace says what went wrong. Nothing is ever released
because something broke.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from medgate.events import Event, EventBase, Gate
from medgate.records import Case, Status
from medgate.verdict import Trace, Verdict

EventCallback = Callable[[Event], None]


@dataclass(frozen=True)
class GateOutcome:
    """The verdict to record, and the failure that forced it, if any."""

    verdict: Verdict
    failure: str | None
    seconds: float
    events: list[Event]
    """Everything the gate emitted before it decided (or was cut off), in order."""


def failed_closed(case: Case, failure: str) -> Verdict:
    """The verdict for a case whose check did not finish properly: held for a clinician."""
    return Verdict(
        status=Status.ESCALATED,
        answer=None,
        reason="The safety check did not complete, so the case is held for a clinician.",
        case=case,
        trace=Trace(errors=[failure]),
    )


class SlotLease:
    """One check's hold on a concurrency slot, given back exactly once.

    Whichever comes first gives the slot back: the check finishing, or the service deciding the
    case without it (timeout, cancellation). A check that hangs therefore stops counting against
    the limit once it is decided; otherwise a few hung checks would fail every later one.
    """

    def __init__(self, slots: threading.BoundedSemaphore) -> None:
        self._slots = slots
        self._lock = threading.Lock()
        self._held = False
        self._over = False

    def take(self) -> bool:
        """Wait for a slot; False if the case was decided meanwhile (the slot is not kept)."""
        self._slots.acquire()
        with self._lock:
            if self._over:
                self._slots.release()
                return False
            self._held = True
            return True

    def give_back(self) -> None:
        with self._lock:
            self._over = True
            if self._held:
                self._held = False
                self._slots.release()


class GateRunner:
    """Runs ``gate.check`` off the event loop, at most ``max_concurrent`` at a time."""

    def __init__(
        self,
        gate: Gate,
        *,
        timeout_s: float,
        max_concurrent: int,
        fresh: Callable[[], None] | None = None,
    ) -> None:
        self.gate = gate
        self.timeout_s = timeout_s
        # Called before a check that starts while no other is running (a timed-out check still
        # inside the gate counts as running): such a case decides as if it were the process's
        # first (medgate.backends.pool.forget_prompts). Checks that overlap interleave their
        # model calls, and forgetting would only slow them down.
        self._fresh = fresh
        self._running = 0
        self._running_lock = threading.Lock()
        # A threading semaphore, not an asyncio one: it is taken in the worker thread and so is
        # not bound to any one event loop. Time spent waiting for a slot counts towards the
        # timeout, so an overloaded service escalates rather than keeping callers forever.
        self._slots = threading.BoundedSemaphore(max_concurrent)

    async def run(self, case: Case, on_event: EventCallback | None = None) -> GateOutcome:
        loop = asyncio.get_running_loop()
        settled: asyncio.Future[Verdict] = loop.create_future()
        finished = threading.Event()
        lease = SlotLease(self._slots)
        started = time.perf_counter()
        emitted: list[Event] = []

        def sink(event: Event) -> None:
            # Events after a timeout belong to a case already decided: drop them.
            if finished.is_set() or not isinstance(event, EventBase):
                return
            emitted.append(event)
            if on_event is not None:
                _call_soon(loop, on_event, event)

        def work() -> None:
            if not lease.take():
                return
            with self._running_lock:
                self._running += 1
                alone = self._running == 1
            try:
                if alone and self._fresh is not None:
                    self._fresh()
                result: Verdict | BaseException = self.gate.check(case, sink)
            except BaseException as exc:  # fail closed on anything, even SystemExit
                result = exc
            finally:
                with self._running_lock:
                    self._running -= 1
                lease.give_back()
            _call_soon(loop, _settle, settled, result)

        threading.Thread(target=work, name="medgate-gate", daemon=True).start()
        failure: str | None = None
        try:
            verdict = await asyncio.wait_for(asyncio.shield(settled), self.timeout_s)
        except TimeoutError:
            failure = f"the gate did not decide within {self.timeout_s:g} s"
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                finished.set()
                raise
            failure = f"the gate raised {type(exc).__name__}: {exc}"
        finally:
            finished.set()
            # A check still running after its case was decided no longer holds a slot. Its
            # thread cannot be stopped and keeps its CPU until the gate returns.
            lease.give_back()
        if failure is None and not isinstance(verdict, Verdict):
            failure = f"the gate returned {type(verdict).__name__}, not a Verdict"
        seconds = time.perf_counter() - started
        events = list(emitted)
        if failure is not None:
            return GateOutcome(failed_closed(case, failure), failure, seconds, events)
        return GateOutcome(verdict, None, seconds, events)


def _settle(future: asyncio.Future[Verdict], result: Verdict | BaseException) -> None:
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result if isinstance(result, Exception) else RuntimeError(result))
    else:
        future.set_result(result)


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: object) -> None:
    # RuntimeError: the loop has closed (shutdown); the case was already failed closed.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(fn, *args)
