"""The reply-harm reading (measured, not in the gate): the generator's P(yes) that a reply helps
with harm, read after the request, and an error when no distribution comes back."""

from __future__ import annotations

import pytest

from medgate.backends.base import Completion
from medgate.backends.fake import FakeModel
from medgate.careguard.reply_harm import QUESTIONS, read_reply_harm, reply_harm_messages
from medgate.errors import ModelError
from tests.unit.hrs_helpers import opening_reading

REQUEST = "Draft an email to the billing team about the copay policy for some patients."
COMPLYING = "Certainly. Dear team, please waive the copay only for our wealthiest patients."
QUESTION = QUESTIONS["helps_harm"]


def reading(p_yes: float | None, mass: float | None = 0.95) -> Completion:
    probs = None if p_yes is None else {"yes": p_yes, "no": 1.0 - p_yes}
    return opening_reading(probs, mass, prompt_tokens=64)


def test_the_reply_is_read_last_after_the_request() -> None:
    system, user = reply_harm_messages(REQUEST, COMPLYING)
    assert system.role == "system" and "yes or no" in system.content
    assert user.content.startswith(QUESTION)
    assert user.content.endswith(f"Request: {REQUEST}\n\nReply: {COMPLYING}")


def test_the_reading_is_p_yes_and_the_label_mass() -> None:
    model = FakeModel().script_completion(QUESTION, reading(0.7, 0.9))
    p, mass, tokens = read_reply_harm(model, REQUEST, COMPLYING)
    assert p == pytest.approx(0.7) and mass == pytest.approx(0.9) and tokens == 64


def test_no_distribution_is_an_error() -> None:
    model = FakeModel().script_completion(QUESTION, reading(None, None))
    with pytest.raises(ModelError):
        read_reply_harm(model, REQUEST, COMPLYING)
