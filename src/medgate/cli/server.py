"""`medgate serve`, `medgate keys ...` and `medgate audit verify|anchor`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from medgate.cli.failures import fail
from medgate.config import MedgateConfig, load_config
from medgate.errors import InputError, MedgateError

if TYPE_CHECKING:
    from collections.abc import Callable

    from medgate.case_record import RunInfo
    from medgate.events import Gate
    from medgate.store import AuditReport

DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        help="SQLAlchemy URL of the store (default: MEDGATE_DATABASE_URL, else a SQLite file "
        "under the cache dir).",
    ),
]


def _config(database_url: str | None, **overrides: Any) -> MedgateConfig:
    store = {"database_url": database_url} if database_url else None
    return load_config(store=store, **overrides)


AnchorsOpt = Annotated[
    Path | None,
    typer.Option(
        "--anchors",
        help="JSON Lines of anchors written by `medgate audit anchor`, kept outside the database.",
    ),
]


def _verify(database_url: str | None, anchors_file: Path | None) -> AuditReport:
    from medgate.cli.core import read_text_file
    from medgate.store import Store, parse_anchors

    try:
        anchors = []
        if anchors_file is not None:
            text = read_text_file(anchors_file, "anchors file", 10_000_000)
            anchors = parse_anchors(text, str(anchors_file))
        return Store.open(_config(database_url)).verify_audit(anchors)
    except MedgateError as exc:
        raise fail(exc) from exc


def _service_gate(config: MedgateConfig) -> tuple[Gate, RunInfo, Callable[[], None]]:
    """The configured profile, with the models behind its roles named for each record, and how
    its models forget their cached prompts. Imported only now: the model stack is heavy and the
    other commands do not need it."""
    from medgate.backends.pool import ModelPool
    from medgate.case_record import RunInfo
    from medgate.pipeline import build_gate

    pool = ModelPool(config)
    built = build_gate(config, pool)
    return built, RunInfo.of("serve", config, pool.roles()), pool.forget_prompts


def register(app: typer.Typer) -> None:
    """Add the service's commands to the main CLI."""
    keys = typer.Typer(help="Manage API keys (roles: client, clinician, admin).")
    audit = typer.Typer(help="Check the hash-chained audit log.")
    app.add_typer(keys, name="keys")
    app.add_typer(audit, name="audit")

    @app.command()
    def serve(
        host: Annotated[str | None, typer.Option(help="Interface to bind.")] = None,
        port: Annotated[int | None, typer.Option(help="Port to listen on.")] = None,
        profile: Annotated[
            str | None,
            typer.Option(
                help="The gate profile that decides each case (medgate.profiles: route, hrs, "
                "careguard, full, or a plugin's); default: the configured profile, 'route' "
                "(closed research questions to HRS, patient questions to CareGuard)."
            ),
        ] = None,
        database_url: DatabaseUrl = None,
    ) -> None:
        """Run the HTTP service and the web page (uvicorn)."""
        import uvicorn

        from medgate.server import create_app
        from medgate.store import Store

        server: dict[str, Any] = {}
        if host is not None:
            server["host"] = host
        if port is not None:
            server["port"] = port
        try:
            config = _config(database_url, server=server or None, profile=profile)
            store = Store.open(config)
            gate, run, fresh = _service_gate(config)
            service = create_app(gate, config=config, store=store, run=run, fresh=fresh)
        except MedgateError as exc:
            raise fail(exc) from exc
        uvicorn.run(service, host=config.server.host, port=config.server.port)

    @keys.command("create")
    def keys_create(
        name: Annotated[str, typer.Option(help="Who or what holds the key.")],
        role: Annotated[str, typer.Option(help="client, clinician or admin.")],
        database_url: DatabaseUrl = None,
    ) -> None:
        """Create a key and print its token (shown this once; only its hash is stored)."""
        from medgate.store import Role, Store

        try:
            chosen = Role(role)
        except ValueError:
            raise fail(
                InputError(f"unknown role {role!r}; use client, clinician or admin")
            ) from None
        try:
            store = Store.open(_config(database_url))
            key, token = store.create_key(name, chosen)
        except MedgateError as exc:
            raise fail(exc) from exc
        typer.echo(f"created {key.role.value} key {key.id} for {key.name}")
        typer.echo(token)

    @keys.command("list")
    def keys_list(database_url: DatabaseUrl = None) -> None:
        """List keys (never their tokens)."""
        from medgate.store import Store

        try:
            found = Store.open(_config(database_url)).list_keys()
        except MedgateError as exc:
            raise fail(exc) from exc
        if not found:
            # On stderr, so that a script reading the list still reads an empty one.
            typer.echo(
                "no API keys yet: create one with medgate keys create --name NAME --role ROLE",
                err=True,
            )
        for key in found:
            state = "active" if key.active else f"revoked {key.revoked_at}"
            typer.echo(f"{key.id}  {key.role.value:<9}  {key.name}  ({state})")

    @keys.command("revoke")
    def keys_revoke(key_id: str, database_url: DatabaseUrl = None) -> None:
        """Revoke a key at once."""
        from medgate.store import Store

        try:
            key = Store.open(_config(database_url)).revoke_key(key_id)
        except MedgateError as exc:
            raise fail(exc) from exc
        typer.echo(f"revoked {key.id} ({key.name})")

    @audit.command("verify")
    def audit_verify(database_url: DatabaseUrl = None, anchors: AnchorsOpt = None) -> None:
        """Recompute the audit chain and check it against anchors kept elsewhere; exit 1 if any
        entry was edited, deleted or rewritten."""
        report = _verify(database_url, anchors)
        if report.ok:
            typer.echo(
                f"audit log intact: {report.entries} entries verified, "
                f"{report.anchors_checked} anchors matched"
            )
            return
        typer.echo(f"audit log BROKEN ({len(report.problems)} problems):", err=True)
        for problem in report.problems:
            typer.echo(f"  {problem}", err=True)
        raise typer.Exit(1)

    @audit.command("anchor")
    def audit_anchor(
        database_url: DatabaseUrl = None,
        append: Annotated[
            Path | None,
            typer.Option(
                "--append",
                help="Also append the anchor to this JSON Lines file (keep it outside the "
                "database's reach; it is what `audit verify --anchors` reads).",
            ),
        ] = None,
    ) -> None:
        """Print the chain's current head as an anchor, after verifying the chain (a broken
        chain is never anchored: exit 1)."""
        report = _verify(database_url, append if append and append.exists() else None)
        if not report.ok or report.head is None:
            typer.echo("audit log BROKEN; not anchored:", err=True)
            for problem in report.problems:
                typer.echo(f"  {problem}", err=True)
            raise typer.Exit(1)
        line = report.head.model_dump_json()
        if append is not None:
            try:
                with append.open("a", encoding="utf-8") as f:
                    f.write(line + "\n")
            except OSError as exc:
                raise fail(InputError(f"cannot append to {append}: {exc.strerror}")) from exc
        typer.echo(line)
