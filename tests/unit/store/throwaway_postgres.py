"""Start a throwaway PostgreSQL server for tests: initdb in a temp dir, a free port on 127.0.0.1.

Debian's `postgresql` package provides the binaries (under /usr/lib/postgresql/*/bin). PostgreSQL
refuses to run as root, so as root the server runs as the `postgres` user through runuser.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def find_bin_dir() -> Path | None:
    """The newest PostgreSQL bin directory with initdb and pg_ctl, if installed."""
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
    )
    for candidate in reversed(candidates):
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path and shutil.which("pg_ctl") else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def throwaway_postgres(bin_dir: Path) -> Iterator[str]:
    """Yield a SQLAlchemy URL for a fresh server; the server and its files go afterwards."""
    as_root = os.geteuid() == 0
    prefix = ["runuser", "-u", "postgres", "--"] if as_root else []
    root = Path(tempfile.mkdtemp(prefix="medgate-pg-"))
    data, sockets = root / "data", root / "sockets"
    sockets.mkdir()
    if as_root:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
        root.chmod(0o700)
    port = _free_port()

    def run(*args: str) -> None:
        subprocess.run(
            [*prefix, *args], check=True, capture_output=True, text=True, timeout=120, cwd=root
        )

    run(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
    run(
        str(bin_dir / "pg_ctl"),
        "-D",
        str(data),
        "-l",
        str(root / "server.log"),
        "-w",
        "-t",
        "60",
        "-o",
        f"-p {port} -h 127.0.0.1 -k {sockets} -c fsync=off -c max_connections=100",
        "start",
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
            cwd=root,
        )
        shutil.rmtree(root, ignore_errors=True)
