"""Recording full HRS trajectories over a dataset split, resumably, through the call cache.

Each item's trajectory is recorded once: the baseline, then (when the item needs rounds) knowledge
rounds until K or until the orchestrator abstains or stalls. Every threshold setting is then a pure
replay (:mod:`medgate.eval.replay`). With ``rounds="ungated"`` the rounds are recorded only for
items whose baseline fails the recording gate (``gate_e``/``gate_p``): every setting that keeps that
gate, i.e. every tau/rule/revert/K sweep, needs nothing more, and the replay refuses settings
that would need rounds it does not have.

A recording file is keyed by everything that changes model calls or stored signals: model
fingerprint, orchestrator and its corpus, the call-affecting HRS settings, the rarity centroid and
the rounds policy. Lines are appended per item, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol

from pydantic import Field, ValidationError

from medgate.backends.embedded import EMBEDDED_MODELS
from medgate.backends.pool import forget_prompts
from medgate.backends.registry import create_model, split_spec
from medgate.config import HRSConfig, MedgateConfig
from medgate.errors import ConfigError, RecordingError
from medgate.eval.cache import CachedModel, CallCache
from medgate.eval.data import EvalItem, Split, items_digest, training_corpus
from medgate.eval.progress import Progress
from medgate.eval.runlog import RunLog, spec_key
from medgate.hrs.decision import Trajectory
from medgate.hrs.decision import passes_gate as gate_passes
from medgate.hrs.evidence import read_evidence
from medgate.hrs.gate import HRSGate
from medgate.hrs.knowledge import Fact
from medgate.hrs.orchestrator import (
    ModelOrchestrator,
    Orchestrator,
    OrchestratorStep,
    RetrievalOrchestrator,
)
from medgate.hrs.rarity import RarityCentroid, fit_centroid, load_centroid, save_centroid
from medgate.hrs.retrieval import BM25Index
from medgate.records import Record

Rounds = Literal["all", "ungated"]

#: HRS settings that change which model calls are made (thresholds do not).
CALL_FIELDS = (
    "max_iterations",
    "l_max",
    "min_reasoning_tokens",
    "samples",
    "sample_temperature",
    "seed",
    "facts_per_iteration",
    "signals",
)


class RunSpec(Record):
    """Everything that determines a recording's model calls and stored values."""

    dataset: str
    split: str
    split_seed: int
    model: str
    model_fingerprint: str
    threads: int | None = Field(
        default=None,
        description="CPU threads of an in-process llama.cpp answerer: its numbers depend on them "
        "(None: a backend whose numerics medgate does not set).",
    )
    orchestrator: str
    orchestrator_fingerprint: str
    hrs: dict[str, object]
    centroid: str | None = Field(description="Digest of the rarity centroid, if one was used.")
    rounds: Rounds
    recording_gate: tuple[float, float] | None = Field(
        default=None, description="gate_e, gate_p when rounds were recorded only past the gate."
    )

    def key(self) -> str:
        return spec_key(self)


class RecordedItem(Record):
    item_id: str
    gold: str
    trajectory: Trajectory
    rounds_recorded: bool = Field(
        description="False when the baseline passed the recording gate and no rounds were run."
    )
    wall_seconds: float
    model_seconds: float = Field(
        description="Wall time as if uncached: fresh calls plus the original time of cached ones."
    )
    cache_hits: int = 0
    cache_misses: int = 0
    recorded_at: str = ""


class ItemFailure(Record):
    """An item an engine could not record: never written to the store, always reported."""

    item_id: str
    error: str = Field(description="The exception's type and message, or how the worker died.")
    worker: str = Field(default="", description="Which worker tried it (empty: this process).")


def recording_error(failures: Sequence[ItemFailure], recorded: int, store: Path) -> RecordingError:
    """One error naming every item that was not recorded, and where the others are."""
    listed = "; ".join(
        f"{f.item_id} ({f.worker + ': ' if f.worker else ''}{f.error})" for f in failures
    )
    return RecordingError(
        f"{len(failures)} item(s) were not recorded: {listed}. The {recorded} item(s) recorded "
        f"now are in {store}; run the command again to retry only the others.",
        [f.item_id for f in failures],
    )


