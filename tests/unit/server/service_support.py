"""Pieces shared by the service tests (a module of its own: test files import it by name)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI

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
        # Room for the first case to load the request-safety encoder on a loaded machine: a
        # decision past the timeout escalates, which is right for the service and wrong for a
        # test of what a released answer shows. Tests of the timeout set their own.
        "gate_timeout_s": 30.0,
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_server(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free port of 127.0.0.1 in a thread; yields the base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
