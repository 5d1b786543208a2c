"""The store on SQLite and PostgreSQL: keys, verdicts, the queue's claims and the audit chain."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import delete, select, text, update
from tests.unit.audit_tamper import rebuild_chain_with

from medgate.errors import InputError
from medgate.records import Case, HeldBackAnswer, Status
from medgate.store import (
    LATEST_VERSION,
    ConflictError,
    EscalationState,
    NotFoundError,
    Resolution,
    Role,
    Store,
    current_version,
    migrate,
)
from medgate.store.schema import (
    api_keys,
    audit_head,
    audit_log,
    case_runs,
    escalations,
    verdicts,
)
from medgate.verdict import Verdict

HELD_BACK = HeldBackAnswer(answer="yes", reasoning="Two small trials agree.", source="hrs round 0")


def verdict(
    status: Status = Status.ESCALATED, question: str = "Is it safe?", *, held: bool = True
) -> Verdict:
    """A verdict as a gate returns it; escalated ones keep the answer they held back."""
    held_back = HELD_BACK if status is Status.ESCALATED and held else None
    return Verdict(
        status=status, reason="scripted", case=Case(question=question), held_back=held_back
    )


def run_together(workers: list[Callable[[], Any]]) -> list[Any]:
    """Run callables in threads released at the same instant; returns results or exceptions."""
    barrier = threading.Barrier(len(workers))
    results: list[Any] = [None] * len(workers)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = workers[i]()
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def test_migrations_are_recorded_and_idempotent(store: Store) -> None:
    assert current_version(store.engine) == LATEST_VERSION
    assert migrate(store.engine) == LATEST_VERSION
    assert store.verify_audit().ok


def test_two_processes_opening_at_once_migrate_once(store_url: str) -> None:
    opened = run_together([lambda: Store.from_url(store_url) for _ in range(3)])
    for item in opened:
        assert isinstance(item, Store), item
        item.close()


def test_an_unreachable_database_is_a_clear_error() -> None:
    from medgate.store import StoreError

    with pytest.raises(StoreError, match=r"cannot open postgresql\+psycopg://medgate:\*\*\*@"):
        Store.from_url("postgresql://medgate:secret@127.0.0.1:1/none")


def test_keys_are_hashed_at_rest(store: Store) -> None:
    key, token = store.create_key("dr a", Role.CLINICIAN)
    assert store.authenticate(token) == key
    assert store.authenticate(token + "x") is None
    with store.engine.connect() as conn:
        row = conn.execute(select(api_keys)).one()
    assert token not in [str(value) for value in row]
    assert len(row.key_hash) == 64
    with pytest.raises(InputError):
        store.create_key("  ", Role.CLIENT)


def test_revoked_keys_stop_working(store: Store) -> None:
    key, token = store.create_key("app", Role.CLIENT)
    assert store.revoke_key(key.id).revoked_at is not None
    assert store.authenticate(token) is None
    assert not store.list_keys()[0].active
    with pytest.raises(NotFoundError):
        store.revoke_key("nope")


def test_escalated_verdicts_are_queued_others_are_not(store: Store) -> None:
    released = store.record_verdict(verdict(Status.RELEASED), key_id=None)
    escalated = store.record_verdict(verdict(Status.ESCALATED), key_id="k1")
    assert released.escalation is None
    assert escalated.escalation is not None
    again = store.get_verdict(escalated.id)
    assert again.verdict == escalated.verdict
    assert again.key_id == "k1"
    assert again.escalation is not None and again.escalation.state is EscalationState.OPEN
    assert [e.id for e in store.list_escalations()] == [escalated.escalation.id]
    with pytest.raises(NotFoundError):
        store.get_verdict("missing")


def test_queue_order_filter_and_paging(store: Store) -> None:
    ids = []
    for i in range(5):
        stored = store.record_verdict(verdict(question=f"q{i}"), key_id=None)
        assert stored.escalation is not None
        ids.append(stored.escalation.id)
    store.claim(ids[1], clinician="dr")
    assert [e.id for e in store.list_escalations()] == ids
    assert [e.id for e in store.list_escalations(EscalationState.CLAIMED)] == [ids[1]]
    assert [e.id for e in store.list_escalations(EscalationState.OPEN, limit=2, offset=1)] == [
        ids[2],
        ids[3],
    ]
    assert store.count_escalations(EscalationState.OPEN) == 4


def test_concurrent_claims_have_exactly_one_winner(store: Store) -> None:
    for _ in range(3):
        stored = store.record_verdict(verdict(), key_id=None)
        assert stored.escalation is not None
        esc_id = stored.escalation.id
        results = run_together(
            [functools.partial(store.claim, esc_id, clinician=f"clinician-{n}") for n in range(8)]
        )
        winners = [r for r in results if not isinstance(r, Exception)]
        losers = [r for r in results if isinstance(r, Exception)]
        assert len(winners) == 1
        assert all(isinstance(r, ConflictError) for r in losers), losers
        assert store.get_escalation(esc_id).claimed_by == winners[0].claimed_by
    claims = [e for e in store.audit_entries() if e.action == "escalation.claim"]
    assert len(claims) == 3


def test_resolve_rules(store: Store) -> None:
    stored = store.record_verdict(verdict(), key_id=None)
    assert stored.escalation is not None
    esc = stored.escalation.id
    with pytest.raises(ConflictError, match="open"):
        store.resolve(esc, clinician="a", resolution=Resolution.APPROVE, note="fine")
    store.claim(esc, clinician="a")
    with pytest.raises(ConflictError, match="another clinician"):
        store.resolve(esc, clinician="b", resolution=Resolution.APPROVE, note="fine")
    with pytest.raises(InputError):
        store.resolve(esc, clinician="a", resolution=Resolution.ANSWER, note="x")
    with pytest.raises(InputError):
        store.resolve(esc, clinician="a", resolution=Resolution.REJECT, note="x", answer="y")
    with pytest.raises(InputError):
        store.resolve(esc, clinician="a", resolution=Resolution.REJECT, note=" ")
    done = store.resolve(esc, clinician="a", resolution=Resolution.REJECT, note="unsafe")
    assert (done.state, done.resolution, done.note) == (
        EscalationState.RESOLVED,
        Resolution.REJECT,
        "unsafe",
    )
    with pytest.raises(ConflictError, match="resolved"):
        store.claim(esc, clinician="b")
    with pytest.raises(NotFoundError):
        store.claim("missing", clinician="a")


def test_approving_releases_the_held_back_answer(store: Store) -> None:
    stored = store.record_verdict(verdict(), key_id=None)
    assert stored.escalation is not None
    esc = stored.escalation.id
    store.claim(esc, clinician="a")
    done = store.resolve(esc, clinician="a", resolution=Resolution.APPROVE, note="checked")
    assert (done.resolution, done.answer) == (Resolution.APPROVE, HELD_BACK.answer)
    assert store.verify_audit().ok


def test_approving_needs_an_answer_to_approve(store: Store) -> None:
    stored = store.record_verdict(verdict(held=False), key_id=None)
    assert stored.escalation is not None
    esc = stored.escalation.id
    store.claim(esc, clinician="a")
    with pytest.raises(ConflictError, match="no model answer to approve"):
        store.resolve(esc, clinician="a", resolution=Resolution.APPROVE, note="fine")
    after = store.get_escalation(esc)
    assert (after.state, after.resolution) == (EscalationState.CLAIMED, None)  # rolled back
    assert store.verify_audit().ok


def test_a_claimed_case_can_be_released_or_handed_over(store: Store) -> None:
    a, _ = store.create_key("dr a", Role.CLINICIAN)
    b, _ = store.create_key("dr b", Role.CLINICIAN)
    app, _ = store.create_key("app", Role.CLIENT)
    stored = store.record_verdict(verdict(), key_id=None)
    assert stored.escalation is not None
    esc = stored.escalation.id
    with pytest.raises(ConflictError, match="open"):
        store.release(esc, by=a.id)
    store.claim(esc, clinician=a.id)
    with pytest.raises(ConflictError, match="another clinician"):
        store.release(esc, by=b.id)
    released = store.release(esc, by=a.id)
    assert (released.state, released.claimed_by, released.claimed_at) == (
        EscalationState.OPEN,
        None,
        None,
    )
    store.claim(esc, clinician=a.id)
    with pytest.raises(InputError, match="not an active clinician key"):
        store.reassign(esc, to=app.id, by=a.id)
    with pytest.raises(ConflictError, match="already held by"):
        store.reassign(esc, to=a.id, by=a.id)
    with pytest.raises(ConflictError, match="another clinician"):
        store.reassign(esc, to=b.id, by=b.id)
    moved = store.reassign(esc, to=b.id, by=a.id)
    assert (moved.state, moved.claimed_by) == (EscalationState.CLAIMED, b.id)
    with pytest.raises(ConflictError, match="another clinician"):
        store.resolve(esc, clinician=a.id, resolution=Resolution.REJECT, note="x")
    # An admin may free a case whoever holds it.
    assert store.release(esc, by="admin-key", override=True).state is EscalationState.OPEN
    store.claim(esc, clinician=b.id)
    store.resolve(esc, clinician=b.id, resolution=Resolution.REJECT, note="unsafe")
    actions = [e.action for e in store.audit_entries() if e.subject == esc]
    assert actions == [
        "escalation.open",
        "escalation.claim",
        "escalation.release",
        "escalation.claim",
        "escalation.reassign",
        "escalation.release",
        "escalation.claim",
        "escalation.resolve",
    ]
    assert store.verify_audit().ok


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("answer", "Double the dose."),
        ("note", "someone else's note"),
        ("resolution", "approve"),
        ("resolved_by", "dr-x"),
        ("state", "open"),
        ("claimed_by", None),
        ("created_at", "2020-01-01T00:00:00+00:00"),
        ("verdict_id", "another verdict"),
    ],
)
def test_audit_detects_an_edited_escalation(store: Store, column: str, value: str | None) -> None:
    """A database writer changing a clinician's resolution is caught by the trail's replay."""
    key, _ = store.create_key("dr a", Role.CLINICIAN)
    stored = store.record_verdict(verdict(), key_id=None)
    assert stored.escalation is not None
    esc = stored.escalation.id
    store.claim(esc, clinician=key.id)
    store.resolve(esc, clinician=key.id, resolution=Resolution.ANSWER, note="checked", answer="No.")
    if column == "verdict_id":  # point the case at another, real verdict
        value = store.record_verdict(verdict(Status.RELEASED), key_id=None).id
    assert store.verify_audit().ok
    with store.engine.begin() as conn:
        conn.execute(update(escalations).where(escalations.c.id == esc).values({column: value}))
    report = store.verify_audit()
    assert not report.ok
    field = column.removesuffix("_id") if column == "verdict_id" else column
    assert any(
        f"escalation {esc} was changed after it was recorded" in p and field in p
        for p in report.problems
    ), report.problems


def test_audit_detects_escalations_removed_or_added(store: Store) -> None:
    first = store.record_verdict(verdict(), key_id=None)
    assert first.escalation is not None
    other = store.record_verdict(verdict(Status.RELEASED), key_id=None)
    with store.engine.begin() as conn:
        conn.execute(delete(escalations).where(escalations.c.id == first.escalation.id))
        conn.execute(
            escalations.insert().values(
                id="forged", verdict_id=other.id, created_at="2026-01-01", state="open"
            )
        )
    problems = store.verify_audit().problems
    assert f"escalation {first.escalation.id} is missing from the store" in problems
    assert "escalation forged has no audit entry" in problems


def test_concurrent_writers_keep_one_chain(store: Store) -> None:
    def writer(n: int) -> None:
        for i in range(5):
            store.record_verdict(verdict(question=f"w{n}-{i}"), key_id=f"k{n}")

    results = run_together([functools.partial(writer, n) for n in range(6)])
    assert all(r is None for r in results), results
    report = store.verify_audit()
    assert report.ok, report.problems
    assert report.entries == 6 * 5 * 2  # a verdict entry and an escalation entry each
    seqs = [e.seq for e in store.audit_entries()]
    assert seqs == list(range(1, report.entries + 1))


def _populate(store: Store) -> None:
    key, _ = store.create_key("dr a", Role.CLINICIAN)
    for i in range(3):
        stored = store.record_verdict(verdict(question=f"q{i}"), key_id=None)
        assert stored.escalation is not None
        store.claim(stored.escalation.id, clinician=key.id)
        store.resolve(
            stored.escalation.id, clinician=key.id, resolution=Resolution.APPROVE, note="ok"
        )
    assert store.verify_audit().ok


def test_audit_detects_an_edited_entry(store: Store) -> None:
    _populate(store)
    with store.engine.begin() as conn:
        conn.execute(update(audit_log).where(audit_log.c.seq == 4).values(actor="someone else"))
    report = store.verify_audit()
    assert not report.ok
    assert any("entry 4" in p and "edited" in p for p in report.problems), report.problems


def test_audit_detects_a_deleted_entry(store: Store) -> None:
    _populate(store)
    with store.engine.begin() as conn:
        conn.execute(delete(audit_log).where(audit_log.c.seq == 5))
    report = store.verify_audit()
    assert not report.ok
    assert any("5..5 are missing" in p for p in report.problems), report.problems


def test_audit_detects_entries_cut_from_the_end(store: Store) -> None:
    _populate(store)
    last = store.audit_entries()[-1].seq
    with store.engine.begin() as conn:
        conn.execute(delete(audit_log).where(audit_log.c.seq == last))
    report = store.verify_audit()
    assert not report.ok
    assert any("deleted from the end" in p for p in report.problems), report.problems


def test_audit_detects_a_rewritten_chain_tail(store: Store) -> None:
    """Recomputing the edited entry's own hash still breaks the next link."""
    _populate(store)
    from medgate.store.audit import entry_hash

    entry = store.audit_entries()[2]
    forged = entry.model_copy(update={"payload": '{"forged":true}'})
    new_hash = entry_hash(**forged.model_dump(exclude={"hash"}))
    with store.engine.begin() as conn:
        conn.execute(
            update(audit_log)
            .where(audit_log.c.seq == entry.seq)
            .values(payload=forged.payload, hash=new_hash)
        )
    report = store.verify_audit()
    assert any(f"entry {entry.seq + 1}: link" in p for p in report.problems), report.problems


