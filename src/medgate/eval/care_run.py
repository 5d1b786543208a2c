"""Evaluating CareGuard on its request sets: one scored record per request in a resumable run log.

The gate is built as every entry point builds it (:func:`medgate.pipeline.build_gate`, profile
``careguard`` unless configured otherwise). Each request goes through ``gate.check``; a request
that comes back NEEDS_CONTEXT is answered with the default screening answers, as a patient would
answer, and checked again (both calls count toward its latency). The scored result
(:class:`~medgate.careguard.evaluation.ItemResult`, with the final case record) is appended to
the run's log (:mod:`medgate.eval.runlog`), so an interrupted run resumes where it stopped and
every metric can be recomputed from the log alone.

A run's log is named by dataset, split and configuration (``main`` or an ablation); its manifest
records the settings and models that decided the verdicts. Resuming a run under other settings
is refused rather than mixing two gates' results in one table.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from pydantic import Field, ValidationError

from medgate.backends.pool import ModelInfo, ModelPool
from medgate.careguard.datasets import CARE_TASK, CareDataset, CareItem
from medgate.careguard.evaluation import (
    DEFAULT_ANSWERS,
    OUR_QUESTIONS,
    ItemResult,
    score_item,
    spread,
    withhold_request,
)
from medgate.careguard.gate import screening_questions
from medgate.case_record import CaseRecord, RunInfo
from medgate.config import MedgateConfig
from medgate.errors import ConfigError, InputError
from medgate.eval.data import DATASETS
from medgate.eval.runlog import RunLog, matching_log
from medgate.events import Event, Gate
from medgate.pipeline import build_gate
from medgate.records import Case, Record, Status

#: The configurations a run can name: the gate as configured, and one ablation per component.
#: A setting of a section (a nested dict) changes only the settings it names in that section;
#: the others stay as configured.
ABLATIONS: dict[str, dict[str, Any]] = {
    "main": {},
    "no_controller": {"use_controller": False},
    "no_sra": {"use_sra": False},
    "no_hra": {"use_hra": False},
    # Not an ablation: the generator's own check added to medgate's judges (docs/careguard.md).
    "with_self_check": {"judges": ["sra", "hra", "self_check"]},
    # The same judge reading "does it contain an error?" (docs/results/self_check_prompts.md).
    "with_self_check_no_error": {
        "judges": ["sra", "hra", "self_check"],
        "self_check": {"reading": "statements_no_error"},
    },
    # The released draft's doubted later sentences kept (off) or left out (required; the
    # default leaves them out whenever the generator is white-box). docs/careguard.md.
    "no_trimming": {"trim": {"enabled": False}},
    # The trim alone, without the opening check (the default before the check was).
    "with_trimming": {"trim": {"enabled": True, "opening_samples": 0}},
    # The trim with the opening check, as the default has it since; the name of its first runs.
    "with_opening_check": {"trim": {"enabled": True, "opening_samples": 3}},
    # The HRA judge's own score waived where the SRA judge's is and the opening check reads
    # the draft, as the default has it since; the name of its first runs
    # (docs/results/careguard_runs_v30/NOTES.md).
    "with_hra_waiver": {"waive_hra_judge": True},
    # The gate before that: the HRA judge counts everywhere.
    "without_hra_waiver": {"waive_hra_judge": False},
    # A "yes" to a question checking a popular belief held back and refined
    # (docs/results/careguard_runs_v31/NOTES.md).
    "with_belief_check": {"hold_belief_yes": True},
    # Messages from people mistreated who ask what to do given the fixed support text before
    # the screens (opt-in: docs/results/careguard_runs_v37/NOTES.md).
    "with_mistreatment_support": {"mistreatment_support": True},
    # Drafts read by a classifier fitted on recorded replies, as the default has it since; the
    # name of its first runs (docs/results/reply_classifier.md).
    "with_reply_classifier": {"request_safety": {"reply_classifier": "reply"}},
    # The gate before that: drafts read by the request-safety classifier.
    "request_reply_screen": {"request_safety": {"reply_classifier": "request"}},
    # The opening check with its samples drawn only for a draft the judges passed.
    "lazy_opening_check": {
        "trim": {"enabled": True, "opening_samples": 3, "opening_draw": "after_judges"}
    },
}


def default_runs(config: MedgateConfig) -> Path:
    """Where a CareGuard run is recorded when no folder is named: under the cache dir, so that it
    neither resumes nor is refused by a committed run of another gate in docs/results (those
    are read and resumed by naming their folder)."""
    return config.cache_dir / "careguard_runs"


#: Screening asks a few questions at a time, so answering may reveal more; this many rounds.
SCREENING_ROUNDS = 3


class CareRunSpec(Record):
    """Everything that decides a CareGuard run's verdicts, written beside its log."""

    dataset: str
    split: str
    config: str = Field(description="'main' or the ablation's name (ABLATIONS).")
    profile: str
    careguard: dict[str, Any] = Field(description="The CareGuard settings in force.")
    models: dict[str, ModelInfo] = Field(description="The model behind each role.")


def settings_in_force(config: MedgateConfig) -> dict[str, Any]:
    """The CareGuard settings as a run's manifest records them, with the self-check's cut
    resolved when the self-check judges: unset, it is a default that has changed (0.1927, then
    0.2694), and a log resumed under another cut would mix two gates."""
    settings = config.careguard.model_dump(mode="json")
    if "self_check" in config.careguard.judges:
        settings["self_check"]["threshold"] = config.careguard.self_check.p_threshold
    return settings


