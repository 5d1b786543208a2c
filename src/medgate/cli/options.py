"""Options and helpers the evaluation commands share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from medgate.cli.core import config_with

OutOpt = Annotated[Path, typer.Option("--out", help="Report folder for JSON, Markdown, PNG.")]
DEFAULT_OUT = Path("docs/results")


def eval_config(model: str | None, k: int | None = None, **hrs: Any) -> Any:
    return config_with(model, max_iterations=k, **hrs)


def command_line() -> str:
    import shlex
    import sys

    args = [a for a in sys.argv[1:]]
    return "medgate " + " ".join(shlex.quote(a) for a in args)
