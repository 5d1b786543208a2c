"""Sampling consistency of a draft, in the manner of SelfCheckGPT (Manakul et al., 2023).

The idea: a model that knows a fact states it again when asked again; one that makes a fact
up tends to make up a different one each time. So a few more answers to the same prompt are
sampled (seeded, at a temperature, with a short token budget) and every sentence of the draft
is scored by how much support it finds in them. Two scorers, each giving a per-sentence
inconsistency (high: not supported):

* **n-gram** (the method's unigram variant): a unigram model over the words of the samples and
  the draft, with add-one smoothing; a sentence's score is the mean of ``-log p(word)`` over
  its words, and its worst word's ``-log p`` (a word no sample used is improbable).
* **embedding**: for each sample, the largest cosine similarity between the sentence and any
  of the sample's sentences (all-MiniLM-L6-v2, :mod:`medgate.embeddings`); the sentence's
  inconsistency is 1 minus the mean of those over the samples.

The draft's inconsistency is summarised over its sentences by the mean and the max of each
scorer (:class:`Consistency`). No sample: nothing can be said, and the record says so
(``error``) rather than claim consistency.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from pydantic import Field

from medgate.claims.sentences import split_sentences
from medgate.embeddings import SentenceEmbedder
from medgate.records import Record

_WORD = re.compile(r"[a-z0-9']+")


class SentenceSupport(Record):
    """How one draft sentence fares against the samples."""

    text: str
    ngram_mean: float = Field(ge=0, description="Mean -log p of its words under the unigram model.")
    ngram_max: float = Field(ge=0, description="-log p of its least probable word.")
    embedding: float | None = Field(
        default=None, description="1 - mean over samples of the max cosine to their sentences."
    )


class Consistency(Record):
    """The draft's inconsistency with its samples, per sentence and summarised."""

    samples: int = Field(ge=0, description="Sampled answers compared with.")
    sentences: list[SentenceSupport] = Field(default_factory=list)
    ngram_mean: float | None = Field(default=None, description="Mean over sentences.")
    ngram_max: float | None = Field(default=None, description="Max over sentences.")
    embedding_mean: float | None = Field(default=None, description="Mean over sentences.")
    embedding_max: float | None = Field(default=None, description="Max over sentences.")
    error: str | None = Field(default=None, description="Why it could not be measured, if so.")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def sentences_of(text: str) -> list[str]:
    """The draft's sentences (list items count as sentences), those with a word."""
    return [s.text for s in split_sentences(text) if words(s.text)]


class UnigramModel:
    """Unigram probabilities over the samples and the draft, add-one smoothed (SelfCheckGPT's
    n-gram variant with n = 1)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.counts: Counter[str] = Counter(w for t in texts for w in words(t))
        self.total = sum(self.counts.values())
        self.vocabulary = len(self.counts)

    def surprise(self, word: str) -> float:
        """-log p(word)."""
        return -math.log((self.counts[word] + 1) / (self.total + self.vocabulary))


def ngram_scores(
    sentences: Sequence[str], draft: str, samples: Sequence[str]
) -> list[tuple[float, float]]:
    """(mean, max) of -log p over each sentence's words, the model fitted on samples + draft."""
    model = UnigramModel([*samples, draft])
    out = []
    for sentence in sentences:
        surprises = [model.surprise(w) for w in words(sentence)]
        out.append((sum(surprises) / len(surprises), max(surprises)))
    return out


def embedding_scores(
    sentences: Sequence[str], samples: Sequence[str], embedder: SentenceEmbedder
) -> list[float]:
    """1 - mean over samples of each sentence's max cosine to that sample's sentences."""
    sample_sentences = [sentences_of(s) or [s] for s in samples]
    flat = [s for group in sample_sentences for s in group]
    vectors = embedder.embed([*sentences, *flat])
    draft_vectors, rest = vectors[: len(sentences)], vectors[len(sentences) :]
    best = np.zeros((len(sentences), len(samples)), dtype=np.float64)
    start = 0
    for j, group in enumerate(sample_sentences):
        block = rest[start : start + len(group)]
        start += len(group)
        best[:, j] = (draft_vectors @ block.T).max(axis=1)
    support = np.clip(best.mean(axis=1), -1.0, 1.0)
    return [float(1.0 - s) for s in support]


def measure_consistency(
    draft: str, samples: Sequence[str], embedder: SentenceEmbedder | None
) -> Consistency:
    """The draft's inconsistency with ``samples`` (see the module docstring); the embedding
    scorer only with an ``embedder``."""
    samples = [s for s in samples if s.strip()]
    sentences = sentences_of(draft)
    if not samples:
        return Consistency(samples=0, error="no sampled answer to compare with")
    if not sentences:
        return Consistency(samples=len(samples), error="the draft has no sentence with a word")
    grams = ngram_scores(sentences, draft, samples)
    embedded: list[float | None] = [None] * len(sentences)
    if embedder is not None:
        embedded = list(embedding_scores(sentences, samples, embedder))
    per = [
        SentenceSupport(text=s, ngram_mean=g[0], ngram_max=g[1], embedding=e)
        for s, g, e in zip(sentences, grams, embedded, strict=True)
    ]
    values = [e for e in embedded if e is not None]
    return Consistency(
        samples=len(samples),
        sentences=per,
        ngram_mean=float(np.mean([g[0] for g in grams])),
        ngram_max=float(max(g[1] for g in grams)),
        embedding_mean=float(np.mean(values)) if values else None,
        embedding_max=float(max(values)) if values else None,
    )
