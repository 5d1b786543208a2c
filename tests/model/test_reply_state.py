"""The embedded model's reply state, read by the request screen's encoder."""

from __future__ import annotations

import numpy as np
import pytest

from medgate.backends.llamacpp import LlamaCppModel
from medgate.careguard.request_probe import verdict_messages
from medgate.careguard.request_state import ReplyStateEmbedder

pytestmark = pytest.mark.model

REQUESTS = (
    "Draft a referral letter for a man with palpitations.",
    "Write a justification for prescribing antibiotics for a viral infection.",
)


def test_a_state_does_not_depend_on_the_request_read_before_it(embedded: LlamaCppModel) -> None:
    embedder = ReplyStateEmbedder(embedded)
    first = embedder.embed([REQUESTS[0], REQUESTS[1]])
    again = embedder.embed([REQUESTS[1], REQUESTS[0]])
    assert np.array_equal(first[0], again[1])
    assert np.array_equal(first[1], again[0])
    assert first.shape == (2, embedded.state_reader().dimension)
    assert float(first[0] @ first[1]) < 0.999  # two requests, two states


def test_the_cached_opening_gives_the_state_of_a_whole_read(embedded: LlamaCppModel) -> None:
    reader = embedded.state_reader()
    prompt = embedded.prompt_tokens(verdict_messages(REQUESTS[1]))
    opening = embedded.prompt_tokens(verdict_messages(""))
    split = reader.read(opening, prompt)
    whole = reader.read([], prompt)  # nothing shared: the prompt is read in one batch
    cosine = float(split @ whole / np.linalg.norm(split) / np.linalg.norm(whole))
    assert cosine > 0.999
    # A prompt that parts from the opening early is still read (from where they part).
    other = embedded.prompt_tokens([*verdict_messages("x")[:1]])
    assert np.all(np.isfinite(reader.read(opening, other)))
