"""The gate runner's concurrency slots, over the real HRS gate with a fake answerer that can be
made to hang."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence

import pytest
from tests.unit.hrs_helpers import CONFIDENT, completion, hrs_config

from medgate.backends.base import ChatMessage, Completion
from medgate.backends.fake import FakeModel
from medgate.hrs import ModelOrchestrator
from medgate.hrs.gate import HRSGate
from medgate.records import Case, LabelSet, Status
from medgate.server.runner import GateOutcome, GateRunner, SlotLease


class HangingAnswerer:
    """A fake answerer whose calls for questions containing 'hang' wait until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.hanging = threading.Event()  # set while a call is waiting for release

        def reply(messages: Sequence[ChatMessage]) -> Completion:
            if "hang" in messages[-1].content:
                self.hanging.set()
                self.release.wait(30)
            return completion(CONFIDENT)

        self.model = FakeModel("answerer").script_completion("Question:", reply, repeat=True)


def closed(question: str) -> Case:
    return Case(question=question, labels=LabelSet.YES_NO_MAYBE)


@pytest.fixture
def answerer() -> Iterator[HangingAnswerer]:
    hanging = HangingAnswerer()
    yield hanging
    hanging.release.set()


def runner_over(answerer: HangingAnswerer, *, timeout_s: float, slots: int) -> GateRunner:
    gate = HRSGate(answerer.model, ModelOrchestrator(FakeModel("orch")), hrs_config())
    return GateRunner(gate, timeout_s=timeout_s, max_concurrent=slots)


def test_a_timed_out_check_gives_its_slot_back(answerer: HangingAnswerer) -> None:
    runner = runner_over(answerer, timeout_s=0.5, slots=1)

    async def scenario() -> tuple[GateOutcome, GateOutcome]:
        hung = await runner.run(closed("Does it hang?"))
        # The hung check's thread is still inside the model call; the next case must not
        # wait for it to give back the only slot.
        quick = await runner.run(closed("Is aspirin an antiplatelet drug?"))
        return hung, quick

    hung, quick = asyncio.run(scenario())
    assert hung.failure == "the gate did not decide within 0.5 s"
    assert hung.verdict.status is Status.ESCALATED
    assert quick.failure is None, quick.failure
    assert quick.verdict.status is Status.RELEASED


def test_a_late_finish_raises_nothing_and_the_runner_goes_on(
    answerer: HangingAnswerer, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashes: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashes.append(args.exc_value))
    runner = runner_over(answerer, timeout_s=0.5, slots=1)

    async def scenario() -> GateOutcome:
        await runner.run(closed("Does it hang?"))
        answerer.release.set()  # the hung check now finishes, long after its case was decided
        while any(t.name == "medgate-gate" for t in threading.enumerate()):
            await asyncio.sleep(0.05)
        return await runner.run(closed("Is aspirin an antiplatelet drug?"))

    after = asyncio.run(scenario())
    assert crashes == []  # giving the slot back twice would raise in the worker thread
    assert after.failure is None and after.verdict.status is Status.RELEASED


def test_a_slot_is_given_back_once_whoever_gives_it_back_first() -> None:
    slots = threading.BoundedSemaphore(1)
    lease = SlotLease(slots)
    assert lease.take()
    assert not slots.acquire(blocking=False)  # held
    lease.give_back()  # the service decided the case (timeout)
    lease.give_back()  # the check finished later: no second release
    assert slots.acquire(blocking=False)
    assert not slots.acquire(blocking=False)  # capacity is still one
    slots.release()


def test_a_case_decided_while_waiting_does_not_keep_the_slot() -> None:
    slots = threading.BoundedSemaphore(1)
    lease = SlotLease(slots)
    lease.give_back()  # timed out before a slot came free
    assert not lease.take()  # takes the slot, sees the case is over, gives it back
    assert slots.acquire(blocking=False)


def test_a_check_that_runs_alone_starts_with_models_that_remember_no_earlier_prompt(
    answerer: HangingAnswerer,
) -> None:
    gate = HRSGate(answerer.model, ModelOrchestrator(FakeModel("orch")), hrs_config())
    forgot: list[str] = []
    runner = GateRunner(gate, timeout_s=0.5, max_concurrent=2, fresh=lambda: forgot.append("x"))

    async def scenario() -> None:
        await runner.run(closed("Is aspirin an antiplatelet drug?"))
        assert forgot == ["x"]  # alone: forgotten first
        await runner.run(closed("Does it hang?"))  # times out; its thread is still in the gate
        assert forgot == ["x", "x"]
        await runner.run(closed("Is aspirin an antiplatelet drug?"))
        # A check still running beside it: forgetting would only slow that one down.
        assert forgot == ["x", "x"]
        answerer.release.set()
        while any(t.name == "medgate-gate" for t in threading.enumerate()):
            await asyncio.sleep(0.05)
        await runner.run(closed("Is aspirin an antiplatelet drug?"))
        assert forgot == ["x", "x", "x"]

    asyncio.run(scenario())
