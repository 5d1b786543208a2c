"""The installed ``medgate`` script, run as a newcomer would: usage mistakes print a short usage
message and exit 2, never a traceback, whichever copy of click typer runs on."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest

from medgate.cli import commands
from tests.console import run_medgate

#: A usage message is the usage line, the pointer to --help and the error: a few lines.
MAX_USAGE_LINES = 8


@pytest.mark.parametrize(
    ("args", "usage", "error"),
    [
        ((), "Usage: medgate [OPTIONS] COMMAND", "Missing command"),
        (("ask",), "Usage: medgate ask [OPTIONS]", "Missing argument"),
        (("care",), "Usage: medgate care [OPTIONS]", "Missing argument"),
        (("nosuch",), "Usage: medgate [OPTIONS] COMMAND", "No such command 'nosuch'"),
        (("eval", "hrs", "--nosuch"), "Usage: medgate eval hrs [OPTIONS]", "No such option"),
        (("keys",), "Usage: medgate keys [OPTIONS] COMMAND", "Missing command"),
        (("keys", "create", "--name", "x"), "Usage: medgate keys create", "Missing option"),
        (("eval", "hrs", "--limit", "-3"), "Usage: medgate eval hrs [OPTIONS]", "'--limit'"),
        (("eval", "care", "--limit", "0"), "Usage: medgate eval care [OPTIONS]", "'--limit'"),
        (
            ("calibrate", "--alpha", "2"),
            "Usage: medgate calibrate [OPTIONS]",
            "not between 0 and 1",
        ),
    ],
    ids=[
        "no-arguments",
        "missing-argument",
        "care-missing-argument",
        "unknown-command",
        "unknown-option",
        "group-without-command",
        "missing-option",
        "negative-limit",
        "zero-limit",
        "alpha-out-of-range",
    ],
)
def test_usage_mistake_prints_usage_and_exits_2(
    args: tuple[str, ...], usage: str, error: str
) -> None:
    done = run_medgate(*args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert usage in done.stderr
    assert error in done.stderr
    assert len(done.stderr.splitlines()) <= MAX_USAGE_LINES, done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("ask", ""), "medgate: error: the question is empty\n"),
        (
            ("keys", "create", "--name", "x", "--role", "root"),
            "medgate: error: unknown role 'root'; use client, clinician or admin\n",
        ),
        (
            ("eval", "hrs", "--address", "auto"),
            "medgate: error: --address, --workers and --api-base need --engine ray\n",
        ),
        (
            ("serve", "--port", "-1"),
            "medgate: error: invalid setting server.port: Input should be greater than or equal "
            "to 1\n",
        ),
        (
            ("eval", "care", "--max-refinements", "-1", "--ids", "pq-general-01"),
            "medgate: error: invalid setting careguard.max_refinements: Input should be greater "
            "than or equal to 0\n",
        ),
        (
            ("eval", "hrs", "--dataset", "nope"),
            "medgate: error: unknown dataset 'nope'; known: bioasq, pubmedqa-a, pubmedqa-l, or "
            "jsonl:PATH[::yes,no]\n",
        ),
        (
            ("eval", "care", "--ids", "pq-general-01, nosuch", "--runs", "/nonexistent/runs"),
            "medgate: error: no request 'nosuch' in patient-questions (all)\n",
        ),
        (
            ("eval", "care-unlabelled", "--runs", "/nonexistent/runs"),
            "medgate: error: no CareGuard runs at /nonexistent/runs: record some with medgate "
            "eval care, or name a folder of run logs with --runs\n",
        ),
    ],
    ids=[
        "raised-by-a-command",
        "caught-by-a-command",
        "engine-option-without-ray",
        "invalid-setting",
        "invalid-setting-override",
        "unknown-dataset",
        "unknown-request-id",
        "missing-runs-folder",
    ],
)
def test_medgate_error_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    done = run_medgate(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr == message


def test_a_file_that_cannot_be_written_is_one_line_and_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    done = run_medgate("eval", "care-report", "--runs", str(tmp_path), "--out", f"{blocker}/out")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"medgate: error: cannot use {blocker}")
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_version_prints_the_installed_version() -> None:
    done = run_medgate("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"medgate {version('medgate')}\n"
    assert done.stderr == ""


def test_commands_cover_every_group_and_subcommand() -> None:
    paths = [path for path, _ in commands()]
    assert paths[0] == "medgate"
    for expected in ("medgate ask", "medgate eval", "medgate eval hrs", "medgate keys create"):
        assert expected in paths
    assert len(paths) == len(set(paths))


@pytest.mark.parametrize("path", [path for path, _ in commands()])
def test_every_command_answers_help(path: str) -> None:
    done = run_medgate(*path.split()[1:], "--help")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert f"Usage: {path} " in done.stdout
