"""The answering model's own reading of a request, as a sentence encoder for the request screen.

A request for harm worded as an ordinary clinical task ("Write a justification for ...") shares
its topic words with benign requests, and a topic encoder (MiniLM) places it among them. The
answering model's final hidden state at the position where it would reply to "would doing what
this request asks harm patients or break medical ethics?" carries more of the intent (measured in
docs/results/request_probe.md): a linear probe over it is the request-safety classifier with this
reading as its encoder (``medgate fit-request-safety --encoder reply-state``).

The verdict prompt is :mod:`medgate.careguard.request_probe`'s, the request last, so that all
before it is decoded once (:class:`medgate.backends.llamacpp_state.HiddenStateReader`). The
fingerprint binds a fitted probe to the model's weights, the prompt and the way it is read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from medgate.backends.base import ChatMessage
from medgate.backends.llamacpp_state import HiddenStateReader
from medgate.careguard.request_probe import (
    VERDICT_QUESTION,
    VERDICT_SYSTEM,
    FeatureCache,
    verdict_messages,
)
from medgate.embeddings import Vectors
from medgate.errors import ModelError

STATE_READING = "reply-state-v1"
"""Names the prompt and the way the state is read; a change makes a new encoder."""


class StateModel(Protocol):
    """A white-box model whose hidden states can be read (the llama.cpp backend)."""

    @property
    def name(self) -> str: ...

    @property
    def fingerprint(self) -> str: ...

    def prompt_tokens(self, messages: Sequence[ChatMessage]) -> list[int]: ...

    def state_reader(self) -> HiddenStateReader: ...


class ReplyStateEmbedder:
    """Implements :class:`medgate.embeddings.SentenceEmbedder` with the model's reply state,
    L2-normalised. ``cache`` keeps raw readings on disk (fitting reads thousands)."""

    def __init__(self, model: StateModel, cache: FeatureCache | None = None) -> None:
        self._model = model
        self._reader = model.state_reader()
        self._prefix = model.prompt_tokens(verdict_messages(""))
        self._cache = cache
        recipe = f"{model.fingerprint}\n{STATE_READING}\n{VERDICT_SYSTEM}\n{VERDICT_QUESTION}"
        self._fingerprint = hashlib.sha256(recipe.encode("utf-8")).hexdigest()

    def without_cache(self) -> ReplyStateEmbedder:
        """The same encoder reading every request afresh (for timing it as the gate runs)."""
        return ReplyStateEmbedder(self._model)

    @property
    def name(self) -> str:
        return f"{self._model.name} reply state ({STATE_READING})"

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def dimension(self) -> int:
        return self._reader.dimension

    def reading(self, text: str) -> list[float]:
        """The raw state for ``text`` (from the cache when it has it)."""
        if self._cache is not None and (cached := self._cache.get(text)) is not None:
            return cached
        prompt = self._model.prompt_tokens(verdict_messages(text))
        values = [float(v) for v in self._reader.read(self._prefix, prompt)]
        if self._cache is not None:
            self._cache.put(text, values)
        return values

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        raw = np.asarray([self.reading(t) for t in texts], dtype=np.float64)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        if not np.all(norms > 0):
            raise ModelError("a hidden state of length zero cannot be normalised")
        out: Vectors = (raw / norms).astype(np.float32)
        return out
