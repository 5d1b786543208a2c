"""How the command line reports a failure.

Usage mistakes (a missing argument, an unknown command or option) are typer's to report: it
prints the command's usage and exits 2, whichever copy of click it runs on. This module is the
other half: medgate's own errors, printed the same way by every command.
"""

from __future__ import annotations

import typer

from medgate.errors import MedgateError

#: The exit status of a command that could not run: bad input, configuration or prerequisites.
EXIT_ERROR = 2


def fail(error: MedgateError, code: int = EXIT_ERROR) -> typer.Exit:
    """Print ``medgate: error: MESSAGE`` on stderr and return the exit for the caller to raise."""
    typer.echo(f"medgate: error: {error}", err=True)
    return typer.Exit(code)
