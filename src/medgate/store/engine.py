"""Engines for the two supported databases, set so an acknowledged write survives a crash."""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from medgate.config import MedgateConfig
from medgate.errors import ConfigError


def database_url(config: MedgateConfig) -> str:
    """The URL in force: ``store.database_url`` (or MEDGATE_DATABASE_URL), else a SQLite file."""
    url = config.store.database_url
    if url:
        return normalise_url(url)
    path = config.store.sqlite_path or (config.cache_dir / "medgate.db")
    return f"sqlite:///{Path(path).expanduser()}"


def normalise_url(url: str) -> str:
    """Plain ``postgresql://`` URLs get the psycopg 3 driver, the only one medgate installs."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


#: "user:password@" after a slash or at the start: found even where the URL is malformed.
_PASSWORD_IN_URL = re.compile(r"(?P<head>(?:^|/)[^/@:?#\s]*:)(?P<password>[^@/?#\s]*)@")


def redacted_url(url: str) -> str:
    """``url`` with its password shown as ``***``, for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not parseable: mask what looks like user:password@
        return _PASSWORD_IN_URL.sub(r"\g<head>***@", url)


def without_password(text: str, url: str) -> str:
    """``text`` with the password of ``url`` replaced by ``***`` wherever it appears.

    Drivers quote parts of their connection string in some errors; this is applied to every
    message built from a driver's error.
    """
    found = _PASSWORD_IN_URL.search(url)
    secrets = {found.group("password")} if found else set()
    try:
        password = make_url(url).password
    except Exception:
        password = None
    if password:
        secrets.add(str(password))
    secrets.update({unquote(s) for s in secrets})
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def create_store_engine(
    url: str, *, pool_size: int = 5, busy_timeout_s: float = 30.0, read_only: bool = False
) -> Engine:
    """An engine for ``url``; SQLite files are created with their directory.

    On SQLite, ``read_only`` engines start ordinary deferred transactions: in WAL mode they read
    a snapshot without waiting for the write lock that every writer takes up front.
    """
    try:
        parsed = make_url(url)
    except Exception:
        # Neither the URL nor the parser's message (which quotes it) may reach an error or a
        # log: it can carry the password. `from None` keeps it out of the traceback too.
        raise ConfigError(
            f"store: cannot parse database URL {redacted_url(url)!r}: use "
            "'postgresql://user:password@host:port/db' or 'sqlite:///path/to/file.db'"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(url, parsed.database, busy_timeout_s, read_only)
    if backend == "postgresql":
        return create_engine(url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)
    raise ConfigError(f"store: unsupported database {backend!r}; use SQLite or PostgreSQL")


def _set_wal(cursor: Any, timeout_s: float) -> None:
    """Switch to WAL, waiting out other processes doing the same.

    Changing the journal mode needs an exclusive lock, and SQLite can report "database is
    locked" at once instead of calling the busy handler when several processes open a new file
    together; retry until the busy timeout is spent.
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.01
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.25)


def _sqlite_engine(
    url: str, database: str | None, busy_timeout_s: float, read_only: bool
) -> Engine:
    if not database or database == ":memory:":
        raise ConfigError("store: SQLite needs a file path (an in-memory database loses the queue)")
    Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url, connect_args={"timeout": busy_timeout_s, "check_same_thread": False}
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite would defer it).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        _set_wal(cursor, busy_timeout_s)
        # FULL: a commit is on disk before the response says it exists.
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # Writers take the write lock up front: a deferred transaction that reads the audit head
        # and then writes could otherwise fail with SQLITE_BUSY instead of waiting its turn.
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine
