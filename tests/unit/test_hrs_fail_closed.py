"""The HRS gate never releases on a number it could not trust, and records what decided."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from pydantic import ValidationError

from medgate.backends.base import ChatMessage, Completion, renormalise
from medgate.backends.fake import FakeModel
from medgate.config import SuccessRule
from medgate.errors import ContextOverflowError
from medgate.hrs import ModelOrchestrator, Outcome, decide
from medgate.hrs.decision import Iteration, Trajectory
from medgate.hrs.fitting import GAP, select_sentences
from medgate.hrs.gate import HRSGate
from medgate.hrs.signals import ModelRun, PerplexitySignal, SignalContext
from medgate.records import Case, SignalValue, Status
from tests.unit.stage_reports import hrs_report

from .hrs_helpers import CONFIDENT, SURE_TOKENS, UNSURE, answerer, completion, hrs_config

CASE = Case(question="Does drug X reduce mortality?", context="A trial of drug X.")
NAN = float("nan")


def orchestrator(*replies: object) -> ModelOrchestrator:
    return ModelOrchestrator(FakeModel("orch").script_chat("History", *replies))


def test_a_backend_cannot_hand_over_a_non_finite_number() -> None:
    for bad in ({"token_logprobs": [NAN]}, {"label_probs": {"yes": math.inf, "no": 0.0}}):
        with pytest.raises(ValidationError, match="finite number"):
            Completion.model_validate({"text": "", "token_logprobs": [], **bad})
    with pytest.raises(ValueError, match="not all finite"):
        renormalise({"yes": NAN, "no": 0.2})
    with pytest.raises(ValidationError):
        SignalValue(name="entropy", value=NAN, layer="decision")


def test_a_nan_log_probability_makes_perplexity_not_computed_with_a_note() -> None:
    run = ModelRun(answer="yes", distribution=CONFIDENT, reasoning_logprobs=[-0.1, NAN])
    value = PerplexitySignal().compute(run, SignalContext())
    assert value.value is None and "not a finite number" in value.note


def nan_completion(_: Sequence[ChatMessage]) -> Completion:
    """What a backend with broken arithmetic would return, past the record's own check."""
    return Completion.model_construct(
        text="Reasoning.",
        token_logprobs=[NAN] * 10,
        label_probs=CONFIDENT,
        label_mass=0.9,
        prompt_tokens=10,
        seconds=0.0,
    )


def test_nan_log_probabilities_are_escalated_not_released() -> None:
    model = FakeModel("answerer").script_completion("Question:", nan_completion, repeat=True)
    verdict = HRSGate(model, orchestrator(), hrs_config()).check(CASE)
    assert verdict.status is Status.ESCALATED
    assert hrs_report(verdict).decision.outcome == Outcome.UNRELIABLE
    assert "perplexity" in verdict.reason and "not a finite number" in verdict.reason
    assert verdict.signals["perplexity"].value is None


def _iteration(index: int, entropy: float | None, perplexity: float, mass: float) -> Iteration:
    run = ModelRun(answer="yes", distribution=CONFIDENT, label_mass=mass)
    return Iteration(
        index=index,
        run=run,
        signals={
            "entropy": SignalValue(name="entropy", value=entropy, layer="decision", note="n/a"),
            "perplexity": SignalValue(name="perplexity", value=perplexity, layer="decision"),
        },
    )


def test_an_uncomputed_decision_signal_escalates_even_under_eq6() -> None:
    # Eq. 6 escalates only when both signals are high; a missing entropy once counted as high
    # but let the low perplexity alone accept the refined answer.
    traj = Trajectory(iterations=[_iteration(0, 0.9, 0.5, 0.9), _iteration(1, None, 0.1, 0.9)])
    cfg = hrs_config(rule=SuccessRule.EQ6, max_iterations=1)
    decision = decide(traj, cfg)
    assert decision is not None and decision.status is Status.ESCALATED
    assert "could not be released" in decision.reason and "entropy" in decision.reason
    base_missing = Trajectory(iterations=[_iteration(0, None, 0.1, 0.9)])
    decision = decide(base_missing, cfg)
    assert decision is not None and decision.outcome is Outcome.UNRELIABLE


