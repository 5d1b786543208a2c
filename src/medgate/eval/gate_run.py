"""Evaluating a whole gate: any profile on any registered dataset, a case record per item.

The gate is built as every entry point builds it (:func:`medgate.pipeline.build_gate`), each
item's question and context (never its gold label) go through ``gate.check``, and the item's
:class:`~medgate.case_record.CaseRecord` (entry ``eval``) is appended to the run's log
(:mod:`medgate.eval.runlog`) beside its gold label. The summary is recomputed from the log:
how many cases each status got, and how often a released answer was the gold label. Unlike the
HRS experiments (record once, replay every threshold), this runs the gate as deployed, so a
change of setting is a new run.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field

from medgate.backends.pool import ModelInfo, ModelPool
from medgate.case_record import CaseRecord, RunInfo
from medgate.config import MedgateConfig
from medgate.eval.data import EvalItem, dataset_split
from medgate.eval.runlog import RunLog, spec_key
from medgate.events import Event
from medgate.pipeline import build_gate
from medgate.records import Record, Status


class GateRunSpec(Record):
    """Everything that decides a gate run's verdicts; its digest names the run's files."""

    dataset: str
    split: str
    split_seed: int
    profile: str
    config_digest: str = Field(description="MedgateConfig.digest of the settings in force.")
    models: dict[str, ModelInfo] = Field(description="The model behind each role.")

    def key(self) -> str:
        return spec_key(self)


class GateItem(Record):
    """One item of a gate run: its gold label and the case's whole record."""

    item_id: str
    gold: str
    record: CaseRecord
    seconds: float = Field(ge=0, description="Wall time of the case's check.")

    @property
    def correct(self) -> bool | None:
        """Whether the answer shown is the gold label; None when no answer was released."""
        verdict = self.record.verdict
        if not verdict.status.answers_user or verdict.answer is None:
            return None
        return verdict.answer.strip().lower() == self.gold


class GateSummary(Record):
    """The run's headline numbers, recomputed from its per-item records."""

    items: int
    statuses: dict[str, int] = Field(description="Cases per status.")
    released: int = Field(description="Released or refined: an answer was shown.")
    correct: int = Field(description="Released answers that are the gold label.")
    release_rate: float | None
    released_accuracy: float | None = Field(
        description="Share of released answers that are the gold label."
    )
    seconds_mean: float | None = Field(description="Mean wall time of a case's check.")


def summarise(items: Sequence[GateItem]) -> GateSummary:
    statuses = Counter(i.record.status.value for i in items)
    released = [i for i in items if i.record.status.answers_user]
    correct = sum(1 for i in released if i.correct)
    seconds = [i.seconds for i in items]
    return GateSummary(
        items=len(items),
        statuses={s.value: statuses.get(s.value, 0) for s in Status},
        released=len(released),
        correct=correct,
        release_rate=len(released) / len(items) if items else None,
        released_accuracy=correct / len(released) if released else None,
        seconds_mean=sum(seconds) / len(seconds) if seconds else None,
    )


def run_log(config: MedgateConfig, spec: GateRunSpec) -> RunLog[GateItem]:
    root = config.cache_dir / "eval" / "gate_runs"
    name = f"{spec.dataset}-{spec.split}-{spec.profile}-{spec.key()}.jsonl"
    return RunLog(root / name, GateItem, spec)


def evaluate_gate(
    config: MedgateConfig,
    dataset: str,
    split: str = "test",
    limit: int | None = None,
    *,
    split_seed: int = 42,
    pool: ModelPool | None = None,
    on_item: Callable[[GateItem], None] | None = None,
) -> tuple[list[GateItem], RunLog[GateItem]]:
    """Run the configured profile on the split's items not yet in its log; every item's record,
    in split order, and the log."""
    items: list[EvalItem] = dataset_split(dataset, config.data_dir, split_seed).part(split)
    items = items[:limit] if limit else items
    pool = pool or ModelPool(config)
    gate = build_gate(config, pool)
    spec = GateRunSpec(
        dataset=dataset,
        split=split,
        split_seed=split_seed,
        profile=config.profile,
        config_digest=config.digest(),
        models=pool.roles(),
    )
    log = run_log(config, spec)
    done = log.load()
    run = RunInfo.of("eval", config, pool.roles())
    for item in items:
        if item.id in done:
            continue
        events: list[Event] = []
        pool.forget_prompts()  # an item decides the same way after any other, or a resume
        t0 = time.perf_counter()
        verdict = gate.check(item.case(), events.append)
        record = CaseRecord.of(verdict, events, run)
        seconds = time.perf_counter() - t0
        result = GateItem(item_id=item.id, gold=item.gold, record=record, seconds=seconds)
        log.append(result)
        done[item.id] = result
        if on_item is not None:
            on_item(result)
    return [done[i.id] for i in items], log


def read_run(path: Path) -> list[GateItem]:
    """The items of a gate run's log, to recompute its numbers."""
    manifest = GateRunSpec.model_validate_json(path.with_suffix(".json").read_text())
    return list(RunLog(path, GateItem, manifest).load().values())
