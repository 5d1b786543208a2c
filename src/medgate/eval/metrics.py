"""Metrics of the HRS paper (section 3.4) and the selective-prediction metrics it lacks.

All functions are pure and take plain per-item outcomes, so every number can be checked by hand.
A metric whose denominator is empty is ``None`` (not 0): "no wrong baseline answers" is not the
same as "none of them caught".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from pydantic import Field

from medgate.records import Record


class ItemOutcome(Record):
    """What the gate did with one item under one configuration."""

    item_id: str
    gold: str
    baseline: str = Field(description="The round-0 answer.")
    escalated: bool
    final: str | None = Field(description="The answer shown to the user; None when escalated.")

    @property
    def baseline_correct(self) -> bool:
        return self.baseline == self.gold

    @property
    def final_correct(self) -> bool:
        return self.final is not None and self.final == self.gold


class GateMetrics(Record):
    """The paper's Table 2 quantities for one configuration on one item set."""

    n: int
    n_escalated: int
    n_wrong_baseline: int
    baseline_accuracy: float | None
    escalation_rate: float | None
    safety_gain: float | None = Field(description="|escalated & wrong baseline| / |wrong baseline|")
    safety_gain_ceiling: float | None = Field(
        description="min(1, escalation rate / baseline error): the most any gate escalating this "
        "many items could catch."
    )
    auto_answer_accuracy: float | None = Field(
        description="Correct final answers among non-escalated items."
    )
    degradation_rate: float | None = Field(
        description="Non-escalated items with a correct baseline and a wrong final answer, "
        "over all items (Eq. 11)."
    )
    improvement_rate: float | None = Field(
        description="Non-escalated items with a wrong baseline and a correct final answer, "
        "over all items."
    )


def _ratio(num: int, den: int) -> float | None:
    return None if den == 0 else num / den


def gate_metrics(items: Sequence[ItemOutcome]) -> GateMetrics:
    n = len(items)
    escalated = [i for i in items if i.escalated]
    answered = [i for i in items if not i.escalated]
    wrong = [i for i in items if not i.baseline_correct]
    caught = sum(1 for i in wrong if i.escalated)
    esc_rate = _ratio(len(escalated), n)
    base_err = _ratio(len(wrong), n)
    ceiling: float | None
    if esc_rate is None or base_err is None or base_err == 0:
        ceiling = None
    else:
        ceiling = min(1.0, esc_rate / base_err)
    return GateMetrics(
        n=n,
        n_escalated=len(escalated),
        n_wrong_baseline=len(wrong),
        baseline_accuracy=_ratio(n - len(wrong), n),
        escalation_rate=esc_rate,
        safety_gain=_ratio(caught, len(wrong)),
        safety_gain_ceiling=ceiling,
        auto_answer_accuracy=_ratio(sum(1 for i in answered if i.final_correct), len(answered)),
        degradation_rate=_ratio(
            sum(1 for i in answered if i.baseline_correct and not i.final_correct), n
        ),
        improvement_rate=_ratio(
            sum(1 for i in answered if not i.baseline_correct and i.final_correct), n
        ),
    )


def cost_per_call(
    input_tokens: Sequence[int], output_tokens: Sequence[int], p_in: float, p_out: float
) -> float | None:
    """Eq. 12: mean tokens per orchestrator call times the USD price per million tokens."""
    if not input_tokens:
        return None
    n_in = sum(input_tokens) / len(input_tokens)
    n_out = sum(output_tokens) / len(output_tokens)
    return (n_in * p_in + n_out * p_out) / 1e6


def auroc(scores: Sequence[float], positive: Sequence[bool]) -> float | None:
    """Probability that a random positive scores above a random negative (ties count half).

    Here a positive is a wrong baseline answer and the score is a risk signal, so 0.5 is chance
    and 1.0 means the signal ranks every wrong answer above every right one.
    """
    if len(scores) != len(positive):
        raise ValueError("scores and labels differ in length")
    pos = [s for s, p in zip(scores, positive, strict=True) if p]
    neg = [s for s, p in zip(scores, positive, strict=True) if not p]
    if not pos or not neg:
        return None
    ranks = _average_ranks(scores)
    rank_pos = sum(r for r, p in zip(ranks, positive, strict=True) if p)
    u = rank_pos - len(pos) * (len(pos) + 1) / 2
    return u / (len(pos) * len(neg))


def _average_ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


class RiskCoverage(Record):
    """Selective risk when answering only the ``k`` least risky items, for k = 1..n."""

    coverage: list[float]
    risk: list[float]
    aurc: float | None = Field(description="Mean selective risk over k = 1..n.")


def risk_coverage(scores: Sequence[float], wrong: Sequence[bool]) -> RiskCoverage:
    """The risk-coverage curve of ranking items by ``scores`` (low = answered first).

    Tied scores cannot be ordered by the gate, so within a tie the expected error count is used:
    the group's errors are spread evenly over its members.
    """
    n = len(scores)
    if n != len(wrong):
        raise ValueError("scores and labels differ in length")
    if n == 0:
        return RiskCoverage(coverage=[], risk=[], aurc=None)
    order = sorted(range(n), key=lambda i: scores[i])
    errors: list[float] = []
    i = 0
    while i < n:
        j = i
        while j + 1 < n and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        group = order[i : j + 1]
        share = sum(1 for g in group if wrong[g]) / len(group)
        errors.extend([share] * len(group))
        i = j + 1
    cum = 0.0
    coverage, risk = [], []
    for k, e in enumerate(errors, 1):
        cum += e
        coverage.append(k / n)
        risk.append(cum / k)
    return RiskCoverage(coverage=coverage, risk=risk, aurc=sum(risk) / n)


def accuracy_at_coverage(scores: Sequence[float], wrong: Sequence[bool], coverage: float) -> float:
    """Accuracy on the ceil(coverage * n) least risky items (ties as in :func:`risk_coverage`)."""
    if not 0 < coverage <= 1:
        raise ValueError("coverage must be in (0, 1]")
    curve = risk_coverage(scores, wrong)
    if not curve.risk:
        raise ValueError("no items")
    k = max(1, math.ceil(coverage * len(scores) - 1e-9))
    return 1.0 - curve.risk[k - 1]


def mean_std(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (n-1) of the defined values."""
    xs = [v for v in values if v is not None]
    if not xs:
        return None, None
    mean = sum(xs) / len(xs)
    if len(xs) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


def bootstrap_ci(
    statistic: Callable[[Sequence[int]], float | None],
    n: int,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of ``statistic`` over ``n`` items resampled with
    replacement (``statistic`` gets the drawn indices); resamples where it is undefined are
    skipped. Seeded, so the interval is reproducible."""
    import numpy as np

    if n == 0:
        return None
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        v = statistic(rng.integers(0, n, size=n).tolist())
        if v is not None:
            values.append(v)
    if not values:
        return None
    tail = (1 - level) / 2
    lo, hi = np.quantile(np.asarray(values), [tail, 1 - tail])
    return float(lo), float(hi)


def binomial_ci(k: int, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """Clopper-Pearson (exact) interval for a rate of ``k`` in ``n``; None when n is 0."""
    from scipy.stats import beta

    if n == 0:
        return None
    tail = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(tail, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - tail, k + 1, n - k))
    return lo, hi
