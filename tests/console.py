"""Run the installed ``medgate`` console script as a user would, in its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: The console script pip installed beside this interpreter (``.venv/bin/medgate``).
MEDGATE = Path(sysconfig.get_path("scripts")) / "medgate"


def run_medgate(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``medgate ARGS`` from the repository root, on this checkout's code; never raises for a
    non-zero exit, so the caller asserts on the status and both streams."""
    assert MEDGATE.is_file(), f"{MEDGATE} is missing: install medgate (make setup)"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [str(MEDGATE), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def medgate_json(*args: str) -> dict[str, Any]:
    """``medgate ARGS``; it must exit 0 and print JSON."""
    done = run_medgate(*args)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out