def care_dataset(name: str) -> CareDataset:
    """The registered CareGuard dataset ``name``; a clear error for a QA dataset or none."""
    spec: object = DATASETS.load(name)
    if getattr(spec, "task", None) != CARE_TASK:
        raise ConfigError(
            f"{name!r} is a closed-question dataset (medgate eval hrs or eval gate); "
            f"CareGuard datasets: {', '.join(care_dataset_names())}"
        )
    return cast(CareDataset, spec)


def care_dataset_names() -> list[str]:
    return [n for n in DATASETS.names() if getattr(DATASETS.load(n), "task", None) == CARE_TASK]


def ablated(config: MedgateConfig, ablation: str) -> MedgateConfig:
    """``config`` with the named ablation applied to its CareGuard settings."""
    if ablation not in ABLATIONS:
        raise ConfigError(f"unknown configuration {ablation!r}: use {', '.join(ABLATIONS)}")
    current = config.careguard
    update: dict[str, Any] = {}
    for key, value in ABLATIONS[ablation].items():
        if isinstance(value, dict):
            # Only what was set survives, so that a section's checks see the ablation's
            # settings beside the user's own and not beside defaults that conflict with it.
            section = getattr(current, key)
            try:
                update[key] = type(section).model_validate(
                    {**section.model_dump(exclude_unset=True), **value}
                )
            except ValidationError as exc:
                raise ConfigError(
                    f"configuration {ablation!r} conflicts with the careguard.{key} settings: {exc}"
                ) from exc
        else:
            update[key] = value
    careguard = current.model_copy(update=update)
    return config.model_copy(update={"careguard": careguard})


def run_item(gate: Gate, item: CareItem, config_name: str, run: RunInfo) -> ItemResult:
    """Check one request, answering screening questions with the defaults, and score it."""
    t0 = time.perf_counter()
    events: list[Event] = []
    verdict = gate.check(Case(question=item.question, case_id=item.id), events.append)
    asked: list[str] = []
    patient: dict[str, str] = {}
    for _ in range(SCREENING_ROUNDS):
        if verdict.status is not Status.NEEDS_CONTEXT:
            break
        fields = [q.field.value for q in screening_questions(verdict)]
        if not fields:
            break
        asked.extend(fields)
        patient.update({f: DEFAULT_ANSWERS[f] for f in fields})
        events = []
        case = Case(question=item.question, case_id=item.id, patient=patient)
        verdict = gate.check(case, events.append)
    result = score_item(item, config_name, verdict, asked, time.perf_counter() - t0)
    result = result.model_copy(update={"record": CaseRecord.of(verdict, events, run)})
    return result if item.dataset in OUR_QUESTIONS else withhold_request(result, item.question)


def run_prefix(dataset: str, split: str) -> str:
    """How every run log of a request set's split is named before its configuration."""
    return f"{dataset}-{split}-"


def run_path(runs: Path, dataset: str, split: str, config_name: str) -> Path:
    return runs / f"{run_prefix(dataset, split)}{config_name}.jsonl"


def open_run(runs: Path, spec: CareRunSpec) -> RunLog[ItemResult]:
    """The run's log; refuses to resume a log recorded under other settings."""
    return matching_log(run_path(runs, spec.dataset, spec.split, spec.config), ItemResult, spec)


def evaluate_care(
    config: MedgateConfig,
    dataset: str,
    split: str | None = None,
    limit: int | None = None,
    *,
    config_name: str = "main",
    ids: Sequence[str] = (),
    runs: Path | None = None,
    pool: ModelPool | None = None,
    on_item: Callable[[ItemResult, int, int], None] | None = None,
) -> tuple[list[ItemResult], RunLog[ItemResult]]:
    """Run CareGuard on the dataset's requests not yet in the run's log; every selected item's
    result in selection order, and the log."""
    source = care_dataset(dataset)
    split = split or source.splits[0]
    rows = source.load(config.data_dir, split)
    unknown = sorted(set(ids) - {i.id for i in rows})
    if unknown:
        raise InputError(f"no request {', '.join(map(repr, unknown))} in {dataset} ({split})")
    items = spread(rows, limit, source.by_category)
    if ids:
        wanted = set(ids)
        items = [i for i in items if i.id in wanted]
    config = ablated(config, config_name)
    pool = pool or ModelPool(config)
    gate = build_gate(config, pool)
    spec = CareRunSpec(
        dataset=dataset,
        split=split,
        config=config_name,
        profile=config.profile,
        careguard=settings_in_force(config),
        models=pool.roles(),
    )
    log = open_run(runs or default_runs(config), spec)
    done = log.load()
    todo = [i for i in items if i.id not in done]
    run = RunInfo.of("eval", config, pool.roles())
    for k, item in enumerate(todo, 1):
        pool.forget_prompts()  # a request decides the same way after any other, or a resume
        result = run_item(gate, item, config_name, run)
        log.append(result)
        done[item.id] = result
        if on_item is not None:
            on_item(result, k, len(todo))
    return [done[i.id] for i in items if i.id in done], log


def read_runs(runs: Path) -> dict[str, tuple[CareRunSpec, list[ItemResult]]]:
    """Every run in ``runs``, by log name: its spec and its results."""
    out: dict[str, tuple[CareRunSpec, list[ItemResult]]] = {}
    for path in sorted(runs.glob("*.jsonl")):
        manifest = path.with_suffix(".json")
        if not manifest.is_file():
            continue
        spec = CareRunSpec.model_validate_json(manifest.read_text(encoding="utf-8"))
        out[path.stem] = (spec, list(RunLog(path, ItemResult, spec).load().values()))
    return out
