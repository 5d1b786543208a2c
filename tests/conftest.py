from __future__ import annotations

import os

import pytest

# Unit tests must never reach a hub or the network for model files.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keep each test's artifacts out of the user's cache, except the assembled model files."""
    monkeypatch.delenv("MEDGATE_CONFIG", raising=False)
    # A test's recordings never reach (or start from) the repository's archived ones.
    monkeypatch.delenv("MEDGATE_RECORDINGS_DIR", raising=False)
    monkeypatch.setattr(
        "medgate.config.REPOSITORY_RECORDINGS", tmp_path_factory.mktemp("no-recordings") / "none"
    )
    # Cases decided by `ask` and `care` are logged; each test gets its own log.
    monkeypatch.setenv("MEDGATE_LOG__PATH", str(tmp_path_factory.mktemp("log") / "cases.db"))
