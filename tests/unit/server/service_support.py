"""Helpers shared by the service tests (a module of its own: test files import it by name)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from medgate.config import MedgateConfig


@dataclass
class Keys:
    client: str
    clinician: str
    other_clinician: str
    admin: str

    def auth(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}


def service_config(tmp_path: Path, **server: object) -> MedgateConfig:
    settings: dict[str, object] = {
        "gate_timeout_s": 2.0,
        "rate_per_minute": 6000,
        "rate_burst": 500,
    }
    settings.update(server)
    return MedgateConfig.model_validate(
        {
            "cache_dir": tmp_path,
            "store": {"sqlite_path": tmp_path / "medgate.db", "database_url": None},
            "server": settings,
        }
    )