def test_audit_detects_an_edited_verdict(store: Store) -> None:
    stored = store.record_verdict(verdict(Status.BLOCKED), key_id=None)
    changed = stored.verdict.model_copy(update={"status": Status.RELEASED}).model_dump_json()
    with store.engine.begin() as conn:
        conn.execute(
            update(verdicts).where(verdicts.c.id == stored.id).values(verdict_json=changed)
        )
    report = store.verify_audit()
    assert any("changed after it was recorded" in p for p in report.problems), report.problems


def test_audit_detects_edited_events(store: Store) -> None:
    from medgate.events import AnswerEvent, DraftAnswer

    draft = AnswerEvent(stage="hrs", data=DraftAnswer(answer="Maybe."))
    stored = store.record_verdict(verdict(), key_id=None, events=[draft])
    assert stored.escalation is not None
    assert store.get_escalation(stored.escalation.id).events == [draft]
    with store.engine.begin() as conn:
        conn.execute(update(verdicts).where(verdicts.c.id == stored.id).values(events_json="[]"))
    report = store.verify_audit()
    assert any("changed after it was recorded" in p for p in report.problems), report.problems


def test_a_verdict_recorded_with_its_run_reads_back_as_its_case_record(store: Store) -> None:
    from medgate.backends.pool import ModelInfo
    from medgate.case_record import RunInfo
    from medgate.config import load_config
    from medgate.events import AnswerEvent, DraftAnswer

    run = RunInfo.of(
        "serve", load_config(model="fake"), {"answerer": ModelInfo(spec="fake", name="fake")}
    )
    draft = AnswerEvent(stage="hrs", data=DraftAnswer(answer="yes"))
    stored = store.record_verdict(verdict(), key_id=None, events=[draft], run=run)
    record = store.get_record(stored.id)
    assert (record.id, record.created_at) == (stored.id, stored.created_at)
    assert record.run == run and record.events == [draft] and record.verdict == verdict()
    assert store.verify_audit().ok
    bare = store.record_verdict(verdict(), key_id=None)
    assert store.get_verdict(bare.id).run is None
    with pytest.raises(NotFoundError, match="without how it was decided"):
        store.get_record(bare.id)
    # how a verdict was decided is pinned by its audit entry like the verdict itself
    with store.engine.begin() as conn:
        conn.execute(
            update(case_runs)
            .where(case_runs.c.verdict_id == stored.id)
            .values(run_json=run.model_copy(update={"profile": "hrs"}).model_dump_json())
        )
    report = store.verify_audit()
    assert any("changed after it was recorded" in p for p in report.problems), report.problems


