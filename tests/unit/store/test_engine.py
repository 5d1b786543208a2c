"""The database URL's password never reaches an error message, a traceback or a log."""

from __future__ import annotations

import traceback

import pytest

from medgate.errors import ConfigError
from medgate.store import Store, StoreError
from medgate.store.engine import create_store_engine, redacted_url, without_password

SECRET = "s3cret-Pa55"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://medgate:{SECRET}@db.example:notaport/medgate",  # port is not a number
        f"postgresql//medgate:{SECRET}@db.example/medgate",  # no scheme separator
        f"postgresql+psycopg://medgate:{SECRET}@[::1/medgate",  # broken IPv6 host
    ],
)
def test_an_unparseable_url_is_refused_without_its_password(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        create_store_engine(url)
    message = str(info.value)
    assert SECRET not in message
    assert "medgate:***@" in message
    # Nor in the traceback a crash would print: the parser's own error is not chained.
    printed = "".join(traceback.format_exception(info.value))
    assert SECRET not in printed


def test_an_unreachable_server_is_reported_without_the_password() -> None:
    url = f"postgresql://medgate:{SECRET}@127.0.0.1:1/none"
    with pytest.raises(StoreError) as info:
        Store.from_url(url)
    printed = "".join(traceback.format_exception(info.value))
    assert SECRET not in printed
    assert "postgresql+psycopg://medgate:***@127.0.0.1:1/none" in str(info.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql://u:{SECRET}@h:5432/db", "postgresql://u:***@h:5432/db"),
        (f"postgresql://u:{SECRET}@h:port/db", "postgresql://u:***@h:port/db"),
        ("sqlite:////tmp/medgate.db", "sqlite:////tmp/medgate.db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
    ],
)
def test_redacted_url(url: str, shown: str) -> None:
    assert redacted_url(url) == shown


def test_a_driver_message_quoting_the_password_is_cleaned() -> None:
    url = "postgresql://medgate:p%40ss%2Fword@h/db"  # percent-encoded "p@ss/word"
    message = 'invalid dsn: "password=p@ss/word host=h" and again p%40ss%2Fword'
    cleaned = without_password(message, url)
    assert "p@ss/word" not in cleaned and "p%40ss%2Fword" not in cleaned
    assert cleaned == 'invalid dsn: "password=*** host=h" and again ***'