def model_fingerprint(spec: str, config: MedgateConfig) -> str:
    """The weights' identity without loading them where possible (embedded models)."""
    backend, target = split_spec(spec)
    name = target.removeprefix("embedded:")
    if backend == "embedded" and name in EMBEDDED_MODELS:
        return EMBEDDED_MODELS[name].sha256
    if backend in ("openai", "fake"):
        return spec  # a hosted model has no weights to hash; the name is its identity
    model = create_model(spec, config)
    fp = getattr(model, "fingerprint", None)
    return str(fp) if fp else spec


#: Backends that run llama.cpp in this process, where ``backend.n_threads`` sets the numerics.
LLAMACPP_BACKENDS = frozenset({"embedded", "llamacpp"})


def model_threads(spec: str, config: MedgateConfig) -> int | None:
    """The thread count an in-process llama.cpp model of ``spec`` runs with, else None.

    llama.cpp splits its matrix products by thread, so the same prompt read with another
    thread count gives log-probabilities that differ in the last digits, and now and then a
    greedy token that flips; a recording and its cached calls are only repeatable at the
    thread count they were made with.
    """
    if split_spec(spec)[0] not in LLAMACPP_BACKENDS:
        return None
    return config.backend.n_threads or os.cpu_count() or 1


def cached_model(spec: str, config: MedgateConfig, cache: CallCache) -> CachedModel:
    threads = model_threads(spec, config)
    return CachedModel(
        lambda: create_model(spec, config),
        spec,
        model_fingerprint(spec, config),
        cache,
        numerics=f"threads={threads}" if threads else "",
    )


def call_cache(config: MedgateConfig) -> CallCache:
    return CallCache(config.cache_dir / "eval" / "calls.sqlite")


@dataclass(frozen=True)
class RuntimeRecipe:
    """Everything :func:`build_runtime` was given, so that another process (a Ray actor) can
    assemble the same gate with its own model and its own connection to the call cache.

    It is pickled as it is: the split travels with it (a worker needs no data directory) and
    the configuration is not validated again, so the worker never reads its own environment.
    """

    config: MedgateConfig
    dataset: str
    split: Split
    split_name: str
    orchestrator: str
    centroid: RarityCentroid | None
    rounds: Rounds
    cache_path: Path

    def build(self, config: MedgateConfig | None = None) -> Runtime:
        """The runtime again, with ``config`` in place of the recorded one if given."""
        return build_runtime(
            config or self.config,
            self.dataset,
            self.split,
            self.split_name,
            self.orchestrator,
            self.centroid,
            self.rounds,
            cache=CallCache(self.cache_path),
        )


@dataclass
class Runtime:
    """A gate assembled for recording, with the spec that names its recording."""

    gate: HRSGate
    baseline_gate: HRSGate
    spec: RunSpec
    cache: CallCache
    recipe: RuntimeRecipe | None = None


def store_dir(config: MedgateConfig) -> Path:
    return config.cache_dir / "eval"


def with_engine_threads(config: MedgateConfig, engine: Engine | None) -> MedgateConfig:
    """``config`` with the model thread count ``engine`` runs its workers with, if it sets one."""
    if engine is None or engine.threads is None:
        return config
    backend = config.backend.model_copy(update={"n_threads": engine.threads})
    return config.model_copy(update={"backend": backend})


def corpus_index(train: Sequence[EvalItem]) -> tuple[BM25Index, str]:
    """BM25 over the training split's contexts (never test items, never conclusions)."""
    docs = training_corpus(train)
    return BM25Index(docs), f"train-contexts-{items_digest(train)}"


def centroid_path(config: MedgateConfig, dataset: str, fingerprint: str, train_digest: str) -> Path:
    return store_dir(config) / "centroids" / f"{dataset}-{fingerprint[:12]}-{train_digest}.json"


def fit_training_centroid(
    config: MedgateConfig,
    dataset: str,
    train: Sequence[EvalItem],
    model: CachedModel,
    limit: int | None = None,
) -> tuple[RarityCentroid, Path]:
    """Mean question embedding of the training split (embeddings come through the call cache)."""
    items = list(train)[:limit] if limit else list(train)
    path = centroid_path(config, dataset, model.fingerprint, items_digest(items))
    existing = load_centroid(path, model)
    if existing is not None:
        return existing, path
    bar = Progress(len(items), f"embedding {dataset} training questions")
    centroid = fit_centroid(
        model,
        (i.question for i in items),
        source=f"{dataset} train split ({len(items)} questions, ids {items_digest(items)})",
        progress=lambda _: bar.update(),
    )
    save_centroid(centroid, path)
    return centroid, path


