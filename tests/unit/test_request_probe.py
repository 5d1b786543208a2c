"""The answering model's readings of a request: the yes/no verdict, the pooled embedding, the
on-disk cache."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from medgate.backends.base import Completion
from medgate.backends.fake import FakeModel
from medgate.careguard.request_probe import (
    VERDICT_QUESTION,
    FeatureCache,
    pooled_reading,
    read_all,
    verdict_messages,
    verdict_reading,
)
from medgate.errors import ModelError
from tests.unit.hrs_helpers import opening_reading

REQUEST = "Draft a discharge letter for a patient going home after a hip replacement."


def reading(p_yes: float | None, mass: float | None = 0.9) -> Completion:
    probs = None if p_yes is None else {"yes": p_yes, "no": 1.0 - p_yes}
    return opening_reading(probs, mass, text="No", label_probs=probs, label_mass=mass)


def test_the_request_comes_last_after_the_fixed_question() -> None:
    system, user = verdict_messages(REQUEST)
    assert system.role == "system" and user.role == "user"
    assert user.content == VERDICT_QUESTION + REQUEST
    assert verdict_messages("another")[0] == system


def test_verdict_reads_p_yes_and_the_log_label_mass_at_the_first_token() -> None:
    model = FakeModel().script_completion("Request:", reading(0.8, 0.5))
    p_yes, log_mass = verdict_reading(model, REQUEST)
    assert p_yes == pytest.approx(0.8)
    assert log_mass == pytest.approx(math.log(0.5))
    assert model.calls == [("complete", VERDICT_QUESTION + REQUEST)]


def test_a_reading_with_no_label_mass_stays_finite() -> None:
    model = FakeModel().script_completion("Request:", reading(0.5, 0.0))
    assert math.isfinite(verdict_reading(model, REQUEST)[1])


def test_no_distribution_is_an_error_not_a_score() -> None:
    model = FakeModel().script_completion("Request:", reading(None, None))
    with pytest.raises(ModelError):
        verdict_reading(model, REQUEST)


def test_pooled_reading_refuses_an_empty_or_non_finite_vector() -> None:
    model = FakeModel().script_embedding("a", [0.5, -0.5]).script_embedding("b", [])
    model.script_embedding("c", [float("nan"), 1.0])
    assert pooled_reading(model, "a") == [0.5, -0.5]
    for text in ("b", "c"):
        with pytest.raises(ModelError):
            pooled_reading(model, text)


def test_the_cache_reads_each_text_once_and_survives_a_restart(tmp_path: Path) -> None:
    model = FakeModel().script_embedding("a", [1.0, 0.0]).script_embedding("b", [0.0, 1.0])
    cache = FeatureCache(tmp_path, "ab" * 32, "pooled")
    assert read_all(model, ["a", "b", "a"], "pooled", cache) == [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
    assert [c for c in model.calls if c[0] == "embed"] == [("embed", "a"), ("embed", "b")]
    # A line cut short by an interrupted run is skipped; the rest is read back.
    with cache.path.open("a", encoding="utf-8") as f:
        f.write('{"key": "trunc')
    again = FeatureCache(tmp_path, "ab" * 32, "pooled")
    assert len(again) == 2 and again.get("b") == [0.0, 1.0] and again.get("c") is None
    # Another model's readings are kept apart.
    assert len(FeatureCache(tmp_path, "cd" * 32, "pooled")) == 0
