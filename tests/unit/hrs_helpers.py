"""Builders for scripted HRS runs with the fake model."""

from __future__ import annotations

import json
import math

from medgate.backends.base import Completion
from medgate.backends.fake import FakeModel
from medgate.config import HRSConfig

CONFIDENT = {"yes": 0.98, "no": 0.01, "maybe": 0.01}
CONFIDENT_NO = {"yes": 0.01, "no": 0.98, "maybe": 0.01}
UNSURE = {"yes": 0.36, "no": 0.34, "maybe": 0.30}
SURE_TOKENS = [math.log(0.95)] * 10  # perplexity risk = 0.05
UNSURE_TOKENS = [math.log(0.5)] * 10  # perplexity risk = 0.5


def completion(dist: dict[str, float], logprobs: list[float] | None = None) -> Completion:
    return Completion(
        text="Reasoning about the evidence.",
        token_logprobs=SURE_TOKENS if logprobs is None else logprobs,
        label_probs=dist,
        label_mass=0.9,
    )


def opening_reading(
    probs: dict[str, float] | None, mass: float | None, *, text: str = "Yes", **fields: object
) -> Completion:
    """A prompt read for a closed yes/no reply: the label distribution at the reply's first
    token (what :func:`medgate.backends.base.opening_labels` reads), or none."""
    return Completion.model_validate(
        {
            "text": text,
            "token_logprobs": [-0.1],
            "opening_label_probs": probs,
            "opening_label_mass": mass,
            **fields,
        }
    )


def continue_reply(*facts: str) -> str:
    return json.dumps({"action": "CONTINUE", "facts": list(facts), "rationale": "add facts"})


ABSTAIN_REPLY = json.dumps({"action": "ABSTAIN", "facts": [], "rationale": "unanswerable"})


def hrs_config(**kw: object) -> HRSConfig:
    base: dict[str, object] = {"signals": ["entropy", "perplexity", "ambiguity", "token_length"]}
    base.update(kw)
    return HRSConfig.model_validate(base)


def answerer(rounds: dict[str, Completion], base: Completion) -> FakeModel:
    """A fake answerer: ``rounds`` maps a fact text (present from that round on) to its answer.

    Later facts must come first in ``rounds`` since prompts are cumulative.
    """
    model = FakeModel("answerer")
    for fact, comp in rounds.items():
        model.script_completion(fact, comp, repeat=True)
    model.script_completion("Question:", base, repeat=True)
    return model


def fresh_facts(prefix: str = "fact") -> object:
    """A scripted orchestrator reply that CONTINUEs with a new fact each time it is called."""
    count = 0

    def reply(_: object) -> str:
        nonlocal count
        count += 1
        return continue_reply(f"{prefix} {count}")

    return reply
