"""`medgate keys ...`, `medgate audit verify` and `medgate serve` option handling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from service_gate import ESCALATING
from sqlalchemy import update
from tests.plugins import install_plugin
from tests.unit.audit_tamper import rebuild_chain_with
from typer.testing import CliRunner

from medgate.cli.server import register
from medgate.records import Case, Status
from medgate.store import EscalationState, Role, Store
from medgate.store.schema import audit_log
from medgate.verdict import Verdict


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def test_keys_create_list_revoke(cli: typer.Typer, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    runner = CliRunner()
    empty = runner.invoke(cli, ["keys", "list", "--database-url", url])
    assert empty.exit_code == 0 and empty.stdout == ""
    assert "no API keys yet: create one with medgate keys create" in empty.stderr
    created = runner.invoke(
        cli, ["keys", "create", "--name", "dr a", "--role", "clinician", "--database-url", url]
    )
    assert created.exit_code == 0, created.output
    key_line, token = created.output.strip().splitlines()
    key_id = key_line.split()[3]
    store = Store.from_url(url)
    found = store.authenticate(token)
    assert found is not None and found.role is Role.CLINICIAN and found.id == key_id

    listed = runner.invoke(cli, ["keys", "list", "--database-url", url])
    assert key_id in listed.output and "active" in listed.output
    assert token not in listed.output

    revoked = runner.invoke(cli, ["keys", "revoke", key_id, "--database-url", url])
    assert revoked.exit_code == 0
    assert store.authenticate(token) is None

    bad_role = runner.invoke(
        cli, ["keys", "create", "--name", "x", "--role", "root", "--database-url", url]
    )
    assert bad_role.exit_code == 2
    missing = runner.invoke(cli, ["keys", "revoke", "nope", "--database-url", url])
    assert missing.exit_code == 2
    assert "no API key" in missing.output


def test_audit_verify_exit_codes(cli: typer.Typer, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    store = Store.from_url(url)
    for status in (Status.RELEASED, Status.ESCALATED):
        store.record_verdict(
            Verdict(status=status, reason="r", case=Case(question="q?")), key_id=None
        )
    runner = CliRunner()
    ok = runner.invoke(cli, ["audit", "verify", "--database-url", url])
    assert ok.exit_code == 0, ok.output
    assert "intact: 3 entries" in ok.output

    with store.engine.begin() as conn:
        conn.execute(update(audit_log).where(audit_log.c.seq == 1).values(subject="other"))
    broken = runner.invoke(cli, ["audit", "verify", "--database-url", url])
    assert broken.exit_code == 1
    assert "entry 1" in broken.output


def test_audit_anchor_then_verify_against_it(cli: typer.Typer, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    store = Store.from_url(url)
    store.record_verdict(
        Verdict(status=Status.ESCALATED, reason="r", case=Case(question="q?")), key_id=None
    )
    anchors = tmp_path / "elsewhere" / "anchors.jsonl"
    anchors.parent.mkdir()
    runner = CliRunner()
    taken = runner.invoke(cli, ["audit", "anchor", "--database-url", url, "--append", str(anchors)])
    assert taken.exit_code == 0, taken.output
    assert json.loads(taken.output)["seq"] == 2  # the verdict and its escalation
    assert len(anchors.read_text().splitlines()) == 1

    ok = runner.invoke(cli, ["audit", "verify", "--database-url", url, "--anchors", str(anchors)])
    assert ok.exit_code == 0, ok.output
    assert "1 anchors matched" in ok.output

    # Rewrite entry 1 and rehash the chain after it: consistent in the database, not with
    # the anchor.
    rebuild_chain_with(store, 1, "someone else")
    assert runner.invoke(cli, ["audit", "verify", "--database-url", url]).exit_code == 0
    broken = runner.invoke(
        cli, ["audit", "verify", "--database-url", url, "--anchors", str(anchors)]
    )
    assert broken.exit_code == 1
    assert "rewritten" in broken.output
    refused = runner.invoke(
        cli, ["audit", "anchor", "--database-url", url, "--append", str(anchors)]
    )
    assert refused.exit_code == 1  # a broken chain is never anchored
    assert len(anchors.read_text().splitlines()) == 1

    anchors.write_text("not an anchor\n")
    bad = runner.invoke(cli, ["audit", "verify", "--database-url", url, "--anchors", str(anchors)])
    assert bad.exit_code == 2
    assert "line 1: not an audit anchor" in bad.output


@pytest.mark.parametrize("command", [["keys", "list"], ["audit", "verify"], ["serve"]])
def test_a_bad_database_url_is_reported_without_its_password(
    cli: typer.Typer, command: list[str]
) -> None:
    url = "postgresql://medgate:s3cret-Pa55@db.example:notaport/medgate"
    done = CliRunner().invoke(cli, [*command, "--database-url", url])
    assert done.exit_code == 2
    assert "medgate:***@db.example" in done.output
    assert "s3cret-Pa55" not in done.output


def test_serve_starts_uvicorn_with_a_plugins_profile(tmp_path: Path) -> None:
    """`medgate serve --profile` end to end in a subprocess, on a profile a plugin registers: it
    answers a check, records how it decided, then stops on SIGTERM."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"sqlite:///{tmp_path / 'm.db'}"
    _, token = Store.from_url(url).create_key("app", Role.CLIENT)
    here = Path(__file__).parent
    src = here.parents[2] / "src"
    plugin = install_plugin(
        tmp_path / "site",
        "medgate-scripted",
        {"medgate.profiles": {"scripted": "service_gate:scripted_profile"}},
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(here), str(plugin)])}
    env.pop("MEDGATE_CONFIG", None)  # no stray configuration; cwd has no medgate.toml either
    program = (
        "import typer; from medgate.cli.server import register; "
        "app = typer.Typer(); register(app); app()"
    )
    command = [sys.executable, "-c", program, "serve", "--port", str(port)]
    command += ["--profile", "scripted", "--database-url", url]
    server = subprocess.Popen(command, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None, "medgate serve exited"
            assert time.monotonic() < deadline, "medgate serve did not start"
            time.sleep(0.1)
        response = httpx.post(
            f"http://127.0.0.1:{port}/v1/check",
            json={"question": ESCALATING, "labels": "yes,no,maybe"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200
        assert response.json()["status"] == "escalated"
        verdict_id = response.json()["verdict_id"]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    assert Store.from_url(url).count_escalations(EscalationState.OPEN) == 1
    run = Store.from_url(url).get_record(verdict_id).run
    assert (run.entry, run.profile) == ("serve", "scripted")
