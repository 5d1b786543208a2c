"""Thresholds fitted for one answering model, as the HRS gate applies them.

``medgate calibrate`` (:mod:`medgate.eval.calibrate`) chooses the gate's thresholds on a
training split and saves them here, one file per model under the cache directory; the HRS gate's
builder (:func:`medgate.hrs.build.build_hrs_gate`) applies them wherever the configuration did
not set a threshold itself, and every threshold's origin goes into the verdict's HRS report.
The artifact lives with the gate that reads it, not with the evaluation that writes it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import Field

from medgate.config import HRSConfig, MedgateConfig, SettingOrigin, overlay
from medgate.errors import ConfigError
from medgate.records import Record


class Choice(Record):
    method: str
    gate_e: float
    gate_p: float
    lam: float | None = None
    n: int
    released: int
    errors: int
    error_rate: float | None
    p_value: float | None = None


class CalibrationArtifact(Record):
    """What ``medgate calibrate`` saves and :func:`medgate.hrs.build.build_hrs_gate` applies."""

    model_fingerprint: str
    dataset: str
    fitted_on: str = Field(description="Which training items (split seed, count, id digest).")
    alpha: float
    delta: float
    method: str
    gate_e: float
    gate_p: float
    tau_e: float
    tau_p: float
    rarity_artifact: str | None
    choices: list[Choice]
    fitted_at: str


def calibration_path(config: MedgateConfig, fingerprint: str) -> Path:
    """Where ``medgate ask`` looks for thresholds fitted for this model."""
    return config.cache_dir / "calibration" / f"{fingerprint[:16]}.json"


def save_artifact(artifact: CalibrationArtifact, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(artifact.model_dump_json(indent=2))
    tmp.replace(path)


def load_artifact(path: Path, fingerprint: str) -> CalibrationArtifact | None:
    if not path.is_file():
        return None
    try:
        art = CalibrationArtifact.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"calibration artifact {path} is unreadable: {exc}") from exc
    if art.model_fingerprint != fingerprint:
        raise ConfigError(
            f"calibration artifact {path} was fitted for another model; rerun `medgate calibrate`"
        )
    return art


def artifact_origin(path: Path) -> SettingOrigin:
    """Where settings taken from the artifact at ``path`` came from: its name and sha256."""
    return SettingOrigin(
        source="artifact",
        artifact=f"calibration/{path.name}",
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )


def apply_artifact(
    hrs: HRSConfig,
    art: CalibrationArtifact,
    origin: SettingOrigin,
    origins: dict[str, SettingOrigin] | None = None,
) -> tuple[HRSConfig, dict[str, SettingOrigin]]:
    """Calibrated thresholds wherever the configuration did not set one explicitly, and where
    every HRS setting came from (``origins``: those of an earlier artifact, which this wins
    over)."""
    fitted = {name: getattr(art, name) for name in ("gate_e", "gate_p", "tau_e", "tau_p")}
    return overlay(hrs, fitted, origin, origins)
