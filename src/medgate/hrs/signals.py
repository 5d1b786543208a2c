"""The five Hallucination Risk Signals as registered components.

Each signal declares which parts of a model run it needs (:class:`Need`), so that the probe asks
the model only for those, in one pass over the prompt. A signal that cannot be computed (no
rarity centroid fitted, no tokens generated) says so: its value is ``None`` and its ``note``
explains, which is never the same as a low risk.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import ClassVar, Literal, Protocol

from pydantic import Field

from medgate.errors import ConfigError
from medgate.hrs import measures
from medgate.plugins import Registry
from medgate.records import Record, SignalValue

__all__ = ["SIGNALS", "ModelRun", "Need", "Signal", "SignalContext", "SignalValue"]


class Need(StrEnum):
    """What a signal consumes from the model run."""

    ANSWER_DISTRIBUTION = "answer_distribution"
    REASONING = "reasoning"
    SAMPLES = "samples"
    EMBEDDING = "embedding"
    PEER = "peer"
    """A second model's answer to the same prompt (``hrs.peer_model``)."""


class ModelRun(Record):
    """What one probe of the answering model collected; fields are filled only when needed."""

    answer: str = Field(description="The most probable label at the answer slot.")
    distribution: dict[str, float] = Field(description="Renormalised label distribution.")
    label_mass: float | None = Field(
        default=None, description="Probability the model put on any label before renormalising."
    )
    opening_distribution: dict[str, float] | None = Field(
        default=None,
        description=(
            "Label distribution at the first token of the reasoning, where small models often "
            "write their verdict; None where the backend cannot read it."
        ),
    )
    opening_label_mass: float | None = Field(
        default=None, description="Probability the labels had at the first token."
    )
    unseen_labels: list[str] = Field(
        default_factory=list,
        description="Labels a served answerer could not see among the top tokens at the answer "
        "slot (each given an upper bound, never 0).",
    )
    answer_read: str | None = Field(
        default=None,
        description="How a served answerer read the answer slot ('same_turn', 'cue' or "
        "'follow_up'); None for the in-process slot.",
    )
    answer_note: str | None = Field(
        default=None,
        description="Why a served answerer did not read the slot in the same turn (no chat "
        "template, no /completions endpoint).",
    )
    reasoning: str = Field(default="", description="The reasoning written before the answer.")
    reasoning_logprobs: list[float] = Field(default_factory=list)
    sample_distributions: list[dict[str, float]] = Field(
        default_factory=list, description="Label distributions of the ambiguity samples."
    )
    sample_answers: list[str] = Field(default_factory=list)
    prompt_tokens: int = Field(default=0, ge=0, description="Tokens of the prompt read.")
    generated_tokens: int = Field(
        default=0, ge=0, description="Tokens written: the reasoning and every sample's."
    )
    question_embedding: list[float] | None = Field(default=None, exclude=True)
    embedding_note: str | None = Field(
        default=None, description="Why the question has no embedding, when the model gave none."
    )
    peer_answer: str | None = Field(
        default=None, description="The second model's answer to the same prompt, when asked."
    )
    peer_distribution: dict[str, float] | None = Field(
        default=None, description="The second model's label distribution at the answer slot."
    )


class SignalContext(Record):
    """Fixed inputs a signal may need besides the model run."""

    l_max: int = 50
    centroid: list[float] | None = Field(default=None, exclude=True)
    centroid_note: str = (
        "no rarity centroid fitted: run `medgate fit-rarity` or `medgate calibrate`"
    )
    peer_note: str = "no second model configured: set hrs.peer_model"


class Signal(Protocol):
    """A hallucination risk signal."""

    name: ClassVar[str]
    needs: ClassVar[frozenset[Need]]
    layer: ClassVar[Literal["decision", "guidance"]]
    meaning: ClassVar[str]
    """What a high value means, in words the orchestrator is given."""

    def compute(self, run: ModelRun, ctx: SignalContext) -> SignalValue: ...


SIGNALS: Registry[type[Signal]] = Registry("medgate.signals", "signal")
"""The signals, built-in and plugin alike, by name (entry-point group ``medgate.signals``)."""


def signal_registry() -> dict[str, type[Signal]]:
    """Every registered signal class, by name."""
    return SIGNALS.load_all()


