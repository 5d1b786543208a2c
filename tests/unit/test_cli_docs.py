"""docs/cli.md is generated from the commands' help and must match the code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_cli_reference_is_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_cli_docs.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_every_command_answers_help() -> None:
    from typer.testing import CliRunner

    from medgate.cli import app

    text = (ROOT / "docs" / "cli.md").read_text()
    commands = [
        line[len("## `medgate ") : -1] for line in text.splitlines() if line.startswith("## `")
    ]
    assert "ask" in commands
    runner = CliRunner()
    for command in commands:
        result = runner.invoke(app, [*command.split(), "--help"])
        assert result.exit_code == 0, (command, result.output)
        assert "Usage" in result.output
