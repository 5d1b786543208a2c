"""The llama.cpp engine's sampling draw is Generator.choice's, computed once per shared row."""

from __future__ import annotations

import numpy as np
import pytest

from medgate.backends.llamacpp_engine import log_softmax, sampling_cdf
from medgate.errors import ModelError


def _choice_draw(pick: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    # The draw the engine made before: softmax(pick / T) handed to Generator.choice.
    z = pick / temperature
    p = np.exp(z - z.max())
    return int(rng.choice(pick.size, p=p / p.sum()))


@pytest.mark.parametrize("temperature", [0.3, 0.7, 1.0])
def test_a_draw_against_the_cumulative_distribution_picks_what_choice_picks(
    temperature: float,
) -> None:
    source = np.random.default_rng(11)
    for row in range(40):
        logits = (source.standard_normal(5000) * 3).astype(np.float32)
        logits[source.integers(5000, size=3)] += 12  # a few likely tokens, as in real rows
        pick = log_softmax(logits)
        cdf = sampling_cdf(pick, temperature)
        before, after = np.random.default_rng(row), np.random.default_rng(row)
        for _ in range(25):
            expected = _choice_draw(pick, temperature, before)
            assert int(cdf.searchsorted(after.random(), side="right")) == expected


def test_a_forbidden_token_is_never_drawn() -> None:
    pick = log_softmax(np.array([5.0, 4.0, 1.0], dtype=np.float32))
    pick[0] = -np.inf
    cdf = sampling_cdf(pick, 0.3)
    rng = np.random.default_rng(0)
    assert {int(cdf.searchsorted(rng.random(), side="right")) for _ in range(200)} <= {1, 2}


def test_a_distribution_that_is_not_finite_is_an_error_not_a_token() -> None:
    with pytest.raises(ModelError, match="not finite"):
        sampling_cdf(np.array([np.nan, 0.0, -1.0]), 0.3)
