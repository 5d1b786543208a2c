"""Per-item quantities drawn from recordings: baseline signals, orchestrator usage, latency."""

from __future__ import annotations

from collections.abc import Sequence

from medgate.eval.runner import RecordedItem
from medgate.hrs import measures
from medgate.hrs.rarity import RarityCentroid
from medgate.hrs.signals import SignalValue
from medgate.records import Usage

SIGNALS = ("entropy", "perplexity", "ambiguity", "rarity", "token_length")


def baseline_signal(rec: RecordedItem, name: str) -> float | None:
    if not rec.trajectory.iterations:
        return None
    return rec.trajectory.iterations[0].value(name)


def fill_rarity(
    records: Sequence[RecordedItem],
    embeddings: dict[str, list[float]],
    centroid: RarityCentroid,
) -> list[RecordedItem]:
    """Records whose missing rarity values are computed from the training centroid.

    Rarity only guides the orchestrator and the retrieval orchestrator ignores it, so a
    recording made without a centroid can take it afterwards from the cached question embedding
    (the question is never rewritten, so every round shares round 0's value).
    """
    out = []
    for rec in records:
        emb = embeddings.get(rec.item_id)
        if emb is None or not rec.trajectory.iterations:
            out.append(rec)
            continue
        value = measures.cosine_distance(emb, centroid.centroid)
        iterations = []
        for it in rec.trajectory.iterations:
            current = it.signals.get("rarity")
            if current is not None and current.value is not None:
                iterations.append(it)
                continue
            signals = dict(it.signals)
            signals["rarity"] = SignalValue(name="rarity", value=value, layer="guidance")
            iterations.append(it.model_copy(update={"signals": signals}))
        traj = rec.trajectory.model_copy(update={"iterations": iterations})
        out.append(rec.model_copy(update={"trajectory": traj}))
    return out


def orchestrator_usage(records: Sequence[RecordedItem]) -> list[Usage]:
    """One usage record per orchestrator call that reported one."""
    out: list[Usage] = []
    for rec in records:
        for it in rec.trajectory.iterations:
            if it.step is not None and it.step.usage is not None:
                out.append(it.step.usage)
        final = rec.trajectory.final_step
        if final is not None and final.usage is not None:
            out.append(final.usage)
    return out


def orchestrator_calls(records: Sequence[RecordedItem]) -> int:
    n = 0
    for rec in records:
        n += sum(1 for it in rec.trajectory.iterations if it.step is not None)
        n += 1 if rec.trajectory.final_step is not None else 0
    return n


def rounds_run(rec: RecordedItem) -> int:
    return max(0, len(rec.trajectory.iterations) - 1)