def test_an_anchor_catches_a_rebuilt_chain_the_database_alone_cannot(store: Store) -> None:
    _populate(store)
    anchor = store.verify_audit().head
    assert anchor is not None and anchor.seq == len(store.audit_entries())
    store.record_verdict(verdict(question="later"), key_id=None)  # the chain grows on

    rebuild_chain_with(store, 2, "someone else")
    assert store.verify_audit().ok  # consistent with itself: the gap anchors close
    report = store.verify_audit([anchor])
    assert not report.ok
    assert report.anchors_checked == 1
    assert any(f"entry {anchor.seq} no longer has the anchored hash" in p for p in report.problems)


def test_an_anchor_catches_a_chain_cut_below_it(store: Store) -> None:
    _populate(store)
    anchor = store.verify_audit().head
    assert anchor is not None
    with store.engine.begin() as conn:
        conn.execute(delete(audit_log).where(audit_log.c.seq >= anchor.seq - 1))
        previous = store.audit_entries()[-1]
        conn.execute(
            update(audit_head)
            .where(audit_head.c.id == 1)
            .values(seq=previous.seq, hash=previous.hash)
        )
    report = store.verify_audit([anchor])
    assert any(f"entry {anchor.seq} is gone" in p for p in report.problems), report.problems


def test_anchors_of_an_intact_chain_all_match(store: Store) -> None:
    empty = store.verify_audit().head
    _populate(store)
    middle = store.verify_audit().head
    _populate(store)
    assert empty is not None and middle is not None
    report = store.verify_audit([empty, middle])
    assert report.ok, report.problems
    assert report.anchors_checked == 2


def test_anchor_files_are_parsed_strictly() -> None:
    from medgate.store import parse_anchors

    good = '{"seq": 3, "hash": "%s", "taken_at": "2026-01-01T00:00:00+00:00"}' % ("a" * 64)
    assert [a.seq for a in parse_anchors(good + "\n\n" + good)] == [3, 3]
    for bad in ('{"seq": 3}', "not json", good.replace("a" * 64, "a" * 63)):
        with pytest.raises(InputError, match="line 1: not an audit anchor"):
            parse_anchors(bad)


def test_committed_rows_survive_reopening(store_url: str) -> None:
    first = Store.from_url(store_url)
    stored = first.record_verdict(verdict(), key_id=None)
    first.close()
    second = Store.from_url(store_url)
    assert stored.escalation is not None
    assert second.get_escalation(stored.escalation.id).state is EscalationState.OPEN
    assert second.verify_audit().ok
    with second.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM escalations")).scalar_one() == 1
    second.close()