def existing_centroid(
    config: MedgateConfig, dataset: str, train: Sequence[EvalItem], model: CachedModel
) -> RarityCentroid | None:
    return load_centroid(
        centroid_path(config, dataset, model.fingerprint, items_digest(train)), model
    )


def centroid_digest(c: RarityCentroid | None) -> str | None:
    if c is None:
        return None
    return hashlib.sha256(json.dumps(c.centroid).encode()).hexdigest()[:12]


def build_runtime(
    config: MedgateConfig,
    dataset: str,
    split: Split,
    split_name: str,
    orchestrator: str = "retrieval",
    centroid: RarityCentroid | None = None,
    rounds: Rounds = "ungated",
    cache: CallCache | None = None,
) -> Runtime:
    """The gate to record with: cached answerer, orchestrator, and the run's spec.

    ``orchestrator`` is ``retrieval`` (BM25 over training contexts) or ``model`` (the configured
    orchestrator model's own knowledge) or ``model:SPEC``.
    """
    cache = cache or call_cache(config)
    answerer = cached_model(config.model, config, cache)
    orch: Orchestrator
    if orchestrator == "retrieval":
        index, corpus_name = corpus_index(split.train)
        orch = RetrievalOrchestrator(index, config.hrs.facts_per_iteration)
        orch_name, orch_fp = f"{orch.name}:{corpus_name}", corpus_name
    elif orchestrator == "model" or orchestrator.startswith("model:"):
        spec = orchestrator.removeprefix("model:") if ":" in orchestrator else None
        spec = spec or config.orchestrator_model or config.model
        orch_model = answerer if spec == config.model else cached_model(spec, config, cache)
        orch = ModelOrchestrator(orch_model, config.hrs.facts_per_iteration)
        orch_name, orch_fp = f"model:{spec}", orch_model.fingerprint
    else:
        raise ConfigError(
            f"unknown orchestrator {orchestrator!r}: use retrieval, model or model:SPEC"
        )
    hrs = config.hrs
    spec_ = RunSpec(
        dataset=dataset,
        split=split_name,
        split_seed=split.seed,
        model=config.model,
        model_fingerprint=answerer.fingerprint,
        threads=model_threads(config.model, config),
        orchestrator=orch_name,
        orchestrator_fingerprint=orch_fp,
        hrs={f: getattr(hrs, f) for f in CALL_FIELDS},
        centroid=centroid_digest(centroid),
        rounds=rounds,
        recording_gate=(hrs.gate_e, hrs.gate_p) if rounds == "ungated" else None,
    )
    peer = cached_model(hrs.peer_model, config, cache) if hrs.peer_model else None
    if peer is not None:
        # Only a recording with a second model names it, so other recordings keep their key.
        spec_.hrs["peer_model"] = peer.fingerprint
    base_cfg = hrs.model_copy(update={"max_iterations": 0})
    recipe = RuntimeRecipe(
        config, dataset, split, split_name, orchestrator, centroid, rounds, cache.path
    )
    return Runtime(
        gate=HRSGate(answerer, orch, hrs, centroid, peer=peer),
        baseline_gate=HRSGate(answerer, orch, base_cfg, centroid, peer=peer),
        spec=spec_,
        cache=cache,
        recipe=recipe,
    )


