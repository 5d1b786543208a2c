"""Threshold choice on training baselines and the artifact `medgate ask` applies."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from medgate.backends.fake import FakeModel
from medgate.backends.pool import ModelPool
from medgate.config import HRSConfig, SettingOrigin, load_config
from medgate.eval.calibrate import (
    CalibrationArtifact,
    Scored,
    apply_artifact,
    binom_p_value,
    calibration_path,
    choose_conformal,
    choose_grid,
    evaluate,
    save_artifact,
)
from medgate.pipeline import build_hrs_gate


def s(e: float, p: float, ok: bool) -> Scored:
    return Scored(entropy=e, perplexity=p, correct=ok)


def test_evaluate_counts_released_and_errors() -> None:
    items = [s(0.1, 0.1, True), s(0.3, 0.1, False), s(0.6, 0.1, True), s(0.1, 0.5, False)]
    # Gate 0.5/0.4 releases the first two; one of them is wrong.
    assert evaluate(items, 0.5, 0.4) == (2, 1)
    assert evaluate(items, 0.0, 0.0) == (0, 0)


def test_binomial_p_value_by_hand() -> None:
    # P(Bin(2, 0.5) <= 0) = 0.25; P(Bin(3, 0.3) <= 1) = 0.7^3 + 3 * 0.3 * 0.7^2 = 0.784.
    assert binom_p_value(0, 2, 0.5) == pytest.approx(0.25)
    assert binom_p_value(1, 3, 0.3) == pytest.approx(0.784)
    assert binom_p_value(0, 0, 0.3) == 1.0


def test_grid_picks_most_releases_within_alpha() -> None:
    # 20 confident right answers at entropy 0.1; 10 wrong ones at entropy 0.85.
    items = [s(0.1, 0.1, True)] * 20 + [s(0.85, 0.1, False)] * 10
    grid = [(0.80, 0.40), (0.95, 0.30), (0.98, 0.30)]
    c = choose_grid(items, 0.2, grid)
    # 0.80 releases 20 with 0 errors; 0.95/0.98 release 30 with 10/30 = 33% > 20%.
    assert (c.gate_e, c.released, c.errors) == (0.80, 20, 0)
    c = choose_grid(items, 0.4, grid)
    assert c.released == 30 and c.error_rate == pytest.approx(1 / 3)


def test_conformal_certifies_with_margin_and_fails_closed() -> None:
    items = [s(0.1, 0.1, True)] * 40 + [s(0.45, 0.1, False)] * 10
    c = choose_conformal(items, 0.1, 0.1)
    # lambda 0.3..0.9 (gate_e 0.15..0.45) releases the 40 right answers only:
    # p = 0.9^40 = 0.0148 <= 0.1/25 fails, so nothing at 0.1 is certified ...
    assert c.released == 0 and c.gate_e == 0.0
    # ... while at alpha 0.3, p = 0.7^40 ~ 6e-7 certifies 40 releases; adding the 10 wrong
    # ones (error 0.2 of 50) has p = P(Bin(50, 0.3) <= 10) ~ 0.079 > 0.004: not certified.
    c = choose_conformal(items, 0.3, 0.1)
    assert c.released == 40 and c.errors == 0 and c.gate_e < 0.45


def _artifact(fingerprint: str, e: float, p: float) -> CalibrationArtifact:
    return CalibrationArtifact(
        model_fingerprint=fingerprint,
        dataset="toy",
        fitted_on="toy",
        alpha=0.3,
        delta=0.1,
        method="conformal",
        gate_e=e,
        gate_p=p,
        tau_e=e,
        tau_p=p,
        rarity_artifact=None,
        choices=[],
        fitted_at="now",
    )


ORIGIN = SettingOrigin(source="artifact", artifact="calibration/x.json", sha256="ab" * 32)


def test_artifact_applies_unless_explicitly_configured() -> None:
    art = _artifact("fake:m", 0.3, 0.2)
    applied, origins = apply_artifact(HRSConfig(), art, ORIGIN)
    assert (applied.gate_e, applied.gate_p, applied.tau_e, applied.tau_p) == (0.3, 0.2, 0.3, 0.2)
    assert origins["gate_e"] == ORIGIN and origins["min_label_mass"].source == "default"
    explicit, origins = apply_artifact(HRSConfig(tau_e=0.8), art, ORIGIN)
    assert explicit.tau_e == 0.8 and explicit.gate_e == 0.3
    assert origins["tau_e"].source == "configured"


def test_an_explicit_threshold_equal_to_the_default_is_not_overridden() -> None:
    default = HRSConfig().tau_e
    chosen, origins = apply_artifact(HRSConfig(tau_e=default), _artifact("m", 0.3, 0.2), ORIGIN)
    assert chosen.tau_e == default and origins["tau_e"].source == "configured"
    assert chosen.tau_p == 0.2 and origins["tau_p"] == ORIGIN


def _fake_pool(monkeypatch: pytest.MonkeyPatch) -> FakeModel:
    fake = FakeModel("fake:m")
    monkeypatch.setattr(ModelPool, "get", lambda self, spec, role=None: fake)
    return fake


def test_build_hrs_gate_picks_up_the_artifact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(cache_dir=tmp_path, model="fake:m")
    fake = _fake_pool(monkeypatch)
    assert build_hrs_gate(config).config.gate_e == 0.5
    path = calibration_path(config, fake.fingerprint)
    save_artifact(_artifact(fake.fingerprint, 0.25, 0.2), path)
    gate = build_hrs_gate(config)
    assert (gate.config.gate_e, gate.config.tau_e, gate.config.tau_p) == (0.25, 0.25, 0.2)
    origin = gate.thresholds["gate_e"].origin
    assert origin.source == "artifact" and origin.artifact == f"calibration/{path.name}"
    assert origin.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("where", ["env", "file", "flag"])
def test_thresholds_set_anywhere_beat_the_artifact_even_at_their_default(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = HRSConfig().gate_e
    flags: dict[str, object] = {"cache_dir": tmp_path, "model": "fake:m"}
    if where == "env":
        monkeypatch.setenv("MEDGATE_HRS__GATE_E", str(default))
    elif where == "file":
        toml = tmp_path / "medgate.toml"
        toml.write_text(f"[hrs]\ngate_e = {default}\n")
        monkeypatch.setenv("MEDGATE_CONFIG", str(toml))
    else:
        flags["hrs"] = {"gate_e": default}
    config = load_config(**flags)
    fake = _fake_pool(monkeypatch)
    save_artifact(
        _artifact(fake.fingerprint, 0.25, 0.2), calibration_path(config, fake.fingerprint)
    )
    gate = build_hrs_gate(config)
    assert gate.config.gate_e == default and gate.config.gate_p == 0.2
    assert gate.thresholds["gate_e"].origin.source == "configured"
    assert gate.thresholds["gate_p"].origin.source == "artifact"
