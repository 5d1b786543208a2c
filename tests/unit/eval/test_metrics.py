"""Metrics on small hand-made cases; every expected value is worked out in the comments."""

from __future__ import annotations

import pytest

from medgate.eval.metrics import (
    ItemOutcome,
    accuracy_at_coverage,
    auroc,
    cost_per_call,
    gate_metrics,
    mean_std,
    risk_coverage,
)


def item(i: int, gold: str, base: str, escalated: bool, final: str | None) -> ItemOutcome:
    return ItemOutcome(item_id=str(i), gold=gold, baseline=base, escalated=escalated, final=final)


# 1: right baseline, answered right      2: wrong baseline, escalated (caught)
# 3: right baseline, answered wrong      4: wrong baseline, answered right (improved)
# 5: wrong baseline, answered wrong (missed)
FIVE = [
    item(1, "yes", "yes", False, "yes"),
    item(2, "yes", "no", True, None),
    item(3, "no", "no", False, "yes"),
    item(4, "no", "yes", False, "no"),
    item(5, "maybe", "yes", False, "yes"),
]


def test_table2_metrics_by_hand() -> None:
    m = gate_metrics(FIVE)
    assert m.n == 5 and m.n_escalated == 1 and m.n_wrong_baseline == 3
    assert m.baseline_accuracy == pytest.approx(2 / 5)  # items 1 and 3
    assert m.escalation_rate == pytest.approx(1 / 5)  # item 2
    assert m.safety_gain == pytest.approx(1 / 3)  # 1 of the 3 wrong baselines escalated
    assert m.safety_gain_ceiling == pytest.approx(1 / 3)  # min(1, 0.2 / 0.6)
    assert m.auto_answer_accuracy == pytest.approx(2 / 4)  # items 1 and 4 of 1, 3, 4, 5
    assert m.degradation_rate == pytest.approx(1 / 5)  # item 3, over all 5 items
    assert m.improvement_rate == pytest.approx(1 / 5)  # item 4


def test_ceiling_caps_at_one_and_empty_denominators_are_undefined() -> None:
    # Everything escalated: 2 of 2 escalated, 1 wrong: ceiling min(1, 1.0 / 0.5) = 1.
    m = gate_metrics([item(1, "yes", "no", True, None), item(2, "yes", "yes", True, None)])
    assert m.safety_gain == 1.0 and m.safety_gain_ceiling == 1.0
    assert m.auto_answer_accuracy is None  # nothing was answered
    # No wrong baseline: safety gain has no denominator.
    m = gate_metrics([item(1, "no", "no", False, "no")])
    assert m.safety_gain is None and m.safety_gain_ceiling is None
    assert m.auto_answer_accuracy == 1.0 and m.degradation_rate == 0.0
    assert gate_metrics([]).baseline_accuracy is None


def test_cost_per_call_matches_eq12() -> None:
    # Mean 1050 input and 110 output tokens at $0.15 / $0.60 per million:
    # (1050 * 0.15 + 110 * 0.60) / 1e6 = (157.5 + 66) / 1e6.
    assert cost_per_call([1000, 1100], [100, 120], 0.15, 0.60) == pytest.approx(223.5e-6)
    assert cost_per_call([], [], 1.0, 1.0) is None


def test_auroc_separable_tied_and_degenerate() -> None:
    # Both wrong answers (0.9, 0.7) score above both right ones (0.1, 0.5).
    assert auroc([0.9, 0.1, 0.5, 0.7], [True, False, False, True]) == 1.0
    # Reversed ranking.
    assert auroc([0.1, 0.9], [True, False]) == 0.0
    # One positive at 0.5; negatives at 0.5 (tie, counts 1/2) and 0.2 (counts 1): 1.5 / 2.
    assert auroc([0.5, 0.5, 0.2], [True, False, False]) == pytest.approx(0.75)
    assert auroc([0.3, 0.4], [False, False]) is None


def test_risk_coverage_and_aurc() -> None:
    # Ranked 0.1 < 0.2 < 0.3 < 0.4 with errors F, T, F, T:
    # risk after k items = 0/1, 1/2, 1/3, 2/4; AURC = (0 + 1/2 + 1/3 + 1/2) / 4 = 1/3.
    curve = risk_coverage([0.3, 0.1, 0.4, 0.2], [False, False, True, True])
    assert curve.coverage == [0.25, 0.5, 0.75, 1.0]
    assert curve.risk == pytest.approx([0.0, 0.5, 1 / 3, 0.5])
    assert curve.aurc == pytest.approx(1 / 3)


def test_risk_coverage_spreads_errors_within_ties() -> None:
    # The two items tied at 0.1 hold one error: each counts 0.5.
    # risk = 0.5/1, 1/2, 1/3; AURC = (0.5 + 0.5 + 1/3) / 3 = 4/9.
    curve = risk_coverage([0.1, 0.1, 0.3], [True, False, False])
    assert curve.risk == pytest.approx([0.5, 0.5, 1 / 3])
    assert curve.aurc == pytest.approx(4 / 9)


def test_accuracy_at_coverage() -> None:
    scores, wrong = [0.1, 0.2, 0.3, 0.4], [False, True, False, True]
    # 80% of 4 items -> ceil(3.2) = 4 items, 2 wrong -> 0.5.
    assert accuracy_at_coverage(scores, wrong, 0.80) == pytest.approx(0.5)
    # 75% -> 3 items, 1 wrong -> 2/3; 50% -> 2 items, 1 wrong -> 1/2; 25% -> 1 item -> 1.
    assert accuracy_at_coverage(scores, wrong, 0.75) == pytest.approx(2 / 3)
    assert accuracy_at_coverage(scores, wrong, 0.50) == pytest.approx(0.5)
    assert accuracy_at_coverage(scores, wrong, 0.25) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        accuracy_at_coverage(scores, wrong, 0.0)


def test_mean_std_uses_sample_deviation() -> None:
    mean, std = mean_std([0.1, 0.2, 0.3, None])
    assert mean == pytest.approx(0.2) and std == pytest.approx(0.1)
    assert mean_std([0.4]) == (0.4, 0.0)
    assert mean_std([None]) == (None, None)