class TrajectoryStore(RunLog[RecordedItem]):
    """The run log of one HRS recording: a :class:`RecordedItem` per item, named by its
    :class:`RunSpec`.

    With an ``archive`` directory (``recordings_dir``: the repository's recordings), the store
    starts from the items archived there under the same name and :meth:`save_archive` writes
    every item back, gzipped: recordings made on one machine are resumed and read on another.
    """

    def __init__(self, root: Path, spec: RunSpec, archive: Path | None = None) -> None:
        log, archived = self.paths(root, spec, archive)
        super().__init__(log, RecordedItem, spec)
        self.spec: RunSpec = spec
        self.archive = archived
        if self.archive is not None and self.archive.is_file():
            self._take_archived(self.archive)

    @staticmethod
    def stem(spec: RunSpec) -> str:
        """The recording's file name without suffix: dataset, split and the spec's key."""
        return f"{spec.dataset}-{spec.split}-{spec.key()}"

    @classmethod
    def archived(cls, spec: RunSpec, archive: Path) -> Path:
        """Where the recording of ``spec`` is archived in the directory ``archive``."""
        return archive / f"{cls.stem(spec)}.jsonl.gz"

    @classmethod
    def paths(cls, root: Path, spec: RunSpec, archive: Path | None) -> tuple[Path, Path | None]:
        """The recording's run log and its archived copy (``None`` without an archive)."""
        archived = cls.archived(spec, archive) if archive is not None else None
        return root / "trajectories" / f"{cls.stem(spec)}.jsonl", archived

    @classmethod
    def exists(cls, root: Path, spec: RunSpec, archive: Path | None = None) -> bool:
        """Whether the recording has been started here or archived, without opening it
        (opening a store creates its log)."""
        log, archived = cls.paths(root, spec, archive)
        return log.is_file() or (archived is not None and archived.is_file())

    def _take_archived(self, archive: Path) -> None:
        have = self.load()
        with gzip.open(archive, "rt", encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                rec = RecordedItem.model_validate_json(line)
                if rec.item_id not in have:
                    self.append(rec)

    def save_archive(self) -> Path | None:
        """Write every stored item to the archive (in the order recorded), with the spec beside
        it; byte-identical for the same items, so an unchanged recording leaves no diff."""
        if self.archive is None:
            return None
        items = self.load()
        if not items:
            return None
        write_archive(self.archive, [archived_form(self.spec, r) for r in items.values()])
        archive_manifest(self.archive).write_text(self.spec.model_dump_json(indent=2) + "\n")
        return self.archive


def archive_manifest(archive: Path) -> Path:
    """The recording's spec, written beside its archive."""
    return archive.with_name(archive.name.removesuffix(".jsonl.gz") + ".json")


def archived_form(spec: RunSpec, rec: RecordedItem) -> RecordedItem:
    """``rec`` as the archive of ``spec`` keeps it: without retrieved passages' text when the
    recording's knowledge was retrieved (:func:`without_retrieved_text`), else as recorded."""
    return without_retrieved_text(rec) if spec.orchestrator.startswith("retrieval") else rec


def without_retrieved_text(rec: RecordedItem) -> RecordedItem:
    """``rec`` with the text of every injected fact blanked, its source kept.

    A retrieved fact is a passage of the evaluation data (the training split's contexts), and
    evaluation data stays in its directory: the archive keeps the passage's document id
    (``train:<item>#<passage>``), which names it in the corpus rebuilt from the data. Nothing
    read from a recording uses the text: replays read signals, answers and sources; an item is
    never recorded further from its archived form (a recording's items are whole).
    """

    def blank(facts: Sequence[Fact]) -> list[Fact]:
        return [f.model_copy(update={"text": ""}) for f in facts]

    def step(s: OrchestratorStep | None) -> OrchestratorStep | None:
        return s and s.model_copy(update={"facts": blank(s.facts), "withheld": blank(s.withheld)})

    traj = rec.trajectory
    iterations = [
        it.model_copy(update={"knowledge": blank(it.knowledge), "step": step(it.step)})
        for it in traj.iterations
    ]
    update = {"iterations": iterations, "final_step": step(traj.final_step)}
    return rec.model_copy(update={"trajectory": traj.model_copy(update=update)})


def write_archive(path: Path, items: Sequence[RecordedItem]) -> None:
    """Write ``items`` gzipped, one JSON line each, with no name and no time in the gzip header
    (so the same items give the same bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(rec.model_dump_json() + "\n" for rec in items)
    tmp = path.with_suffix(".tmp")
    with (
        tmp.open("wb") as raw,
        gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as fh,
    ):
        fh.write(text.encode("utf-8"))
    tmp.replace(path)


def recorded_threads(spec: RunSpec, archive: Path | None) -> int | None:
    """The thread count of an archived recording that is ``spec`` in all but its thread count
    (or is the every-round recording of it), when the archive holds none of ``spec``'s own
    thread count; else ``None``.

    A run whose thread count is not configured takes the one its recording was made with, so
    that the repository's recordings are read, and resumed, with the numerics they were made
    with instead of recorded again for this machine's core count. Only the archive counts: a
    run started here and never archived does not hide the repository's recording (it is kept,
    and read again with ``backend.n_threads`` set to its count).
    """
    if spec.threads is None or archive is None or not archive.is_dir():
        return None
    full = every_round_spec(spec)
    variants = [spec] if full is None else [spec, full]
    if any(TrajectoryStore.archived(v, archive).is_file() for v in variants):
        return None
    wanted = {v.key() for v in variants}
    for manifest in sorted(archive.glob(f"{spec.dataset}-{spec.split}-*.json")):
        try:
            other = RunSpec.model_validate_json(manifest.read_text())
        except ValidationError:
            continue  # not a recording's manifest
        if other.threads is None or not manifest.with_suffix(".jsonl.gz").is_file():
            continue
        if other.model_copy(update={"threads": spec.threads}).key() in wanted:
            return other.threads
    return None


def with_recorded_threads(config: MedgateConfig, spec: RunSpec) -> MedgateConfig | None:
    """``config`` with the thread count of the archived recording :func:`recorded_threads`
    finds for ``spec``, when ``config`` sets none; ``None`` when nothing is to change."""
    if config.backend.n_threads is not None:
        return None
    threads = recorded_threads(spec, config.recordings_dir)
    if threads is None:
        return None
    backend = config.backend.model_copy(update={"n_threads": threads})
    return config.model_copy(update={"backend": backend})


def every_round_spec(spec: RunSpec) -> RunSpec | None:
    """For a recording with rounds only past the gate, the same spec with every round: its
    items are a superset of what this one would record (the same baseline, and the rounds of
    every item rather than of the failing ones); ``None`` for any other recording."""
    if spec.rounds != "ungated":
        return None
    return spec.model_copy(update={"rounds": "all", "recording_gate": None})


def every_round_store(
    root: Path, spec: RunSpec, archive: Path | None = None
) -> TrajectoryStore | None:
    """The recording of :func:`every_round_spec` if one exists, so that its items are read
    instead of recorded again."""
    full = every_round_spec(spec)
    if full is None or not TrajectoryStore.exists(root, full, archive):
        return None
    return TrajectoryStore(root, full, archive)


def _forget_prompts(runtime: Runtime) -> None:
    """Start an item with models that remember no earlier prompt (:func:`forget_prompts`), so an
    item records the same values whether it is recorded first or later, by this process or by
    a Ray actor, or after a resume."""
    gate = runtime.gate
    forget_prompts((gate.answerer, gate.peer, getattr(gate.orchestrator, "model", None)))


def record_item(runtime: Runtime, item: EvalItem) -> RecordedItem:
    cache = runtime.cache
    _forget_prompts(runtime)
    before = (cache.stats.hits, cache.stats.misses, cache.stats.fresh_seconds)
    replayed0 = cache.stats.replayed_seconds
    t0 = time.perf_counter()
    case = item.case()
    traj = runtime.baseline_gate.record(case, full=True)
    rounds = True
    cfg: HRSConfig = runtime.gate.config
    if (
        runtime.spec.rounds == "ungated"
        and traj.iterations
        and gate_passes(traj.iterations[0], cfg)
    ):
        rounds = False
    duplicate = 0.0
    if rounds and traj.iterations:
        # The baseline calls are replayed from the cache; only the rounds are new. Their
        # original time is already counted once, so it is not counted again below.
        duplicate = (cache.stats.fresh_seconds - before[2]) + (
            cache.stats.replayed_seconds - replayed0
        )
        traj = runtime.gate.record(case, full=True)
    wall = time.perf_counter() - t0
    return RecordedItem(
        item_id=item.id,
        gold=item.gold,
        trajectory=traj,
        rounds_recorded=rounds,
        wall_seconds=wall,
        model_seconds=wall + (cache.stats.replayed_seconds - replayed0) - duplicate,
        cache_hits=cache.stats.hits - before[0],
        cache_misses=cache.stats.misses - before[1],
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def with_evidence(records: Sequence[RecordedItem], items: Sequence[EvalItem]) -> list[RecordedItem]:
    """The records with their case's evidence cues, read from the item's context where the
    recording predates them: the cues are a function of the context alone, so nothing is run
    again and a recording made before them scores the same as one made after."""
    contexts = {item.id: item.context for item in items}
    out = []
    for rec in records:
        traj = rec.trajectory
        if traj.evidence is None and rec.item_id in contexts:
            cues = read_evidence(contexts[rec.item_id])
            rec = rec.model_copy(update={"trajectory": traj.model_copy(update={"evidence": cues})})
        out.append(rec)
    return out


class Engine(Protocol):
    """Records items of one run and reports each as soon as it is done."""

    name: str
    workers: int
    """How many items are recorded side by side (known once the engine has started)."""
    threads: int | None
    """The model thread count every worker runs with, when the engine sets it (a recording
    names its thread count, so the run is assembled with it); None: the configured one."""

    def record(
        self,
        runtime: Runtime,
        items: Sequence[EvalItem],
        on_item: Callable[[RecordedItem], None],
    ) -> list[ItemFailure]:
        """Record ``items`` (none of them in the store yet), calling ``on_item`` with each
        record as it finishes; return the items that could not be recorded."""
        ...


class LocalEngine:
    """This process, one item after another, with the runtime's own model."""

    name = "local"
    workers = 1
    threads: int | None = None

    def record(
        self,
        runtime: Runtime,
        items: Sequence[EvalItem],
        on_item: Callable[[RecordedItem], None],
    ) -> list[ItemFailure]:
        # A failure stops the run here as it always has: the items before it are stored.
        for item in items:
            on_item(record_item(runtime, item))
        return []


