"""``medgate log list|show|path``: the local case log that `ask` and `care` write."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from medgate.case_record import CaseRecord


def register(app: typer.Typer) -> None:
    logs = typer.Typer(
        help="Read the local case log that `ask` and `care` write.", no_args_is_help=True
    )
    app.add_typer(logs, name="log")

    @logs.command("list")
    def list_cases(
        limit: Annotated[int, typer.Option(min=1, max=10_000, help="How many records.")] = 20,
        status: Annotated[
            str | None, typer.Option(help="Only cases with this status (e.g. escalated).")
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print as JSON lines.")] = False,
    ) -> None:
        """The newest cases first: id, time, entry point, profile, status, question."""
        from medgate.caselog import CaseLog
        from medgate.cli.core import config_with
        from medgate.errors import InputError
        from medgate.records import Status

        try:
            wanted = Status(status) if status is not None else None
        except ValueError:
            known = ", ".join(s.value for s in Status)
            raise InputError(f"unknown status {status!r}; known: {known}") from None
        for summary in CaseLog.of(config_with(None)).list(limit=limit, status=wanted):
            if as_json:
                typer.echo(summary.model_dump_json())
                continue
            question = " ".join(summary.question.split())
            question = question if len(question) <= 60 else question[:59] + "…"
            typer.echo(
                f"{summary.id[:12]}  {summary.created_at[:19]}  {summary.entry:<5} "
                f"{summary.profile:<9} {summary.status.value:<13} {question}"
            )

    @logs.command("show")
    def show(
        record_id: Annotated[str, typer.Argument(help="The record's id, or its first characters.")],
        as_json: Annotated[bool, typer.Option("--json", help="Print the whole record.")] = False,
    ) -> None:
        """One case's record: the verdict with each stage's report, events, models, usage."""
        from medgate.caselog import CaseLog
        from medgate.cli.core import config_with

        record = CaseLog.of(config_with(None)).get(record_id)
        if as_json:
            typer.echo(json.dumps(record.model_dump(mode="json"), indent=2))
        else:
            print_record(record)

    @logs.command("path")
    def path() -> None:
        """Where the case log is kept (set it with log.path or MEDGATE_LOG__PATH)."""
        from medgate.caselog import default_log_path
        from medgate.cli.core import config_with

        typer.echo(str(default_log_path(config_with(None))))


def print_record(record: CaseRecord) -> None:
    from medgate.cli.core import print_verdict

    typer.echo(f"record:  {record.id}  ({record.created_at})")
    run = record.run
    typer.echo(f"run:     medgate {run.medgate_version} {run.entry}, profile {run.profile}")
    typer.echo(f"question: {record.case.question}")
    print_verdict(record.verdict)
    typer.echo(f"stages:  {', '.join(record.verdict.trace.stages) or '(none)'}")
    typer.echo(f"events:  {', '.join(e.kind.value for e in record.events) or '(none)'}")
    for role, model in run.models.items():
        weights = f"  weights {model.fingerprint[:16]}" if model.fingerprint else ""
        typer.echo(f"model:   {role:<12} {model.spec}{weights}")
    for role, used in record.usage.items():
        typer.echo(
            f"usage:   {role:<12} {used.calls} call(s), {used.prompt_tokens} + "
            f"{used.completion_tokens} tokens, {used.seconds:.1f} s"
        )
    typer.echo(f"config:  sha256 {run.config_digest[:16]}")
