"""Every branch of the HRS decision loop, with scripted models."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from medgate.backends.base import ChatMessage, Completion
from medgate.backends.fake import FakeModel
from medgate.config import RevertRule, SuccessRule
from medgate.errors import EmbeddingUnavailable
from medgate.events import Event, EventKind
from medgate.hrs import ModelOrchestrator, Outcome, decide
from medgate.hrs.gate import HRSGate
from medgate.hrs.rarity import RarityCentroid
from medgate.records import Case, LabelSet, Status

from .hrs_helpers import (
    ABSTAIN_REPLY,
    CONFIDENT,
    CONFIDENT_NO,
    UNSURE,
    UNSURE_TOKENS,
    answerer,
    completion,
    continue_reply,
    fresh_facts,
    hrs_config,
)
from .stage_reports import hrs_report

CASE = Case(question="Does drug X reduce mortality?", context="A trial of drug X.")


def orchestrator(*replies: object, repeat: bool = False) -> ModelOrchestrator:
    return ModelOrchestrator(FakeModel("orch").script_chat("History", *replies, repeat=repeat))


def test_confident_baseline_is_released_without_the_orchestrator() -> None:
    gate = HRSGate(answerer({}, completion(CONFIDENT)), orchestrator(), hrs_config())
    verdict = gate.check(CASE)
    assert verdict.status is Status.RELEASED
    assert verdict.answer == "yes"
    report = hrs_report(verdict)
    assert report.decision.outcome == Outcome.GATE
    assert len(report.trajectory.iterations) == 1


def test_success_at_round_two_is_refined() -> None:
    model = answerer(
        {"fact two": completion(CONFIDENT), "fact one": completion(UNSURE)},
        completion(UNSURE),
    )
    orch = orchestrator(continue_reply("fact one"), continue_reply("fact two"))
    verdict = HRSGate(model, orch, hrs_config()).check(CASE)
    assert verdict.status is Status.REFINED
    assert verdict.answer == "yes"
    decision = hrs_report(verdict).decision
    assert decision.iteration == 2 and decision.outcome == Outcome.SUCCESS
    last = hrs_report(verdict).trajectory.iterations[-1]
    # Knowledge accumulates in its own block and keeps its source.
    assert [f.text for f in last.knowledge] == ["fact one", "fact two"]
    assert all(f.source == "model:orch" for f in last.knowledge)


def test_question_is_never_rewritten() -> None:
    model = answerer({"fact one": completion(CONFIDENT)}, completion(UNSURE))
    HRSGate(model, orchestrator(continue_reply("fact one")), hrs_config()).check(CASE)
    prompts = [text for kind, text in model.calls if kind == "complete"]
    assert all(f"Question: {CASE.question}" in p for p in prompts)


def test_abstain_escalates() -> None:
    gate = HRSGate(answerer({}, completion(UNSURE)), orchestrator(ABSTAIN_REPLY), hrs_config())
    verdict = gate.check(CASE)
    assert verdict.status is Status.ESCALATED
    assert verdict.answer is None
    assert hrs_report(verdict).decision.outcome == Outcome.ABSTAIN


def test_an_escalation_keeps_the_baseline_answer_for_the_clinician() -> None:
    # After a label flip the baseline is what the clinician may approve, not the flipped label.
    model = answerer({"fact": completion(CONFIDENT_NO)}, completion(UNSURE))
    verdict = HRSGate(model, orchestrator(continue_reply("fact")), hrs_config()).check(CASE)
    assert verdict.status is Status.ESCALATED and verdict.answer is None
    assert verdict.held_back is not None
    assert verdict.held_back.answer == "yes"  # UNSURE's top label
    assert verdict.held_back.reasoning == "Reasoning about the evidence."
    assert verdict.held_back.source == "hrs round 0"


def test_a_released_answer_holds_nothing_back() -> None:
    gate = HRSGate(answerer({}, completion(CONFIDENT)), orchestrator(), hrs_config())
    assert gate.check(CASE).held_back is None


@pytest.mark.parametrize(
    ("labels", "choice"), [(None, "yes, no or maybe"), ("yes,no", "yes or no")]
)
def test_labels_are_those_given_else_yes_no_maybe(labels: str | None, choice: str) -> None:
    systems: list[str] = []

    def reply(messages: Sequence[ChatMessage]) -> Completion:
        systems.append(messages[0].content)
        return completion(CONFIDENT)

    model = FakeModel("answerer").script_completion("Question:", reply, repeat=True)
    case = Case.model_validate({"question": "Is X linked to Y?", "labels": labels})
    assert case.labels == (None if labels is None else LabelSet.parse(labels))
    HRSGate(model, orchestrator(), hrs_config()).check(case)
    assert systems and all(choice in text for text in systems)


def test_k_exhausted_escalates_after_k_rounds() -> None:
    model = answerer({}, completion(UNSURE, UNSURE_TOKENS))
    orch = orchestrator(fresh_facts(), repeat=True)
    verdict = HRSGate(model, orch, hrs_config(max_iterations=3)).check(CASE)
    assert verdict.status is Status.ESCALATED
    assert hrs_report(verdict).decision.outcome == Outcome.EXHAUSTED
    assert len(hrs_report(verdict).trajectory.iterations) == 4


def test_label_flip_escalates_by_default() -> None:
    model = answerer({"fact": completion(CONFIDENT_NO)}, completion(UNSURE))
    verdict = HRSGate(model, orchestrator(continue_reply("fact")), hrs_config()).check(CASE)
    assert verdict.status is Status.ESCALATED
    assert hrs_report(verdict).decision.outcome == Outcome.LABEL_FLIP


def test_label_flip_accepted_when_configured() -> None:
    model = answerer({"fact": completion(CONFIDENT_NO)}, completion(UNSURE))
    cfg = hrs_config(revert=RevertRule.ACCEPT)
    verdict = HRSGate(model, orchestrator(continue_reply("fact")), cfg).check(CASE)
    assert verdict.status is Status.REFINED and verdict.answer == "no"


@pytest.mark.parametrize(
    "reply",
    ["not json at all", '{"action": "MAYBE"}', '{"action": "CONTINUE", "facts": []}'],
)
def test_unparsable_orchestrator_reply_escalates(reply: str) -> None:
    gate = HRSGate(answerer({}, completion(UNSURE)), orchestrator(reply), hrs_config())
    verdict = gate.check(CASE)
    assert verdict.status is Status.ESCALATED
    assert hrs_report(verdict).decision.outcome == Outcome.ERROR
    assert "orchestrator" in verdict.trace.errors[0]


def test_orchestrator_exception_escalates() -> None:
    gate = HRSGate(
        answerer({}, completion(UNSURE)), orchestrator(TimeoutError("slow")), hrs_config()
    )
    verdict = gate.check(CASE)
    assert verdict.status is Status.ESCALATED
    assert "TimeoutError" in verdict.trace.errors[0]


def test_answerer_failure_escalates_before_any_answer() -> None:
    model = FakeModel("answerer").script_completion("Question:", RuntimeError("out of memory"))
    verdict = HRSGate(model, orchestrator(), hrs_config()).check(CASE)
    assert verdict.status is Status.ESCALATED
    assert verdict.answer is None
    assert "out of memory" in verdict.reason


def test_eq6_rule_accepts_when_only_one_signal_is_high() -> None:
    # Entropy high but perplexity low: Algorithm 1 keeps going, Eq. 6 accepts.
    model = answerer({"fact": completion(UNSURE)}, completion(UNSURE))
    orch = orchestrator(fresh_facts(), repeat=True)
    alg1 = HRSGate(model, orch, hrs_config(max_iterations=2)).check(CASE)
    assert alg1.status is Status.ESCALATED
    model2 = answerer({"fact": completion(UNSURE)}, completion(UNSURE))
    eq6 = HRSGate(model2, orchestrator(continue_reply("fact")), hrs_config(rule=SuccessRule.EQ6))
    assert eq6.check(CASE).status is Status.REFINED


def test_full_trajectory_replays_any_threshold_without_model_calls() -> None:
    model = answerer({"fact": completion(UNSURE)}, completion(UNSURE))
    orch = orchestrator(fresh_facts(), repeat=True)
    cfg = hrs_config(max_iterations=2)
    traj = HRSGate(model, orch, cfg).record(CASE, full=True)
    assert len(traj.iterations) == 3
    calls = len(model.calls)
    strict = decide(traj, cfg)
    lax = decide(traj, cfg.model_copy(update={"tau_e": 0.999}))
    assert strict is not None and strict.status is Status.ESCALATED
    assert lax is not None and lax.status is Status.REFINED and lax.iteration == 1
    assert len(model.calls) == calls


def test_events_stream_in_order_and_end_with_the_decision() -> None:
    model = answerer({"fact": completion(CONFIDENT)}, completion(UNSURE))
    seen: list[Event] = []
    HRSGate(model, orchestrator(continue_reply("fact")), hrs_config()).check(CASE, seen.append)
    kinds = [e.kind for e in seen]
    assert kinds == [
        EventKind.ANSWER,
        EventKind.SIGNALS,
        EventKind.ANSWER,
        EventKind.SIGNALS,
        EventKind.DECISION,
    ]
    assert seen[2].data.injected[0].text == "fact"


def test_rarity_is_not_computed_without_a_centroid() -> None:
    model = answerer({}, completion(CONFIDENT)).script_embedding(CASE.question, [1.0, 0.0])
    cfg = hrs_config(signals=["entropy", "perplexity", "ambiguity", "rarity", "token_length"])
    verdict = HRSGate(model, orchestrator(), cfg).check(CASE)
    rarity = hrs_report(verdict).trajectory.iterations[0].signals["rarity"]
    assert rarity.value is None
    assert "fit-rarity" in rarity.note
    # Nothing would read the question's embedding, so the answerer is not asked for one.
    assert not [c for c in model.calls if c[0] == "embed"]


def test_rarity_with_a_centroid() -> None:
    model = answerer({}, completion(CONFIDENT)).script_embedding(CASE.question, [1.0, 1.0])
    centroid = RarityCentroid(
        model_fingerprint="fake:answerer",
        dimension=2,
        n_questions=1,
        source="test",
        fitted_at="now",
        centroid=[1.0, 0.0],
    )
    cfg = hrs_config(signals=["entropy", "rarity"])
    verdict = HRSGate(model, orchestrator(), cfg, centroid).check(CASE)
    rarity = hrs_report(verdict).trajectory.iterations[0].signals["rarity"]
    assert rarity.value == pytest.approx(0.2928932)
    assert [c for c in model.calls if c[0] == "embed"] == [("embed", CASE.question)]


def test_signals_are_in_unit_interval_and_ambiguity_sees_sample_disagreement() -> None:
    model = FakeModel("answerer").script_completion(
        "Question:",
        completion(CONFIDENT),
        completion(CONFIDENT),
        completion(CONFIDENT),
        completion(CONFIDENT_NO),
    )
    verdict = HRSGate(model, orchestrator(), hrs_config()).check(CASE)
    signals = hrs_report(verdict).trajectory.iterations[0].signals
    assert all(0.0 <= s.value <= 1.0 for s in signals.values())
    assert signals["ambiguity"].value > 0.3
    assert signals["token_length"].value == pytest.approx(10 / 50)


def test_repeated_facts_are_injected_once_and_a_stall_escalates() -> None:
    model = answerer({"fact": completion(UNSURE, UNSURE_TOKENS)}, completion(UNSURE, UNSURE_TOKENS))
    orch = orchestrator(continue_reply("fact", "Fact "), continue_reply("fact"))
    verdict = HRSGate(model, orch, hrs_config()).check(CASE)
    assert verdict.status is Status.ESCALATED
    hrs = hrs_report(verdict)
    assert hrs.decision.outcome == Outcome.STALLED
    assert [f.text for f in hrs.trajectory.iterations[-1].knowledge] == ["fact"]


class _NoEmbeddings(FakeModel):
    """An answerer behind a server without an embeddings endpoint."""

    def embed(self, text: str) -> list[float]:
        raise EmbeddingUnavailable("openai:m: no embedding from the server (HTTP 404)")


def test_no_embedding_from_a_server_leaves_rarity_not_computed_and_decides() -> None:
    model = _NoEmbeddings("answerer").script_completion(
        "Question:", completion(CONFIDENT), repeat=True
    )
    centroid = RarityCentroid(
        model_fingerprint="fake:answerer",
        dimension=2,
        n_questions=1,
        source="test",
        fitted_at="now",
        centroid=[1.0, 0.0],
    )
    cfg = hrs_config(signals=["entropy", "perplexity", "rarity"])
    verdict = HRSGate(model, orchestrator(), cfg, centroid).check(CASE)
    rarity = hrs_report(verdict).trajectory.iterations[0].signals["rarity"]
    assert rarity.value is None and "HTTP 404" in (rarity.note or "")
    assert verdict.status is Status.RELEASED


def test_a_decision_signal_not_computed_escalates() -> None:
    # A served model that answers before writing any reasoning: no token for perplexity.
    model = answerer({}, completion(CONFIDENT, logprobs=[]))
    verdict = HRSGate(model, orchestrator(), hrs_config()).check(CASE)
    assert verdict.status is Status.ESCALATED
    assert "a decision signal was not computed (perplexity" in verdict.reason
    assert hrs_report(verdict).decision.outcome is Outcome.UNRELIABLE
