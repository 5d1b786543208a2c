"""The formulas behind the five signals, as plain functions of numbers.

Kept free of model and record types so each can be checked against values worked out by hand.
Every function raises ValueError for a NaN or infinite input instead of returning a number:
clipping would turn NaN into 0 (``max(0.0, nan)`` is 0.0), which reads as no risk at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations


def _finite(values: Sequence[float], what: str) -> None:
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{what} holds a value that is not a finite number")


def _probs(dist: Mapping[str, float], labels: Sequence[str]) -> list[float]:
    raw = [float(dist.get(label, 0.0)) for label in labels]
    _finite(raw, "the answer distribution")
    return [max(0.0, p) for p in raw]


def normalised_entropy(dist: Mapping[str, float]) -> float:
    """Shannon entropy divided by log(k), k = number of labels: 0 = certain, 1 = uniform.

    For two labels this is the binary entropy in bits (the HRS paper's Eq. 1).
    """
    probs = _probs(dist, list(dist))
    k = len(probs)
    if k < 2:
        return 0.0
    total = sum(probs)
    if total <= 0:
        return 1.0
    h = -sum((p / total) * math.log(p / total) for p in probs if p > 0)
    return min(1.0, max(0.0, h / math.log(k)))


def perplexity_risk(token_logprobs: Sequence[float]) -> float:
    """1 - 1/PPL with PPL = exp(-mean log p) over generated tokens (Eq. 2); in [0, 1)."""
    if not token_logprobs:
        raise ValueError("perplexity needs at least one generated token")
    _finite(token_logprobs, "the token log-probabilities")
    mean_nll = -sum(token_logprobs) / len(token_logprobs)
    return 1.0 - math.exp(-max(0.0, mean_nll))


def js_divergence(p: Mapping[str, float], q: Mapping[str, float]) -> float:
    """Jensen-Shannon divergence in bits (base 2), so it lies in [0, 1]."""
    labels = sorted(set(p) | set(q))
    pv, qv = _probs(p, labels), _probs(q, labels)
    sp, sq = sum(pv) or 1.0, sum(qv) or 1.0
    pv = [x / sp for x in pv]
    qv = [x / sq for x in qv]
    m = [(a + b) / 2 for a, b in zip(pv, qv, strict=True)]

    def kl(a: list[float]) -> float:
        return sum(x * math.log2(x / y) for x, y in zip(a, m, strict=True) if x > 0)

    return min(1.0, max(0.0, 0.5 * kl(pv) + 0.5 * kl(qv)))


def mean_pairwise_js(dists: Sequence[Mapping[str, float]]) -> float:
    """Mean JS divergence over all pairs of sampled answer distributions (Eq. 3 for three)."""
    pairs = list(combinations(dists, 2))
    if not pairs:
        raise ValueError("ambiguity needs at least two sampled distributions")
    return sum(js_divergence(a, b) for a, b in pairs) / len(pairs)


def cosine_distance(u: Sequence[float], v: Sequence[float]) -> float:
    """1 - cosine similarity (Eq. 4), clipped to [0, 1]: opposite directions count as maximal."""
    if len(u) != len(v):
        raise ValueError(f"embedding sizes differ: {len(u)} vs {len(v)}")
    _finite([*u, *v], "an embedding")
    dot = sum(a * b for a, b in zip(u, v, strict=True))
    nu = math.sqrt(sum(a * a for a in u))
    nv = math.sqrt(sum(b * b for b in v))
    if nu == 0 or nv == 0:
        raise ValueError("cosine distance of a zero vector is undefined")
    return min(1.0, max(0.0, 1.0 - dot / (nu * nv)))


def length_risk(n_tokens: int, l_max: int) -> float:
    """min(1, reasoning tokens / L_max) (Eq. 5)."""
    if l_max <= 0:
        raise ValueError("L_max must be positive")
    return min(1.0, max(0, n_tokens) / l_max)
