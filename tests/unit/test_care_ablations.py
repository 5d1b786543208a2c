"""A named configuration of ``medgate eval care`` changes only what it names."""

from __future__ import annotations

import pytest

from medgate.config import load_config
from medgate.errors import ConfigError
from medgate.eval.care_run import ABLATIONS, ablated


def test_a_section_setting_the_user_chose_survives_the_ablation() -> None:
    config = load_config(
        careguard={"request_safety": {"threshold": 0.5}, "trim": {"threshold": 0.3}}
    )
    screened = ablated(config, "request_reply_screen").careguard
    assert screened.request_safety.reply_classifier == "request"
    assert screened.request_safety.threshold == 0.5
    trimmed = ablated(config, "with_trimming").careguard.trim
    assert (trimmed.enabled, trimmed.opening_samples, trimmed.threshold) == (True, 0, 0.3)


@pytest.mark.parametrize("name", sorted(ABLATIONS))
def test_every_ablation_sets_what_it_names_on_the_default_configuration(name: str) -> None:
    careguard = ablated(load_config(), name).careguard
    for key, value in ABLATIONS[name].items():
        if isinstance(value, dict):
            section = getattr(careguard, key)
            assert {k: getattr(section, k) for k in value} == value
        else:
            assert getattr(careguard, key) == value


def test_an_ablation_that_conflicts_with_a_user_setting_is_a_clear_error() -> None:
    config = load_config(careguard={"trim": {"opening_samples": 3}})
    with pytest.raises(ConfigError, match="no_trimming"):
        ablated(config, "no_trimming")


def test_an_unknown_configuration_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="request_reply_screen"):
        ablated(load_config(), "no_such_configuration")
