"""``medgate eval risk``: fit -> choose -> evaluate -> write, in one resumable command.

1. Recordings: each dataset's first ``train_limit`` training and ``test_limit`` test items,
   recorded with every knowledge round (``--rounds all``), retrieval knowledge, K=2 (the
   recordings ``medgate eval hrs --rounds all`` makes), or K=0 (first probe only, the cheaper
   recording of a slower answerer) for feature sets that read no round. Missing items are
   recorded (resumable); with ``recorded_only`` nothing is recorded and only the items already
   in the stores are read.
2. Fit and choose on training items only (:mod:`medgate.eval.risk_fit`), one model per feature
   set; saved under ``<cache_dir>/risk/`` or, with ``ship``, into the package.
3. Evaluate the deployed default (the model the gate resolves with the default knowledge source)
   on each test set, beside the paper's rule, and every feature set's test AUROC for reading.
4. Write the per-item logs, the tables and the report (:mod:`medgate.eval.risk_report`).

Everything after the recordings is a pure function of them, so running the command again
gives the same artifacts and figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medgate.config import HRSConfig, MedgateConfig, SuccessRule
from medgate.errors import ConfigError
from medgate.eval.data import dataset_split
from medgate.eval.engines import Engine
from medgate.eval.experiments import Recording, record, recording_runtime, with_rarity
from medgate.eval.risk_eval import ItemLine, headline, item_lines, risk_figures, write_items
from medgate.eval.risk_fit import C_GRID, Recorded, fit_risk_model
from medgate.eval.runner import (
    RecordedItem,
    TrajectoryStore,
    cached_model,
    call_cache,
    store_dir,
    with_engine_threads,
    with_evidence,
)
from medgate.hrs.features import FEATURE_SETS as FEATURE_NAMES
from medgate.hrs.features import RARITY, needs_rounds
from medgate.hrs.risk import (
    SHIPPED_DIR,
    LoadedRiskModel,
    RiskModel,
    artifact_name,
    fitted_dir,
    knowledge_matches,
    load_risk_model,
    resolve,
    save_risk_model,
)

DATASETS = ("pubmedqa-l", "bioasq", "pubmedqa-a")
FEATURE_SETS = ("baseline", "evidence", "rounds", "baseline+rarity", "rounds+rarity")
#: Feature sets a fresh install can compute (rarity needs a centroid of its own questions).
SHIPPABLE = ("baseline", "evidence", "rounds")
ORCHESTRATOR = "retrieval"
K = 2


def recorded_items(
    config: MedgateConfig,
    dataset: str,
    split: str,
    limit: int | None,
    recorded_only: bool,
    engine: Engine | None = None,
) -> tuple[list[RecordedItem], str, str]:
    """The split's first ``limit`` items as recorded (all rounds, retrieval, the configured
    ``hrs.max_iterations``), with the recording's file name and orchestrator; with
    ``recorded_only`` the items not yet recorded are left out and nothing is recorded."""
    config = with_engine_threads(config, engine)
    if not recorded_only:
        rec = record(config, dataset, split, limit, ORCHESTRATOR, "all", engine=engine)
        records = _with_rarity(rec)
        return records, rec.store.path.name, rec.spec.orchestrator
    parts = dataset_split(dataset, config.data_dir)
    items = parts.part(split)[:limit] if limit else parts.part(split)
    config, runtime, _ = recording_runtime(
        config, dataset, parts, split, ORCHESTRATOR, "all", call_cache(config)
    )
    store = TrajectoryStore(store_dir(config), runtime.spec, config.recordings_dir)
    done = store.load()  # empty when not recorded yet
    records = with_evidence([done[i.id] for i in items if i.id in done], items)
    return records, store.path.name, runtime.spec.orchestrator


def _with_rarity(rec: Recording) -> list[RecordedItem]:
    # Recorded with a centroid, every item has rarity already: no embedding is asked for.
    complete = all(
        r.trajectory.iterations[0].value("rarity") is not None
        for r in rec.records
        if r.trajectory.iterations
    )
    if complete:
        return rec.records
    return with_rarity(rec, cached_model(rec.config.model, rec.config, rec.cache))


def own_context_share(records: Sequence[RecordedItem]) -> float | None:
    """Share of the facts injected into training items that come from the item's own context.

    The retrieval corpus is the training split's contexts, so a training item's rounds can
    retrieve its own abstract, which a test item's never can: a measure of how far round
    features shift between training and test.
    """
    facts = [
        (rec.item_id, f.source)
        for rec in records
        for it in rec.trajectory.iterations[1:]
        for f in (it.step.facts if it.step else [])
    ]
    if not facts:
        return None
    own = sum(1 for item_id, source in facts if source.startswith(f"train:{item_id}#"))
    return own / len(facts)


def probe_seconds(records: Sequence[RecordedItem]) -> dict[str, float | None]:
    """Median seconds per item of the first probe and of the whole recorded trajectory: what
    the baseline risk rule (one probe) and a rule reading every round cost on this machine.

    The whole is the item's time as if uncached (``model_seconds``); the stored first round was
    replayed from the call cache when the rounds were recorded, so its time is the whole minus
    the rounds and the orchestrator steps.
    """
    from statistics import median

    first, whole = [], []
    for r in records:
        its = r.trajectory.iterations
        if not its:
            continue
        rounds = sum(t.seconds for it in its[1:] for t in it.timings)
        steps = sum(it.step.seconds for it in its if it.step is not None)
        whole.append(r.model_seconds)
        first.append(max(0.0, r.model_seconds - rounds - steps))
    return {
        "first_probe_s": median(first) if first else None,
        "all_rounds_s": median(whole) if whole else None,
    }


def paper_config(config: MedgateConfig, k: int = K) -> HRSConfig:
    """The paper's rule as the tables replay it: Algorithm 1 at the configured thresholds,
    with the ``k`` knowledge rounds recorded."""
    return config.hrs.model_copy(update={"rule": SuccessRule.ALGORITHM1, "max_iterations": k})


def feature_sets_for(k: int, requested: Sequence[str] | None) -> list[str]:
    """The feature sets to fit on recordings holding ``k`` knowledge rounds: those asked for
    (default :data:`FEATURE_SETS`, less those reading rounds when ``k`` is 0); asking for one
    that reads rounds from recordings that hold none is a :class:`ConfigError`."""
    if k < 0:
        raise ConfigError(f"knowledge rounds must be 0 or more, not {k}")
    if requested is None:
        return [fs for fs in FEATURE_SETS if k or not needs_rounds(FEATURE_NAMES[fs])]
    unknown = [fs for fs in requested if fs not in FEATURE_NAMES]
    if unknown:
        raise ConfigError(f"unknown feature set {unknown[0]!r}; known: {', '.join(FEATURE_NAMES)}")
    reading = [fs for fs in requested if needs_rounds(FEATURE_NAMES[fs])]
    if not k and reading:
        raise ConfigError(
            f"feature set {reading[0]!r} reads knowledge rounds, which recordings with "
            "--max-iterations 0 do not hold; fit it on K = 2 recordings"
        )
    return list(requested)


def grid_config(paper: HRSConfig, model: RiskModel) -> HRSConfig | None:
    g = model.grid
    if g is None:
        return None
    return paper.model_copy(
        update={"gate_e": g.gate_e, "gate_p": g.gate_p, "tau_e": g.gate_e, "tau_p": g.gate_p}
    )


def deployed_default(models: Sequence[LoadedRiskModel], knowledge: str) -> LoadedRiskModel:
    """The model the gate resolves for a knowledge source: the matching one with the higher
    AUROC on its held-out training items (:func:`medgate.hrs.risk.resolve`)."""
    usable = [m for m in models if knowledge_matches(m.model, knowledge)]
    if not usable:
        raise ConfigError(f"no fitted risk model applies to knowledge source {knowledge!r}")
    return max(usable, key=lambda m: m.model.calibration_auroc or 0.0)


def run_risk(
    config: MedgateConfig,
    datasets: Sequence[str] = DATASETS,
    train_limit: int | None = 300,
    test_limit: int | None = 200,
    feature_sets: Sequence[str] | None = None,
    alpha: float = 0.3,
    delta: float = 0.1,
    alphas: Sequence[float] = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4),
    ship: bool = False,
    recorded_only: bool = False,
    command: str = "",
    c_grid: Sequence[float] = C_GRID,
    engine: Engine | None = None,
    knowledge_rounds: int = K,
) -> dict[str, Any]:
    """Fit, choose and evaluate; returns everything the report shows. Missing items are
    recorded with ``engine`` (default: this process) and ``knowledge_rounds`` rounds each
    (``feature_sets`` default: every one those recordings can feed, :func:`feature_sets_for`)."""
    k = knowledge_rounds
    feature_sets = feature_sets_for(k, feature_sets)
    config = config.model_copy(update={"hrs": config.hrs.model_copy(update={"max_iterations": k})})
    train: dict[str, list[RecordedItem]] = {}
    recordings: dict[str, dict[str, str]] = {}
    orchestrator = ""
    for ds in datasets:
        records, name, orchestrator = recorded_items(
            config, ds, "train", train_limit, recorded_only, engine
        )
        share = own_context_share(records)
        recordings[ds] = {
            "train": name,
            "train_items": str(len(records)),
            "own_context_share": "n/a" if share is None else f"{share:.3f}",
        }
        if records:
            train[ds] = records
    if not train:
        raise ConfigError(
            "no training items are recorded yet: record them with `medgate eval hrs --dataset D "
            "--split train --rounds all --fit-centroid`"
        )
    recorded = Recorded(
        model=config.model,
        model_fingerprint=cached_model(config.model, config, call_cache(config)).fingerprint,
        knowledge=ORCHESTRATOR,
        knowledge_detail=orchestrator,
        rounds=k,
    )
    folder = SHIPPED_DIR if ship else fitted_dir(config)
    fitted: list[LoadedRiskModel] = []
    skipped = {fs: NO_RARITY for fs in feature_sets if _reads_rarity(fs) and not _has_rarity(train)}
    for fs in feature_sets:
        if fs in skipped:
            continue
        model = fit_risk_model(
            train, recorded, fs, alpha, delta, alphas, command=command, c_grid=c_grid
        )
        path = folder / artifact_name(recorded.model_fingerprint, fs)
        if fs in SHIPPABLE or not ship:
            save_risk_model(model, path)
            fitted.append(load_risk_model(path, recorded.model_fingerprint))
        else:  # measured only: a fresh install has no centroid for its own questions
            fitted.append(_unsaved(model, fs))
    deployable = [m for m in fitted if m.model.feature_set in SHIPPABLE]
    default = deployed_default(deployable or fitted, HRSConfig().knowledge)
    paper = paper_config(config, k)
    tests: dict[str, Any] = {}
    for ds in datasets:
        records, name, _ = recorded_items(config, ds, "test", test_limit, recorded_only, engine)
        recordings[ds].update(test=name, test_items=str(len(records)))
        if not records:
            continue
        lines = item_lines(
            ds,
            records,
            paper,
            default,
            default.model.operating_point.threshold,
            grid_config(paper, default.model),
        )
        others = {}
        for m in fitted:
            scored = item_lines(ds, records, paper, m, m.model.operating_point.threshold)
            others[m.model.feature_set] = risk_figures(scored, m.model.operating_point.alpha)
        tests[ds] = {
            "seconds": probe_seconds(records),
            "lines": lines,
            "headline": headline(lines, default.model.operating_point.alpha),
            "feature_sets": others,
        }
    return {
        "config": {
            "model": config.model,
            "alpha": alpha,
            "delta": delta,
            "K": k,
            "train_limit": train_limit,
            "test_limit": test_limit,
        },
        "recordings": recordings,
        "models": fitted,
        "skipped_feature_sets": skipped,
        "default": default,
        "tests": tests,
        "paper_thresholds": {
            "tau_e": paper.tau_e,
            "tau_p": paper.tau_p,
            "gate_e": paper.gate_e,
            "gate_p": paper.gate_p,
        },
        "command": command,
    }


NO_RARITY = (
    "not fitted: no training item has rarity (the recordings were made without a rarity "
    "centroid; fitting one now would change the recordings' spec)"
)


def _reads_rarity(feature_set: str) -> bool:
    return RARITY in FEATURE_NAMES[feature_set]


def _has_rarity(train: dict[str, list[RecordedItem]]) -> bool:
    return any(
        r.trajectory.iterations and r.trajectory.iterations[0].value("rarity") is not None
        for records in train.values()
        for r in records
    )


def _unsaved(model: RiskModel, feature_set: str) -> LoadedRiskModel:
    from medgate.config import SettingOrigin

    return LoadedRiskModel(
        model, SettingOrigin(source="artifact", artifact=f"unsaved/{feature_set}", sha256=None)
    )


@dataclass
class RiskOnRecording:
    """The risk rule on one recording, or why it does not apply (``note``)."""

    model: LoadedRiskModel | None
    note: str = ""
    lines: list[ItemLine] = field(default_factory=list)
    headline: dict[str, Any] | None = None


def risk_on_recording(config: MedgateConfig, dataset: str, rec: Recording) -> RiskOnRecording:
    """The risk model the gate would resolve for the recording's answerer, at the threshold the
    gate would use (configured, else its operating point), on every item of ``rec``, beside the
    paper's rule as configured (``medgate eval hrs``)."""
    peer = rec.spec.hrs.get("peer_model")
    risk = resolve(config, rec.spec.model_fingerprint, peer if isinstance(peer, str) else None)
    if risk is None:
        return RiskOnRecording(None, "no risk model fitted or shipped for this answerer")
    if risk.rounds and rec.spec.rounds != "all":
        return RiskOnRecording(
            None,
            f"{risk.id} reads knowledge rounds, which this recording holds only for some items; "
            "record with --rounds all",
        )
    cfg = config.hrs
    paper = (
        cfg
        if cfg.rule is not SuccessRule.RISK
        else cfg.model_copy(update={"rule": SuccessRule.ALGORITHM1})
    )
    configured = "risk_threshold" in cfg.model_fields_set
    threshold = cfg.risk_threshold if configured else risk.model.operating_point.threshold
    lines = item_lines(
        dataset, _with_rarity(rec), paper, risk, threshold, grid_config(paper, risk.model)
    )
    h = headline(lines, risk.model.operating_point.alpha)
    h["risk_model"] = {
        "id": risk.id,
        "sha256": risk.origin.sha256,
        "threshold": threshold,
        "threshold_origin": "configured" if configured else "artifact",
    }
    return RiskOnRecording(risk, lines=lines, headline=h)


def write_item_logs(result: dict[str, Any], out: Path) -> list[Path]:
    """``<out>/items/<dataset>_test.jsonl.gz`` for every evaluated dataset."""
    from medgate.eval.risk_report import items_path

    return [write_items(t["lines"], items_path(out, ds)) for ds, t in result["tests"].items()]
