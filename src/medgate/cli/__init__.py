"""The ``medgate`` command line.

Each room adds its commands through a ``register(app)`` function in its own module here, and
imports heavy optional dependencies inside the commands so that ``medgate --help`` always works.
"""

from __future__ import annotations

import sys

import typer

from medgate.cli import careguard, caselog, claims, core, eval, server
from medgate.errors import MedgateError

app = typer.Typer(
    name="medgate",
    help="A safety gate for medical LLMs: release, refine, ask for context, escalate or block.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

for module in (core, claims, careguard, eval, server, caselog):
    module.register(app)


def main() -> None:
    """Console entry point: medgate's own errors become one line on stderr and exit code 2."""
    try:
        # Without standalone mode click returns a command's exit code instead of exiting.
        code = app(standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except MedgateError as exc:
        typer.echo(f"medgate: error: {exc}", err=True)
        sys.exit(2)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("medgate: aborted", err=True)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:  # click usage errors and the like
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise
