"""Fixtures for service tests: a SQLite store, one key per role, the app over the real gates
on scripted fake models (service_gate.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from service_gate import ServiceGate, default_gate
from service_support import Keys, service_config

from medgate.server import create_app
from medgate.store import Role, Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.from_url(f"sqlite:///{tmp_path / 'medgate.db'}")
    yield opened
    opened.close()


@pytest.fixture
def keys(store: Store) -> Keys:
    return Keys(
        client=store.create_key("app", Role.CLIENT)[1],
        clinician=store.create_key("dr a", Role.CLINICIAN)[1],
        other_clinician=store.create_key("dr b", Role.CLINICIAN)[1],
        admin=store.create_key("ops", Role.ADMIN)[1],
    )


@pytest.fixture
def gate() -> Iterator[ServiceGate]:
    scripted = default_gate()
    yield scripted
    scripted.release.set()  # let any hanging check finish


@pytest.fixture
def app(tmp_path: Path, store: Store, gate: ServiceGate) -> FastAPI:
    return create_app(gate, config=service_config(tmp_path), store=store)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client
