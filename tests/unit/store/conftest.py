"""The store fixture runs every store test on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from throwaway_postgres import find_bin_dir, throwaway_postgres

from medgate.store import Store

_counter = itertools.count()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip(
            "PostgreSQL binaries not found (install Debian's 'postgresql' package: "
            "scripts/ci-apt-packages.txt)"
        )
    with throwaway_postgres(bin_dir) as url:
        yield url


def _fresh_database(server_url: str) -> str:
    """A new database per test, so tests never see each other's rows."""
    name = f"medgate_test_{next(_counter)}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return server_url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'medgate.db'}"
    server: str = request.getfixturevalue("postgres_server")
    return _fresh_database(server)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = Store.from_url(store_url, pool_size=10)
    yield opened
    opened.close()
