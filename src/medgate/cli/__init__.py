"""The ``medgate`` command line.

Each room adds its commands through a ``register(app)`` function in its own module here, and
imports heavy optional dependencies inside the commands so that ``medgate --help`` always works.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
import typer.main

from medgate import __version__
from medgate.cli import careguard, caselog, claims, core, eval, request_safety, server
from medgate.cli.failures import fail
from medgate.errors import InputError, MedgateError

app = typer.Typer(
    name="medgate",
    help="A safety gate for medical LLMs: release, refine, ask for context, escalate or block.",
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _print_version(requested: bool) -> None:
    if requested:
        typer.echo(f"medgate {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    # Only the eager --version option lives here; every command has its own.
    pass


for module in (core, claims, careguard, request_safety, eval, server, caselog):
    module.register(app)


def commands() -> list[tuple[str, Any]]:
    """``medgate`` and every visible command and group under it, each group followed by its
    commands, as (command line, click command): what the CLI reference documents and the tests
    call with ``--help``."""
    return _walk("medgate", typer.main.get_command(app))


def _walk(path: str, cmd: Any) -> list[tuple[str, Any]]:
    found = [(path, cmd)]
    # typer carries its own copy of click, so a group is recognised by what it can do.
    if hasattr(cmd, "list_commands"):
        ctx = cmd.context_class(cmd)
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                found += _walk(f"{path} {name}", sub)
    return found


def main() -> None:
    """Console entry point.

    typer runs in standalone mode, so it prints usage errors (with the command's usage) and
    exits 2 itself; medgate's own errors reach here and become one line on stderr and exit 2, and
    so does a file or folder a command could not read or write (a missing parent folder, no
    permission, a full disk), which the user can mend without reading a traceback.
    """
    try:
        app()
    except MedgateError as exc:
        sys.exit(fail(exc).exit_code)
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        sys.exit(fail(InputError(f"cannot use{where}: {exc.strerror or exc}")).exit_code)
