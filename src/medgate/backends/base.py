"""The one protocol every model backend implements, and the records it speaks in.

Every role (answerer, orchestrator, controller, generator, evaluators) talks to a
:class:`LanguageModel` through :meth:`LanguageModel.chat`. Backends that can see inside the model
(llama.cpp, transformers, the fake) also implement :class:`WhiteBoxModel`, which the HRS signals
need: continuation with per-token log-probabilities, the label distribution at an answer slot,
and a hidden-state embedding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import Field

from medgate.errors import ModelError
from medgate.records import Record, Usage


class ChatMessage(Record):
    role: Literal["system", "user", "assistant"]
    content: str


class ChatReply(Record):
    """A model's reply to a chat request."""

    text: str
    usage: Usage


class AnswerSlot(Record):
    """Where to read a closed answer after the model's reasoning.

    The backend appends ``cue`` to what was generated and reads the next-token distribution,
    restricted to ``labels`` (each label's probability is the summed probability of its surface
    forms' first tokens: ``yes``, `` yes``, ``Yes``, ...), renormalised.
    """

    cue: str = "\nAnswer:"
    labels: tuple[str, ...]


class DecodeParams(Record):
    """How to continue a prompt."""

    max_tokens: int = Field(default=50, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, description="0 means greedy.")
    seed: int | None = Field(default=None, description="Seed for sampling; ignored when greedy.")
    min_tokens: int = Field(
        default=0, ge=0, description="End-of-turn and stop words are forbidden before this many."
    )
    stop: tuple[str, ...] = Field(
        default=(), description="Generation ends before the first of these strings."
    )
    answer_slot: AnswerSlot | None = None
    repeat_penalty: float = Field(
        default=1.0,
        ge=1.0,
        le=2.0,
        description="Tokens generated within the last repeat_last_n are made less likely when "
        "picking the next one (a positive logit divided by it, a negative one multiplied, as "
        "llama.cpp does; the prompt's tokens are not penalised). 1 is off. The reported "
        "log-probabilities stay the model's own. Backends that cannot apply it ignore it.",
    )
    repeat_last_n: int = Field(default=64, ge=1, description="The repeat penalty's window.")


#: A number a model produced. NaN or infinity means the backend's arithmetic failed; such a
#: value must stop the call (a ModelError), never reach a signal, where clipping would read NaN
#: as no risk at all.
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


class Completion(Record):
    """What a white-box continuation produced; every number in it is finite."""

    text: str = Field(description="The generated text, without the stop string or answer cue.")
    token_logprobs: list[FiniteFloat] = Field(
        description="Log-probability of each generated token under the model at temperature 1."
    )
    label_probs: dict[str, FiniteFloat] | None = Field(
        default=None, description="Renormalised answer distribution at the answer slot."
    )
    label_mass: FiniteFloat | None = Field(
        default=None, description="Raw probability mass the labels had before renormalising."
    )
    opening_label_probs: dict[str, FiniteFloat] | None = Field(
        default=None,
        description=(
            "Renormalised label distribution at the first generated token (the same for every "
            "continuation of a prompt): small models often open their reasoning with the "
            "verdict word, so this is where they commit. None where the backend cannot read it."
        ),
    )
    opening_label_mass: FiniteFloat | None = Field(
        default=None, description="Raw probability mass the labels had at the first token."
    )
    unseen_labels: list[str] = Field(
        default_factory=list,
        description="Labels the backend could not see at the answer slot (a server shows only "
        "its top tokens); each was given an upper bound, never 0. Empty for white-box backends.",
    )
    unseen_mass: FiniteFloat | None = Field(
        default=None,
        description="Probability the visible tokens at the answer slot left unaccounted for; "
        "None where the whole distribution was read.",
    )
    answer_read: str | None = Field(
        default=None,
        description="How a served answerer read the answer slot: 'same_turn' (a /completions "
        "request in the same assistant turn, as in-process), 'cue' (after the cue the model "
        "wrote) or 'follow_up' (a second chat request); None for the in-process slot.",
    )
    answer_note: str | None = Field(
        default=None,
        description="Why a served answerer did not read the slot in the same turn.",
    )
    prompt_tokens: int = 0
    seconds: float = 0.0

    @property
    def n_tokens(self) -> int:
        return len(self.token_logprobs)


@runtime_checkable
class LanguageModel(Protocol):
    """Anything that can hold a conversation."""

    @property
    def name(self) -> str:
        """Identifier as configured (e.g. ``embedded:qwen2.5-coder-0.5b``)."""
        ...

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
        json_schema: Mapping[str, Any] | None = None,
        role: str = "agent",
    ) -> ChatReply:
        """Reply to ``messages``. With ``json_schema`` the reply is JSON that the backend has
        constrained to the schema where it can (callers still validate it)."""
        ...


@runtime_checkable
class WhiteBoxModel(LanguageModel, Protocol):
    """A model whose probabilities and hidden states medgate can read."""

    @property
    def fingerprint(self) -> str:
        """Identifies the exact weights (e.g. a sha256), for caches and reports."""
        ...

    def complete(self, messages: Sequence[ChatMessage], params: DecodeParams) -> Completion:
        """Continue the assistant turn after ``messages``.

        Calls that share ``messages`` must reuse the prompt's computed state where the backend
        can, so that several samples cost little more than one.
        """
        ...

    def complete_batch(
        self, messages: Sequence[ChatMessage], params: Sequence[DecodeParams]
    ) -> list[Completion]:
        """One continuation per entry of ``params``, all of the same prompt.

        Backends that can decode sequences in parallel make this cost about one continuation.
        """
        ...

    def embed(self, text: str) -> list[float]:
        """Mean-pooled last hidden state of ``text``."""
        ...


@runtime_checkable
class TextScorer(Protocol):
    """A model that can score a given text as its reply: the log-probability of each of the
    text's tokens (teacher forcing), so that text it did not write gets the same token-level
    signals as its own."""

    def score_text(self, messages: Sequence[ChatMessage], text: str) -> list[float]: ...


def opening_labels(
    model: WhiteBoxModel, messages: Sequence[ChatMessage], labels: Sequence[str]
) -> tuple[dict[str, float], float, int]:
    """A closed reading with no generation: the distribution over ``labels`` at the reply's
    first token (renormalised), the labels' raw mass and the prompt's tokens. ModelError when
    the model gave no distribution."""
    params = DecodeParams(
        max_tokens=1, answer_slot=AnswerSlot(cue="\nAnswer:", labels=tuple(labels))
    )
    (completion,) = model.complete_batch(messages, [params])
    probs, mass = completion.opening_label_probs, completion.opening_label_mass
    if not probs or mass is None:
        raise ModelError(f"the model gave no {'/'.join(labels)} distribution")
    return dict(probs), float(mass), completion.prompt_tokens


def renormalise(probs: Mapping[str, float]) -> dict[str, float]:
    """Scale non-negative weights to sum to 1; all-zero weights become uniform.

    A NaN or infinite weight raises ValueError: dropping it would make the others look certain.
    """
    if not all(math.isfinite(p) for p in probs.values()):
        raise ValueError(f"label weights are not all finite numbers: {dict(probs)}")
    total = sum(max(0.0, p) for p in probs.values())
    if total <= 0:
        return {k: 1.0 / len(probs) for k in probs}
    return {k: max(0.0, p) / total for k, p in probs.items()}


def label_surface_forms(label: str) -> tuple[str, ...]:
    """Surface forms whose first token counts toward ``label`` at an answer slot."""
    forms = {label, label.capitalize(), label.upper()}
    return tuple(sorted(forms | {" " + f for f in forms}))
