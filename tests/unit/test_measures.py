"""Each formula against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from medgate.hrs import measures


def test_entropy_of_even_binary_is_one() -> None:
    assert measures.normalised_entropy({"yes": 0.5, "no": 0.5}) == pytest.approx(1.0)


def test_entropy_of_certain_answer_is_zero() -> None:
    assert measures.normalised_entropy({"yes": 1.0, "no": 0.0}) == pytest.approx(0.0)


def test_binary_entropy_matches_eq1_in_bits() -> None:
    # H(0.9, 0.1) = -(0.9 log2 0.9 + 0.1 log2 0.1) = 0.4689955935892812
    assert measures.normalised_entropy({"yes": 0.9, "no": 0.1}) == pytest.approx(0.468995594)


def test_three_way_entropy_is_divided_by_log3() -> None:
    assert measures.normalised_entropy(
        {"yes": 1 / 3, "no": 1 / 3, "maybe": 1 / 3}
    ) == pytest.approx(1.0)
    # (0.5, 0.5, 0): ln 2 / ln 3 = 0.6309297535714574
    assert measures.normalised_entropy({"yes": 0.5, "no": 0.5, "maybe": 0.0}) == pytest.approx(
        0.630929754
    )


def test_perplexity_of_certain_tokens_is_zero() -> None:
    assert measures.perplexity_risk([0.0, 0.0, 0.0]) == pytest.approx(0.0)


def test_perplexity_of_known_logprobs() -> None:
    # Every token has p = 0.5: PPL = 2, risk = 1 - 1/2 = 0.5.
    assert measures.perplexity_risk([math.log(0.5)] * 4) == pytest.approx(0.5)
    # Mean log p = (ln 0.25 + ln 1) / 2 = ln 0.5 -> PPL 2 again.
    assert measures.perplexity_risk([math.log(0.25), 0.0]) == pytest.approx(0.5)


def test_perplexity_needs_tokens() -> None:
    with pytest.raises(ValueError):
        measures.perplexity_risk([])


def test_js_of_identical_distributions_is_zero() -> None:
    p = {"yes": 0.7, "no": 0.2, "maybe": 0.1}
    assert measures.js_divergence(p, dict(p)) == pytest.approx(0.0)


def test_js_of_disjoint_distributions_is_one_bit() -> None:
    assert measures.js_divergence(
        {"yes": 1.0, "no": 0.0}, {"yes": 0.0, "no": 1.0}
    ) == pytest.approx(1.0)


def test_js_worked_example() -> None:
    # P=(1,0), Q=(0.5,0.5): M=(0.75,0.25).
    # KL(P||M) = log2(1/0.75) = 0.415037; KL(Q||M) = 0.5 log2(0.5/0.75) + 0.5 log2(0.5/0.25)
    #          = 0.5(-0.584963) + 0.5(1) = 0.207519; JS = (0.415037 + 0.207519)/2 = 0.311278
    assert measures.js_divergence(
        {"yes": 1.0, "no": 0.0}, {"yes": 0.5, "no": 0.5}
    ) == pytest.approx(0.311278, abs=1e-6)


def test_mean_pairwise_js_averages_three_pairs() -> None:
    a, b = {"yes": 1.0, "no": 0.0}, {"yes": 0.0, "no": 1.0}
    # Pairs (a,a)=0, (a,b)=1, (a,b)=1 -> 2/3.
    assert measures.mean_pairwise_js([a, a, b]) == pytest.approx(2 / 3)


def test_cosine_distance() -> None:
    assert measures.cosine_distance([1.0, 0.0], [2.0, 0.0]) == pytest.approx(0.0)
    assert measures.cosine_distance([1.0, 0.0], [0.0, 3.0]) == pytest.approx(1.0)
    # 45 degrees: 1 - cos(pi/4) = 0.2928932
    assert measures.cosine_distance([1.0, 0.0], [1.0, 1.0]) == pytest.approx(0.2928932)
    # Opposite directions are clipped to the maximum risk, 1.
    assert measures.cosine_distance([1.0, 0.0], [-1.0, 0.0]) == pytest.approx(1.0)


def test_cosine_distance_rejects_bad_vectors() -> None:
    with pytest.raises(ValueError):
        measures.cosine_distance([1.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        measures.cosine_distance([0.0, 0.0], [1.0, 2.0])


def test_length_risk() -> None:
    assert measures.length_risk(25, 50) == pytest.approx(0.5)
    assert measures.length_risk(80, 50) == pytest.approx(1.0)
    assert measures.length_risk(0, 50) == pytest.approx(0.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: measures.perplexity_risk([-0.1, float("nan")]),
        lambda: measures.perplexity_risk([-0.1, float("inf")]),  # once read as certainty: 0 risk
        lambda: measures.normalised_entropy({"yes": float("nan"), "no": 0.5}),
        lambda: measures.js_divergence({"yes": float("nan"), "no": 0.5}, {"yes": 0.5, "no": 0.5}),
        lambda: measures.cosine_distance([1.0, float("nan")], [1.0, 0.0]),
    ],
)
def test_non_finite_inputs_are_refused_not_clipped_to_no_risk(call: object) -> None:
    with pytest.raises(ValueError, match="not a finite number"):
        call()  # type: ignore[operator]