def test_little_probability_on_the_labels_is_never_released() -> None:
    low = completion(CONFIDENT).model_copy(update={"label_mass": 0.001})
    verdict = HRSGate(answerer({}, low), orchestrator(), hrs_config()).check(CASE)
    assert verdict.status is Status.ESCALATED
    assert "0.001" in verdict.reason and "allowed labels" in verdict.reason
    assert hrs_report(verdict).decision.decided_by == ["min_label_mass"]
    # The same answer with its mass on the labels is released, and so is one whose backend
    # does not report the mass.
    for mass in (0.9, None):
        ok = completion(CONFIDENT).model_copy(update={"label_mass": mass})
        assert HRSGate(answerer({}, ok), orchestrator(), hrs_config()).check(CASE).answer == "yes"


def test_the_verdict_names_the_thresholds_that_decided_and_their_origin() -> None:
    cfg = hrs_config(gate_e=0.5)
    verdict = HRSGate(answerer({}, completion(CONFIDENT)), orchestrator(), cfg).check(CASE)
    report = hrs_report(verdict)
    assert report.decision.decided_by == ["min_label_mass", "gate_e", "gate_p"]
    assert report.thresholds["gate_e"].model_dump(mode="json") == {
        "value": 0.5,
        "origin": {"source": "configured", "artifact": None, "sha256": None},
    }
    assert report.thresholds["gate_p"].origin.source == "default"


# -- fitting a long context into the window -------------------------------------------------

RELEVANT = "Drug X reduced mortality by a third in the trial."
FILLER = "The weather in the study town was mild that year."
WINDOW = 800  # characters of the user message the fake answerer accepts


def windowed(messages: Sequence[ChatMessage]) -> Completion:
    """A fake answerer with a context window: roughly four characters per token."""
    chars = sum(len(m.content) for m in messages)
    if len(messages[-1].content) > WINDOW:
        raise ContextOverflowError("too long", prompt_tokens=chars // 4, limit=WINDOW // 4)
    return completion(CONFIDENT, SURE_TOKENS)


def test_a_context_too_long_for_the_window_is_cut_by_relevance() -> None:
    context = " ".join([FILLER] * 10 + [RELEVANT] + [FILLER] * 10)
    model = FakeModel("answerer").script_completion("Question:", windowed, repeat=True)
    verdict = HRSGate(model, orchestrator(), hrs_config()).check(
        Case(question=CASE.question, context=context)
    )
    assert verdict.status is Status.RELEASED
    iteration = hrs_report(verdict).trajectory.iterations[0]
    fit = iteration.context_fit
    assert fit.original_chars == len(context) and fit.kept_chars < len(context)
    assert fit.sentences == 21 and 0 < fit.kept_sentences < 21
    prompt = model.calls[-1][1]
    assert RELEVANT in prompt and prompt.endswith(f"Question: {CASE.question}")


def test_a_question_that_alone_does_not_fit_escalates() -> None:
    model = FakeModel("answerer").script_completion("Question:", windowed, repeat=True)
    verdict = HRSGate(model, orchestrator(), hrs_config()).check(
        Case(question="Does drug X work? " * 60, context=FILLER * 30)
    )
    assert verdict.status is Status.ESCALATED and "too long" in verdict.reason


def test_sentences_are_kept_in_their_order_with_gaps_marked() -> None:
    context = "Alpha is red. Drug X saves lives. Gamma is blue. Drug X is cheap."
    text, total, kept = select_sentences(context, "drug X", budget_chars=50)
    assert (total, kept) == (4, 2)
    assert text == f"Drug X saves lives.{GAP}Drug X is cheap."


def test_unsure_answers_still_go_to_the_orchestrator() -> None:
    # The new release conditions do not short-cut the ordinary loop.
    model = answerer({"fact": completion(CONFIDENT)}, completion(UNSURE))
    reply = '{"action": "CONTINUE", "facts": ["fact"], "rationale": "r"}'
    verdict = HRSGate(model, orchestrator(reply), hrs_config()).check(CASE)
    assert verdict.status is Status.REFINED