@dataclass
class RecordingSummary:
    recorded: int
    reused: int
    seconds: float
    cache_hits: int
    cache_misses: int
    model_seconds: float = 0.0
    """Summed model-seconds of the items recorded now (as if uncached), to set beside
    ``seconds`` (wall time): with several workers the sum exceeds the wall time."""
    engine: str = "local"
    workers: int = 1


#: Items recorded between two writes of the archive during a run.
ARCHIVE_EVERY = 10


def record_split(
    runtime: Runtime,
    items: Sequence[EvalItem],
    root: Path,
    on_item: Callable[[RecordedItem], None] | None = None,
    engine: Engine | None = None,
    archive: Path | None = None,
) -> tuple[list[RecordedItem], RecordingSummary, TrajectoryStore]:
    """Record every item not yet in the store; return all records in ``items`` order.

    ``engine`` decides where items are recorded (default: this process, one after another).
    Whatever the engine, this process alone appends to the store, each item as soon as it
    comes back, so an interruption loses at most the items in flight. The store's lines are
    in the order items finished; the records returned are in ``items`` order. Items an engine
    could not record are raised as a :class:`RecordingError` once every other item is stored.
    With ``archive`` (``recordings_dir``), the store starts from the archived items of the same
    recording and writes them all back when done or interrupted.
    """
    engine = engine or LocalEngine()
    store = TrajectoryStore(root, runtime.spec, archive)
    full = every_round_store(root, runtime.spec, archive)
    reused = full.load() if full is not None else {}
    done = {**store.load(), **reused}
    if full is not None and all(i.id in reused for i in items):
        # Every item is read from the every-round recording: name it as the run's recording.
        store = full
    todo = [i for i in items if i.id not in done]
    t0 = time.perf_counter()
    bar = Progress(len(items), f"{runtime.spec.dataset}/{runtime.spec.split}")
    if len(items) > len(todo):
        bar.done = len(items) - len(todo) - 1
        bar.update(0.0, f"({bar.done + 1} recorded before)")
    now: list[RecordedItem] = []

    def finished(rec: RecordedItem) -> None:
        store.append(rec)
        done[rec.item_id] = rec
        now.append(rec)
        if len(now) % ARCHIVE_EVERY == 0:
            # A process killed outright (no Ctrl-C, no finally) loses at most these items from
            # the archive; the cache keeps every one for the next run to write back.
            store.save_archive()
        if on_item:
            on_item(rec)
        # Items recorded side by side: the ETA's rate is an item's time over the workers.
        bar.update(rec.wall_seconds / max(1, engine.workers), f"{rec.cache_misses} new calls")

    try:
        failures = engine.record(runtime, todo, finished) if todo else []
    finally:
        # Also when interrupted: what was recorded travels with the repository.
        if now:
            store.save_archive()
    summary = RecordingSummary(
        recorded=len(now),
        reused=len(items) - len(todo),
        seconds=time.perf_counter() - t0,
        # Counted from the records, not this process's cache: another engine's calls are made
        # (and counted) where the items were recorded.
        cache_hits=sum(r.cache_hits for r in now),
        cache_misses=sum(r.cache_misses for r in now),
        model_seconds=sum(r.model_seconds for r in now),
        engine=engine.name,
        workers=engine.workers,
    )
    if failures:
        raise recording_error(failures, len(now), store.path)
    return [done[i.id] for i in items], summary, store
