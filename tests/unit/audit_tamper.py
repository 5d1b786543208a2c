"""What someone with write access to the database could do to the audit chain."""

from __future__ import annotations

from sqlalchemy import update

from medgate.store import GENESIS, Store, entry_hash
from medgate.store.schema import audit_head, audit_log


def rebuild_chain_with(store: Store, seq: int, actor: str) -> None:
    """Forge entry ``seq``'s actor, then rehash every entry after it and the head: the chain
    stays consistent with itself, so only an anchor kept elsewhere can tell."""
    prev = GENESIS
    with store.engine.begin() as conn:
        for entry in store.audit_entries():
            fields = entry.model_dump(exclude={"hash"}) | {"prev_hash": prev}
            if entry.seq == seq:
                fields["actor"] = actor
            prev = entry_hash(**fields)
            conn.execute(
                update(audit_log)
                .where(audit_log.c.seq == entry.seq)
                .values(actor=fields["actor"], prev_hash=fields["prev_hash"], hash=prev)
            )
        conn.execute(update(audit_head).where(audit_head.c.id == 1).values(hash=prev))
