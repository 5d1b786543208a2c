"""The hash chain behind the audit log.

Each entry's hash covers its own fields and the previous entry's hash, so editing an entry breaks
its hash, deleting one breaks the next entry's link, and cutting entries off the end no longer
matches the chain's head row. Verdict entries also carry a digest of the stored verdict and its
events, so an edit to the verdicts table is caught as well.

The escalations table is checked by replaying the trail: each case's open, claim, release,
reassign and resolve entries say what its row must hold (state, who holds it and since when, the
resolution, digests of the note and of the answer released), so a changed row is caught.

All of that is checked against the database itself, so someone who can write to it can rebuild
the chain from the first entry with fresh hashes. Anchors close that gap: an anchor is the head
(seq, hash) noted somewhere the database's writers cannot reach, and a rebuilt chain no longer
has that hash at that seq.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from medgate.errors import InputError
from medgate.store.records import AuditAnchor, AuditEntry, EscalationRow, EscalationState

GENESIS = "0" * 64


def canonical_json(value: Any) -> str:
    """One spelling per value: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry_hash(
    *, seq: int, at: str, actor: str, action: str, subject: str, payload: str, prev_hash: str
) -> str:
    """The hash of one entry, chained to ``prev_hash``."""
    body = canonical_json(
        {
            "seq": seq,
            "at": at,
            "actor": actor,
            "action": action,
            "subject": subject,
            "payload": payload,
            "prev": prev_hash,
        }
    )
    return digest(body)


def check_chain(
    entries: Iterable[AuditEntry],
    *,
    head_seq: int,
    head_hash: str,
    verdict_digests: Mapping[str, str],
    anchors: Iterable[AuditAnchor] = (),
) -> list[str]:
    """Every problem found in ``entries`` (ordered by seq); empty when the chain is intact."""
    entries = list(entries)
    problems = _check_anchors(entries, anchors)
    expected_seq = 1
    prev = GENESIS
    seen_verdicts: set[str] = set()
    for entry in entries:
        if entry.seq != expected_seq:
            problems.append(f"entries {expected_seq}..{entry.seq - 1} are missing")
        if entry.prev_hash != prev:
            problems.append(f"entry {entry.seq}: link to the previous entry is broken")
        recomputed = entry_hash(
            seq=entry.seq,
            at=entry.at,
            actor=entry.actor,
            action=entry.action,
            subject=entry.subject,
            payload=entry.payload,
            prev_hash=entry.prev_hash,
        )
        if recomputed != entry.hash:
            problems.append(f"entry {entry.seq}: contents do not match its hash (edited)")
        if entry.action == "verdict":
            problems.extend(_check_verdict(entry, verdict_digests))
            seen_verdicts.add(entry.subject)
        prev = entry.hash
        expected_seq = entry.seq + 1
    last_seq = expected_seq - 1
    if last_seq != head_seq or prev != head_hash:
        problems.append(
            f"the log ends at entry {last_seq} but its head records entry {head_seq} "
            "(entries deleted from the end, or the head edited)"
        )
    for verdict_id in sorted(set(verdict_digests) - seen_verdicts):
        problems.append(f"verdict {verdict_id} has no audit entry")
    return problems


def _check_verdict(entry: AuditEntry, verdict_digests: Mapping[str, str]) -> list[str]:
    try:
        payload = json.loads(entry.payload)
        wanted = str(payload["verdict_sha256"])
    except (ValueError, KeyError, TypeError):
        return [f"entry {entry.seq}: verdict entry without a verdict digest"]
    found = verdict_digests.get(entry.subject)
    if found is None:
        return [f"entry {entry.seq}: verdict {entry.subject} is missing from the store"]
    if found != wanted:
        return [f"entry {entry.seq}: verdict {entry.subject} was changed after it was recorded"]
    return []


def _pinned(row: EscalationRow) -> dict[str, str | None]:
    """What the trail records of a row: every column but the id, note and answer by digest."""
    values: dict[str, str | None] = row.model_dump(mode="json", exclude={"id", "answer", "note"})
    values["answer_sha256"] = None if row.answer is None else digest(row.answer)
    values["note_sha256"] = None if row.note is None else digest(row.note)
    return values