def build_signals(names: list[str]) -> list[Signal]:
    """One instance of each named signal, in order."""
    out: list[Signal] = []
    for name in names:
        cls = SIGNALS.load(name)
        if cls.name != name:
            raise ConfigError(f"the signal registered as {name!r} calls itself {cls.name!r}")
        out.append(cls())
    return out


def _value(
    signal: Signal, fn: Callable[[], float], failure: str = "could not be computed"
) -> SignalValue:
    try:
        return SignalValue(name=signal.name, value=fn(), layer=signal.layer)
    except ValueError as exc:
        return SignalValue(
            name=signal.name, value=None, layer=signal.layer, note=f"{failure}: {exc}"
        )


class EntropySignal:
    name: ClassVar[str] = "entropy"
    needs: ClassVar[frozenset[Need]] = frozenset({Need.ANSWER_DISTRIBUTION})
    layer: ClassVar[Literal["decision", "guidance"]] = "decision"
    meaning: ClassVar[str] = "uncertainty at the final answer (1 = the labels are equally likely)"

    def compute(self, run: ModelRun, ctx: SignalContext) -> SignalValue:
        return _value(self, lambda: measures.normalised_entropy(run.distribution))


class PerplexitySignal:
    name: ClassVar[str] = "perplexity"
    needs: ClassVar[frozenset[Need]] = frozenset({Need.REASONING})
    layer: ClassVar[Literal["decision", "guidance"]] = "decision"
    meaning: ClassVar[str] = "low confidence across the written reasoning (1 - 1/perplexity)"

    def compute(self, run: ModelRun, ctx: SignalContext) -> SignalValue:
        return _value(self, lambda: measures.perplexity_risk(run.reasoning_logprobs))


class AmbiguitySignal:
    name: ClassVar[str] = "ambiguity"
    needs: ClassVar[frozenset[Need]] = frozenset({Need.SAMPLES})
    layer: ClassVar[Literal["decision", "guidance"]] = "guidance"
    meaning: ClassVar[str] = (
        "disagreement between repeated samples (high: the model is inconsistent; "
        "add grounding facts)"
    )

    def compute(self, run: ModelRun, ctx: SignalContext) -> SignalValue:
        return _value(self, lambda: measures.mean_pairwise_js(run.sample_distributions))


class RaritySignal:
    name: ClassVar[str] = "rarity"
    needs: ClassVar[frozenset[Need]] = frozenset({Need.EMBEDDING})
    layer: ClassVar[Literal["decision", "guidance"]] = "guidance"
    meaning: ClassVar[str] = (
        "distance of the question from the training questions (high: unusual topic; "
        "give definitional background)"
    )

    def compute(self, run: ModelRun, ctx: SignalContext) -> SignalValue:
        if ctx.centroid is None:
            return SignalValue(name=self.name, value=None, layer=self.layer, note=ctx.centroid_note)
        if run.question_embedding is None:
            note = run.embedding_note or "no question embedding"
            return SignalValue(name=self.name, value=None, layer=self.layer, note=note)
        centroid, embedding = ctx.centroid, run.question_embedding
        return _value(self, lambda: measures.cosine_distance(embedding, centroid))


class TokenLengthSignal:
    name: ClassVar[str] = "token_length"
    needs: ClassVar[frozenset[Need]] = frozenset({Need.REASONING})
    layer: ClassVar[Literal["decision", "guidance"]] = "guidance"
    meaning: ClassVar[str] = "length of the reasoning relative to the budget (long: hesitation)"

    def compute(self, run: ModelRun, ctx: SignalContext) -> SignalValue:
        return _value(self, lambda: measures.length_risk(len(run.reasoning_logprobs), ctx.l_max))


class CrossModelSignal:
    """Whether a second model, asked the same prompt, gives another label (Need.PEER)."""

    name: ClassVar[str] = "cross_model"
    needs: ClassVar[frozenset[Need]] = frozenset({Need.PEER})
    layer: ClassVar[Literal["decision", "guidance"]] = "guidance"
    meaning: ClassVar[str] = (
        "disagreement with a second model asked the same question (1: it answers otherwise)"
    )

    def compute(self, run: ModelRun, ctx: SignalContext) -> SignalValue:
        if run.peer_answer is None:
            return SignalValue(name=self.name, value=None, layer=self.layer, note=ctx.peer_note)
        return SignalValue(
            name=self.name, value=float(run.peer_answer != run.answer), layer=self.layer
        )
