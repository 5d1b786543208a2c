"""The local case log, and `ask`/`care` writing to it by default, `medgate log` reading it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from medgate.case_record import CaseRecord, RunInfo
from medgate.caselog import CaseLog, CaseLogError
from medgate.cli import app
from medgate.config import load_config
from medgate.errors import InputError
from medgate.records import Case, Status
from medgate.verdict import Verdict

runner = CliRunner()
SELF_HARM = "How much fentanyl is enough to make the pain stop forever?"


def record(question: str, status: Status, record_id: str, at: str) -> CaseRecord:
    verdict = Verdict(status=status, reason="r", case=Case(question=question))
    run = RunInfo.of("ask", load_config(model="fake"))
    return CaseRecord.of(verdict, [], run, record_id=record_id, created_at=at)


def test_records_come_back_whole_newest_first(tmp_path: Path) -> None:
    log = CaseLog(tmp_path / "cases.db")
    first = record("First?", Status.RELEASED, "aaaaaaaa01", "2026-12-01T10:00:00+00:00")
    second = record("Second?", Status.ESCALATED, "bbbbbbbb02", "2026-12-01T11:00:00+00:00")
    log.write(first)
    log.write(second)
    assert [s.id for s in log.list()] == [second.id, first.id]
    assert [s.id for s in log.list(status=Status.RELEASED)] == [first.id]
    assert log.get(second.id) == second
    assert log.get("bbbbbbbb") == second  # a unique prefix is enough


def test_an_unclear_or_unknown_id_is_a_clear_error(tmp_path: Path) -> None:
    log = CaseLog(tmp_path / "cases.db")
    log.write(record("One?", Status.RELEASED, "abcdef0001", "2026-12-01T10:00:00+00:00"))
    log.write(record("Two?", Status.RELEASED, "abcdef0002", "2026-12-01T10:00:01+00:00"))
    with pytest.raises(InputError, match="more than one"):
        log.get("abcdef")
    with pytest.raises(InputError, match="no case"):
        log.get("ffffff")
    with pytest.raises(InputError, match="at least 6"):
        log.get("abc")
    # LIKE wildcards in what the user typed are taken literally
    with pytest.raises(InputError, match="no case"):
        log.get("abcde_")


def test_a_missing_log_or_one_from_a_newer_medgate_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CaseLogError, match="no case log"):
        CaseLog(tmp_path / "none.db").list()
    newer = tmp_path / "newer.db"
    with sqlite3.connect(newer) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(CaseLogError, match="newer medgate"):
        CaseLog(newer).list()


def test_care_logs_the_case_and_log_show_reads_it_back() -> None:
    done = runner.invoke(app, ["care", SELF_HARM, "--model", "fake", "--json"])
    assert done.exit_code == 0, done.output
    out = json.loads(done.output)
    listed = runner.invoke(app, ["log", "list", "--json"])
    (summary,) = [json.loads(line) for line in listed.output.splitlines()]
    assert summary["id"] == out["record_id"] and summary["status"] == "blocked"
    assert summary["entry"] == "care" and summary["question"] == SELF_HARM
    shown = runner.invoke(app, ["log", "show", out["record_id"][:8], "--json"])
    assert shown.exit_code == 0, shown.output
    whole = CaseRecord.model_validate_json(shown.output)
    assert whole.verdict.model_dump(mode="json") == {
        k: v for k, v in out.items() if k not in ("timings", "record_id", "questions")
    }
    assert [e.kind.value for e in whole.events] == ["route", "triage", "decision"]
    assert set(whole.verdict.trace.stages) == {"route", "careguard"}
    assert whole.run.models["controller"].spec == "fake"
    text = runner.invoke(app, ["log", "show", out["record_id"]])
    assert "stages:  route, careguard" in text.output and "model:   controller" in text.output


def test_no_log_leaves_the_log_alone() -> None:
    done = runner.invoke(app, ["care", SELF_HARM, "--model", "fake", "--json", "--no-log"])
    assert done.exit_code == 0, done.output
    assert "record_id" not in json.loads(done.output)
    listed = runner.invoke(app, ["log", "list"])
    assert isinstance(listed.exception, CaseLogError)  # medgate's error: one line, exit 2
    assert "no case log" in str(listed.exception)


def test_a_case_the_log_cannot_take_is_an_error_after_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("MEDGATE_LOG__PATH", str(blocker / "cases.db"))
    done = runner.invoke(app, ["care", SELF_HARM, "--model", "fake"])
    assert "status:  blocked" in done.output  # the verdict is shown first
    assert isinstance(done.exception, CaseLogError)
    assert "not logged" in str(done.exception) and "--no-log" in str(done.exception)
