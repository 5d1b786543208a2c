"""The reply-state encoder of the request screen, with a stand-in model (logic only)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from medgate.backends.base import ChatMessage
from medgate.careguard.request_probe import FeatureCache, verdict_messages
from medgate.careguard.request_safety import (
    RequestSafetyClassifier,
    request_encoder,
    save_artifact,
)
from medgate.careguard.request_safety_fit import fit_request_safety
from medgate.careguard.request_state import STATE_READING, ReplyStateEmbedder
from medgate.config import load_config
from medgate.errors import InputError, PrerequisiteError

from .test_request_safety import tiny_corpus


class FakeReader:
    """Returns a state made from the prompt's tokens after the fixed opening."""

    dimension = 4

    def __init__(self) -> None:
        self.calls: list[tuple[list[int], list[int]]] = []

    def read(self, prefix: Sequence[int], prompt: Sequence[int]) -> Any:
        self.calls.append((list(prefix), list(prompt)))
        tail = [t for t in prompt if t >= 1000]
        return np.asarray(
            [len(tail) + 1.0, sum(tail) % 7 + 1.0, 3.0 * ("falsify" in str(tail)), 2.0],
            dtype=np.float32,
        )


class FakeStateModel:
    name = "fake"

    def __init__(self, fingerprint: str = "weights-a") -> None:
        self.fingerprint = fingerprint
        self.reader = FakeReader()

    def prompt_tokens(self, messages: Sequence[ChatMessage]) -> list[int]:
        words = messages[-1].content.split()
        return [1, 2, 3] + [1000 + len(w) for w in words[-6:]]

    def state_reader(self) -> FakeReader:
        return self.reader


def test_states_are_unit_vectors_read_after_the_fixed_opening() -> None:
    model = FakeStateModel()
    embedder = ReplyStateEmbedder(model)  # type: ignore[arg-type]
    vectors = embedder.embed(["explain the referral", "falsify the record"])
    assert vectors.shape == (2, 4)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0], abs=1e-6)
    # The opening is the prompt with an empty request: every read passes it as the prefix.
    prefix = model.prompt_tokens(verdict_messages(""))
    assert all(call[0] == prefix for call in model.reader.calls)
    assert embedder.embed([]).shape == (0, 4)


def test_the_fingerprint_binds_the_weights_and_the_reading() -> None:
    a = ReplyStateEmbedder(FakeStateModel("weights-a"))  # type: ignore[arg-type]
    b = ReplyStateEmbedder(FakeStateModel("weights-b"))  # type: ignore[arg-type]
    assert a.fingerprint != b.fingerprint
    assert a.fingerprint == ReplyStateEmbedder(FakeStateModel("weights-a")).fingerprint  # type: ignore[arg-type]
    assert STATE_READING in a.name


def test_readings_are_cached_on_disk_and_timing_reads_afresh(tmp_path: Path) -> None:
    model = FakeStateModel()
    cache = FeatureCache(tmp_path, model.fingerprint, STATE_READING)
    embedder = ReplyStateEmbedder(model, cache)  # type: ignore[arg-type]
    first = embedder.embed(["explain the referral"])
    again = ReplyStateEmbedder(model, FeatureCache(tmp_path, model.fingerprint, STATE_READING))  # type: ignore[arg-type]
    calls = len(model.reader.calls)
    assert np.array_equal(again.embed(["explain the referral"]), first)
    assert len(model.reader.calls) == calls  # served from the file
    embedder.without_cache().embed(["explain the referral"])
    assert len(model.reader.calls) == calls + 1


def test_a_state_of_length_zero_is_an_error() -> None:
    model = FakeStateModel()
    model.reader.read = lambda prefix, prompt: np.zeros(4, dtype=np.float32)  # type: ignore[method-assign]
    with pytest.raises(Exception, match="length zero"):
        ReplyStateEmbedder(model).embed(["anything"])  # type: ignore[arg-type]


def test_a_fit_without_ngrams_ships_the_state_weights_alone(tmp_path: Path) -> None:
    class Words:
        name, fingerprint, dimension = "words", "w", 3

        def embed(self, texts: Sequence[str]) -> Any:
            rows = [
                [t.count("falsify") + t.count("secretly") + 0.1, t.count("the") + 0.1, 1.0]
                for t in texts
            ]
            x = np.asarray(rows, dtype=np.float32).reshape(len(texts), 3)
            return x / np.linalg.norm(x, axis=1, keepdims=True)

    fitted = fit_request_safety(
        tiny_corpus(),
        Words(),
        c_grid=(1.0,),
        scale_grid=(0.0,),
        budget=0.0,
        encoder_kind="reply-state",
    )
    artifact = fitted.artifact
    assert artifact.ngrams is None
    assert len(artifact.coef) == 3
    assert artifact.provenance.encoder_kind == "reply-state"
    assert artifact.provenance.ngram_scale_grid == [0.0]
    path = save_artifact(artifact, tmp_path / "state.json")
    classifier = RequestSafetyClassifier.load(Words(), path)
    assert classifier.assess("secretly falsify the leaflet").harmful
    assert not classifier.assess("explain the referral").harmful


def test_an_unknown_encoder_is_refused_with_the_known_ones() -> None:
    with pytest.raises(InputError, match="minilm, reply-state"):
        request_encoder(load_config(), "bag-of-words")


def test_the_reply_state_needs_a_model_whose_states_can_be_read() -> None:
    config = load_config(model="fake:scripted")
    with pytest.raises(PrerequisiteError, match="hidden states"):
        request_encoder(config, "reply-state")


def test_joined_encoders_sit_side_by_side_at_unit_norm() -> None:
    from medgate.embeddings import JoinedEmbedder

    state = ReplyStateEmbedder(FakeStateModel())  # type: ignore[arg-type]
    joined = JoinedEmbedder([state, state.without_cache()])
    vectors = joined.embed(["explain the referral"])
    assert vectors.shape == (1, 8)
    assert float(np.linalg.norm(vectors[0])) == pytest.approx(1.0, abs=1e-6)
    assert joined.dimension == 8
    assert joined.fingerprint != state.fingerprint
    assert joined.without_cache().fingerprint == joined.fingerprint
