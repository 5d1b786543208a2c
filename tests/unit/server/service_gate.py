"""The gate behind the service tests: medgate's real routing, HRS and CareGuard gates over
scripted fake models, so every verdict and event the service handles has the shape a real gate
gives it. A thin wrapper can make a check hang or raise, to prove the service fails closed.

What the fake models say, by question:

* a closed research question (labels or a context) goes to HRS. Its answerer is sure ("yes")
  unless the question mentions mortality; then it is unsure, the orchestrator abstains and the
  case is escalated, holding back the answer "yes" with :data:`HELD_REASONING`;
* any other question goes to CareGuard. General questions get :data:`RELEASED_DRAFT`, released
  with a disclaimer and one medium claim flag. A medicine question with its patient context
  (:data:`PATIENT`, whose answers include severe symptoms, a red flag) gets
  :data:`BLOCKED_DRAFT`, which states a dose: the rules fail it every round and, the red flag
  ruling out a conservative answer, the case is blocked with a safe refusal. A question about
  toxins gets :data:`JUDGED_DRAFT`, which the judges score 4, quoting the prompt before their
  verdict as a sloppy small model does; it is blocked too. A pregnancy question without context gets
  screening questions; self-harm gets crisis guidance.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence

from medgate.backends.base import ChatMessage, Completion
from medgate.backends.fake import FakeModel
from medgate.careguard import (
    Controller,
    Evaluators,
    Generator,
    HallucinationJudge,
    SafetyJudge,
)
from medgate.careguard.gate import CareGuardGate
from medgate.config import CareGuardConfig, HRSConfig
from medgate.events import Event, EventSink, Gate, discard
from medgate.hrs import ModelOrchestrator
from medgate.hrs.gate import HRSGate
from medgate.pipeline import RoutingGate
from medgate.records import Case
from medgate.verdict import Verdict

HELD_REASONING = "Two small trials disagree, and the larger one was stopped early."
ORCHESTRATOR_RATIONALE = "The abstract does not settle mortality; a clinician should judge."
RELEASED_DRAFT = (
    "Beans, lentils, oats and whole grains are high in fiber. "
    "A 2019 review found that eating more fiber lowers the risk of heart disease."
)
BLOCKED_DRAFT = "Take 10 mg more warfarin each day; that is fine for you."
JUDGED_DRAFT = "Juice cleanses flush every toxin out of the body within three days."
PATIENT = {
    "age_group": "18_64",
    "other_medications": "none",
    "allergies": "none",
    "severity": "severe",
}

ESCALATING = "Does drug X reduce mortality in sepsis?"
RESEARCH = "Is aspirin an antiplatelet drug?"
GENERAL = "What foods are high in fiber?"
BLOCKED = "Can I double my warfarin dose?"
JUDGED = "Do juice cleanses remove toxins?"
PREGNANT = "Can I take ibuprofen while pregnant?"


def _answer(dist: dict[str, float], reasoning: str) -> Completion:
    return Completion(
        text=reasoning,
        token_logprobs=[-0.05] * 12,
        label_probs=dist,
        label_mass=0.9,
        prompt_tokens=40,
    )


def _answerer() -> FakeModel:
    unsure = _answer({"yes": 0.36, "no": 0.34, "maybe": 0.30}, HELD_REASONING)
    sure = _answer({"yes": 0.98, "no": 0.01, "maybe": 0.01}, "Aspirin blocks platelet COX-1.")
    return (
        FakeModel("answerer")
        .script_completion("mortality", unsure, repeat=True)
        .script_completion("Question:", sure, repeat=True)
    )


def _orchestrator() -> FakeModel:
    reply = {"action": "ABSTAIN", "facts": [], "rationale": ORCHESTRATOR_RATIONALE}
    return FakeModel("orchestrator").script_chat("", json.dumps(reply), repeat=True)


def _draft(text: str) -> Completion:
    return Completion(text=text, token_logprobs=[-0.05] * 12, prompt_tokens=40)


def _generator() -> FakeModel:
    return (
        FakeModel("generator")
        .script_completion("warfarin", _draft(BLOCKED_DRAFT), repeat=True)
        .script_completion("toxins", _draft(JUDGED_DRAFT), repeat=True)
        .script_completion("Patient question", _draft(RELEASED_DRAFT), repeat=True)
    )


def _judge(name: str) -> FakeModel:
    verdict = json.dumps({"justification": "accurate and cautious", "score": 1})
    failing = json.dumps({"justification": "the toxin claim is unsupported", "score": 4})

    def quoting(messages: Sequence[ChatMessage]) -> str:
        return f"Reviewing this:\n{messages[-1].content}\n\nMy verdict: {failing}"

    return (
        FakeModel(name)
        .script_chat("Juice cleanses", quoting, repeat=True)
        .script_chat("Answer to review", verdict, repeat=True)
    )


def real_gate() -> RoutingGate:
    """The service's default gate, as `medgate.pipeline` builds it, over the fake models."""
    hrs, careguard = scripted_gates()
    return RoutingGate(research=hrs, patient=careguard)


def scripted_gates() -> tuple[HRSGate, CareGuardGate]:
    """The HRS and CareGuard gates over the fake models."""
    hrs = HRSGate(
        _answerer(),
        ModelOrchestrator(_orchestrator()),
        HRSConfig(signals=["entropy", "perplexity", "ambiguity", "token_length"]),
    )
    triage = json.dumps({"category": "general_information", "evidence": "what"})
    careguard = CareGuardGate(
        Controller(FakeModel("controller").script_chat("Patient message", triage, repeat=True)),
        Generator(_generator()),
        Evaluators([SafetyJudge(_judge("sra")), HallucinationJudge(_judge("hra"))]),
        CareGuardConfig(max_refinements=1),
    )
    return hrs, careguard


class ServiceGate:
    """The real gate, plus two ways to fail: a question containing "hang" blocks after the
    gate's first event until :attr:`release` is set; one containing "explode" raises after the
    gate has decided (its events were sent, its verdict is lost)."""

    def __init__(self, inner: Gate) -> None:
        self.inner = inner
        self.seen: list[Case] = []
        self.release = threading.Event()
        self.on_check: Callable[[Case], None] | None = None

    def check(self, case: Case, events: EventSink = discard) -> Verdict:
        self.seen.append(case)
        if self.on_check is not None:
            self.on_check(case)
        sink = self._hanging(events) if "hang" in case.question else events
        verdict = self.inner.check(case, sink)
        if "explode" in case.question:
            raise RuntimeError("model crashed")
        return verdict

    def _hanging(self, events: EventSink) -> EventSink:
        first = [True]

        def sink(event: Event) -> None:
            events(event)
            if first[0]:
                first[0] = False
                self.release.wait(30)

        return sink


def default_gate() -> ServiceGate:
    return ServiceGate(real_gate())


def scripted_profile(config: object, pool: object) -> ServiceGate:
    """A gate profile (medgate.profiles) for `medgate serve --profile` in tests."""
    return default_gate()


def held_back_texts() -> Sequence[str]:
    """Model text a client must never receive for the escalated and blocked cases."""
    return (
        HELD_REASONING,
        ORCHESTRATOR_RATIONALE,
        BLOCKED_DRAFT,
        JUDGED_DRAFT,
        "accurate and cautious",
        "the toxin claim is unsupported",
    )