_OPEN = EscalationState.OPEN.value
_CLAIMED = EscalationState.CLAIMED.value
_RESOLVED = EscalationState.RESOLVED.value


def _replay(entry: AuditEntry, payload: Mapping[str, Any], row: dict[str, str | None]) -> None:
    """Apply one escalation entry to the row it describes (as the store wrote it)."""
    action = entry.action.removeprefix("escalation.")
    if action == "claim":
        row.update(state=_CLAIMED, claimed_by=entry.actor, claimed_at=entry.at)
    elif action == "release":
        row.update(state=_OPEN, claimed_by=None, claimed_at=None)
    elif action == "reassign":
        row.update(claimed_by=str(payload["to"]), claimed_at=entry.at)
    elif action == "resolve":
        row.update(
            state=_RESOLVED,
            resolution=str(payload["resolution"]),
            answer_sha256=payload["answer_sha256"],
            note_sha256=payload["note_sha256"],
            resolved_by=entry.actor,
            resolved_at=entry.at,
        )
    else:
        raise KeyError(action)


def check_escalations(
    entries: Iterable[AuditEntry], rows: Mapping[str, EscalationRow]
) -> list[str]:
    """Every escalation row that differs from what its audit entries say it must hold."""
    problems: list[str] = []
    expected: dict[str, dict[str, str | None]] = {}
    for entry in entries:
        if not entry.action.startswith("escalation."):
            continue
        try:
            payload = json.loads(entry.payload)
            if entry.action == "escalation.open":
                expected[entry.subject] = {
                    "verdict_id": str(payload["verdict"]),
                    "created_at": entry.at,
                    "state": _OPEN,
                    **dict.fromkeys(
                        ("claimed_by", "claimed_at", "resolution", "resolved_by", "resolved_at")
                    ),
                    "answer_sha256": None,
                    "note_sha256": None,
                }
            elif entry.subject not in expected:
                problems.append(
                    f"entry {entry.seq}: {entry.action} of escalation {entry.subject}, "
                    "which was never opened"
                )
            else:
                _replay(entry, payload, expected[entry.subject])
        except (ValueError, KeyError, TypeError):
            problems.append(f"entry {entry.seq}: unreadable {entry.action} entry")
    for escalation_id in sorted(set(expected) | set(rows)):
        row = rows.get(escalation_id)
        wanted = expected.get(escalation_id)
        if row is None:
            problems.append(f"escalation {escalation_id} is missing from the store")
        elif wanted is None:
            problems.append(f"escalation {escalation_id} has no audit entry")
        else:
            found = _pinned(row)
            changed = sorted(k for k in wanted if found.get(k) != wanted[k])
            if changed:
                fields = ", ".join(k.removesuffix("_sha256") for k in changed)
                problems.append(
                    f"escalation {escalation_id} was changed after it was recorded ({fields})"
                )
    return problems


def _check_anchors(entries: list[AuditEntry], anchors: Iterable[AuditAnchor]) -> list[str]:
    hashes = {e.seq: e.hash for e in entries}
    hashes[0] = GENESIS
    problems = []
    for anchor in anchors:
        found = hashes.get(anchor.seq)
        if found is None:
            problems.append(
                f"anchor taken {anchor.taken_at}: entry {anchor.seq} is gone "
                "(the chain was cut below an anchored point)"
            )
        elif found != anchor.hash:
            problems.append(
                f"anchor taken {anchor.taken_at}: entry {anchor.seq} no longer has the "
                "anchored hash (the chain was rewritten)"
            )
    return problems


def parse_anchors(text: str, source: str = "anchors") -> list[AuditAnchor]:
    """Anchors from JSON Lines: one ``{"seq", "hash", "taken_at"}`` per line, blanks skipped."""
    anchors = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            anchors.append(AuditAnchor.model_validate_json(line))
        except ValidationError as exc:
            raise InputError(f"{source}, line {number}: not an audit anchor ({exc})") from exc
    return anchors
