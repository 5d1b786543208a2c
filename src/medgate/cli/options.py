"""Options and helpers the evaluation commands share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from medgate.cli.core import config_with

OutOpt = Annotated[Path, typer.Option("--out", help="Report folder for JSON, Markdown, PNG.")]
DEFAULT_OUT = Path("docs/results")
#: A folder of CareGuard run logs; unset, the one `medgate eval care` records into by default.
RunsOpt = Annotated[
    Path | None,
    typer.Option(
        "--runs",
        file_okay=False,
        help="Folder of the run logs (e.g. docs/results/careguard_runs_v41); default: "
        "careguard_runs under the cache dir.",
    ),
]


def between_0_and_1(value: float) -> float:
    """A target error rate or 1 - confidence: a share strictly between 0 and 1."""
    if not 0.0 < value < 1.0:
        raise typer.BadParameter(f"{value} is not between 0 and 1")
    return value


EngineOpt = Annotated[
    str,
    typer.Option(
        help="local: record in this process, item after item; ray: spread items over Ray "
        "actors, each with its own model on one thread (pip install 'medgate[ray]')."
    ),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        help="Ray cluster to use (the address `ray start --head` prints, or auto); default: "
        "start a local Ray instance with this machine's cores."
    ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Ray actors recording side by side; default: the CPUs Ray reports, at most the "
        "items to record.",
    ),
]
ApiBaseOpt = Annotated[
    list[str],
    typer.Option(
        "--api-base",
        help="An OpenAI-compatible endpoint serving the openai: answering model; repeat for "
        "one Ray actor per endpoint.",
    ),
]


def engine_from(engine: str, address: str | None, workers: int | None, api_base: list[str]) -> Any:
    """The recording engine the options name (checked before any model is loaded)."""
    from medgate.eval.engines import make_engine

    return make_engine(engine, address, workers, api_base)


def eval_config(model: str | None, k: int | None = None, **hrs: Any) -> Any:
    return config_with(model, max_iterations=k, **hrs)


def command_line() -> str:
    import shlex
    import sys

    args = [a for a in sys.argv[1:]]
    return "medgate " + " ".join(shlex.quote(a) for a in args)
