"""The HRS paper's experiments, each a function from recordings to a result dict and tables.

Recording (model calls) happens in :func:`record`; everything else replays recordings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medgate.config import HRSConfig, MedgateConfig
from medgate.eval.analysis import (
    SIGNALS,
    baseline_signal,
    fill_rarity,
    orchestrator_calls,
    orchestrator_usage,
)
from medgate.eval.cache import CachedModel, CallCache
from medgate.eval.data import EvalItem, Split, dataset_split
from medgate.eval.engines import Engine
from medgate.eval.metrics import (
    GateMetrics,
    accuracy_at_coverage,
    auroc,
    gate_metrics,
    risk_coverage,
)
from medgate.eval.replay import check_coverage, outcomes
from medgate.eval.runner import (
    RecordedItem,
    RecordingSummary,
    Rounds,
    RunSpec,
    Runtime,
    TrajectoryStore,
    build_runtime,
    cached_model,
    call_cache,
    existing_centroid,
    record_split,
    store_dir,
    with_engine_threads,
    with_evidence,
    with_recorded_threads,
)
from medgate.hrs.rarity import RarityCentroid

#: The paper's Table 2 settings (tau_e, tau_p).
PAPER_THRESHOLDS: tuple[tuple[float, float], ...] = ((0.80, 0.40), (0.95, 0.30), (0.98, 0.30))
COVERAGES = (0.80, 0.90, 0.95)


@dataclass
class Recording:
    dataset: str
    split_name: str
    split: Split
    items: list[EvalItem]
    records: list[RecordedItem]
    spec: RunSpec
    summary: RecordingSummary
    store: TrajectoryStore
    centroid: RarityCentroid | None
    cache: CallCache
    #: The configuration the items were recorded or read with: the one given, with the thread
    #: count of the recording when none was configured (:func:`recorded_threads`).
    config: MedgateConfig

    @property
    def recorded_k(self) -> int:
        k = self.spec.hrs["max_iterations"]
        if not isinstance(k, int):
            raise TypeError("recording spec without an integer max_iterations")
        return k


def recording_runtime(
    config: MedgateConfig,
    dataset: str,
    split: Split,
    split_name: str,
    orchestrator: str,
    rounds: Rounds,
    cache: CallCache,
    use_centroid: bool = True,
) -> tuple[MedgateConfig, Runtime, RarityCentroid | None]:
    """The runtime to record or read ``split_name`` with, and the configuration it was built
    from: ``config``, with the thread count of the archived recording when ``config`` sets
    none and the archive has one of another count only (:func:`with_recorded_threads`)."""

    def assemble(config: MedgateConfig) -> tuple[Runtime, RarityCentroid | None]:
        answerer = cached_model(config.model, config, cache)
        centroid = (
            existing_centroid(config, dataset, split.train, answerer) if use_centroid else None
        )
        runtime = build_runtime(
            config, dataset, split, split_name, orchestrator, centroid, rounds, cache=cache
        )
        return runtime, centroid

    runtime, centroid = assemble(config)
    adopted = with_recorded_threads(config, runtime.spec)
    if adopted is None:
        return config, runtime, centroid
    return adopted, *assemble(adopted)


def record(
    config: MedgateConfig,
    dataset: str,
    split_name: str = "test",
    limit: int | None = None,
    orchestrator: str = "retrieval",
    rounds: Rounds = "ungated",
    split_seed: int = 42,
    cache: CallCache | None = None,
    use_centroid: bool = True,
    engine: Engine | None = None,
) -> Recording:
    """Record (or reuse) trajectories for the first ``limit`` items of a split, with ``engine``
    (default: this process)."""
    config = with_engine_threads(config, engine)
    split = dataset_split(dataset, config.data_dir, split_seed)
    items = split.part(split_name)[:limit] if limit else split.part(split_name)
    cache = cache or call_cache(config)
    config, runtime, centroid = recording_runtime(
        config, dataset, split, split_name, orchestrator, rounds, cache, use_centroid
    )
    records, summary, store = record_split(
        runtime, items, store_dir(config), engine=engine, archive=config.recordings_dir
    )
    records = with_evidence(records, items)
    return Recording(
        dataset,
        split_name,
        split,
        items,
        records,
        runtime.spec,
        summary,
        store,
        centroid,
        cache,
        config,
    )


def with_rarity(rec: Recording, model: CachedModel) -> list[RecordedItem]:
    """The recording's items with rarity filled from the training centroid, when one exists.

    Embeddings are read through the call cache only when they are already there (the baseline
    probe embeds each question), so this never starts the model.
    """
    if rec.centroid is None:
        return rec.records
    embeddings: dict[str, list[float]] = {}
    for item in rec.items:
        embeddings[item.id] = model.embed(item.question)
    return fill_rarity(rec.records, embeddings, rec.centroid)


def combined_risk(record_: RecordedItem, cfg: HRSConfig) -> float:
    """max(H_e / gate_e, H_p / gate_p): the baseline gate releases exactly when this is < 1."""
    e = baseline_signal(record_, "entropy")
    p = baseline_signal(record_, "perplexity")
    e = 1.0 if e is None else e
    p = 1.0 if p is None else p
    return max(
        e / cfg.gate_e if cfg.gate_e else math.inf, p / cfg.gate_p if cfg.gate_p else math.inf
    )


def metrics_row(
    records: Sequence[RecordedItem],
    cfg: HRSConfig,
    recorded_k: int,
    oracle_revert: bool = False,
    removed: Sequence[str] = (),
) -> GateMetrics:
    check_coverage(records, cfg, recorded_k)
    return gate_metrics(outcomes(records, cfg, oracle_revert, removed))


def selective(records: Sequence[RecordedItem], cfg: HRSConfig) -> dict[str, Any]:
    """AUROC of each baseline signal and of the combined risk for a wrong baseline answer,
    the combined risk's risk-coverage curve, AURC and accuracy at fixed coverage."""
    scored = [r for r in records if r.trajectory.iterations]
    wrong = [r.trajectory.iterations[0].answer != r.gold for r in scored]
    out: dict[str, Any] = {"n": len(scored), "n_wrong": sum(wrong), "auroc": {}}
    for name in SIGNALS:
        pairs = [(baseline_signal(r, name), w) for r, w in zip(scored, wrong, strict=True)]
        defined = [(v, w) for v, w in pairs if v is not None]
        out["auroc"][name] = (
            auroc([v for v, _ in defined], [w for _, w in defined]) if defined else None
        )
    combined = [combined_risk(r, cfg) for r in scored]
    out["auroc"]["combined"] = auroc(combined, wrong)
    curve = risk_coverage(combined, wrong)
    out["aurc"] = curve.aurc
    out["curve"] = {"coverage": curve.coverage, "risk": curve.risk}
    out["accuracy_at_coverage"] = (
        {f"{int(c * 100)}%": accuracy_at_coverage(combined, wrong, c) for c in COVERAGES}
        if scored
        else {}
    )
    return out


def latency(records: Sequence[RecordedItem]) -> float | None:
    if not records:
        return None
    return sum(r.model_seconds for r in records) / len(records)


def usage_summary(records: Sequence[RecordedItem]) -> dict[str, Any]:
    usages = orchestrator_usage(records)
    calls = orchestrator_calls(records)
    n = len(usages)
    return {
        "orchestrator_calls": calls,
        "calls_with_usage": n,
        "avg_input_tokens": sum(u.prompt_tokens for u in usages) / n if n else 0.0,
        "avg_output_tokens": sum(u.completion_tokens for u in usages) / n if n else 0.0,
        "cost_per_call_usd": sum(u.cost_usd for u in usages) / n if n else 0.0,
        "orchestrator_seconds_per_call": (sum(u.seconds for u in usages) / n if n else 0.0),
        "latency_s": latency(records),
    }


def provenance(rec: Recording, config: MedgateConfig) -> dict[str, Any]:
    n_rounds = sum(1 for r in rec.records if r.rounds_recorded)
    return {
        "dataset": rec.dataset,
        "split": rec.split_name,
        "n_items": len(rec.records),
        "split_sizes": {"train": len(rec.split.train), "test": len(rec.split.test)},
        "model": config.model,
        "model_sha256": rec.spec.model_fingerprint,
        "threads": rec.spec.threads,
        "orchestrator": rec.spec.orchestrator,
        "recorded_k": rec.recorded_k,
        "rounds_policy": rec.spec.rounds,
        "items_with_rounds": n_rounds,
        "rarity_centroid": rec.spec.centroid,
        "recording": rec.store.path.name,
        "recorded_at": [
            min((r.recorded_at for r in rec.records), default=""),
            max((r.recorded_at for r in rec.records), default=""),
        ],
        "model_seconds_total": sum(r.model_seconds for r in rec.records),
    }


def hrs_run(rec: Recording, config: MedgateConfig, model: CachedModel) -> dict[str, Any]:
    """The Table 2 metrics at the configured thresholds, the oracle row, selective metrics."""
    cfg = config.hrs
    records = with_rarity(rec, model)
    row = metrics_row(records, cfg, rec.recorded_k)
    oracle = metrics_row(records, cfg, rec.recorded_k, oracle_revert=True)
    return {
        "provenance": provenance(rec, config),
        "thresholds": {
            "tau_e": cfg.tau_e,
            "tau_p": cfg.tau_p,
            "gate_e": cfg.gate_e,
            "gate_p": cfg.gate_p,
            "rule": cfg.rule.value,
            "revert": cfg.revert.value,
            "K": cfg.max_iterations,
        },
        "metrics": row.model_dump(),
        "oracle_revert_metrics": oracle.model_dump(),
        "selective": selective(records, cfg),
        "usage": usage_summary(records),
        "run": {
            "recorded_now": rec.summary.recorded,
            "reused": rec.summary.reused,
            "seconds": rec.summary.seconds,
            "cache_hits": rec.summary.cache_hits,
            "cache_misses": rec.summary.cache_misses,
            "model_seconds": rec.summary.model_seconds,
            "engine": rec.summary.engine,
            "workers": rec.summary.workers,
        },
    }


def eval_dir(config: MedgateConfig) -> Path:
    return store_dir(config)


# -- Table 2: threshold sensitivity -------------------------------------------------------------


def threshold_grid() -> list[tuple[float, float]]:
    taus_e = [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99]
    taus_p = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    return [(e, p) for e in taus_e for p in taus_p]


def thresholds(rec: Recording, config: MedgateConfig, model: CachedModel) -> dict[str, Any]:
    """Every setting replayed from one recording: the paper's three and a finer grid."""
    records = with_rarity(rec, model)
    rows = []
    for kind, grid in (("paper", list(PAPER_THRESHOLDS)), ("grid", threshold_grid())):
        for e, p in grid:
            cfg = config.hrs.model_copy(update={"tau_e": e, "tau_p": p})
            row: dict[str, Any] = {"kind": kind, "tau_e": e, "tau_p": p}
            row["metrics"] = metrics_row(records, cfg, rec.recorded_k).model_dump()
            if kind == "paper":
                row["oracle_revert_metrics"] = metrics_row(
                    records, cfg, rec.recorded_k, oracle_revert=True
                ).model_dump()
            rows.append(row)
    return {
        "provenance": provenance(rec, config),
        "gate": [config.hrs.gate_e, config.hrs.gate_p],
        "K": config.hrs.max_iterations,
        "rows": rows,
        "selective": selective(records, config.hrs),
    }


# -- Table 4: Mann-Whitney U per signal ------------------------------------------------------------


def mann_whitney(rec: Recording, config: MedgateConfig, model: CachedModel) -> dict[str, Any]:
    """Baseline signal values of escalated vs. non-escalated items at the configured setting.

    Effect sizes: the common-language effect size U/(n1*n2) (probability that an escalated item's
    value exceeds a non-escalated one's, ties half) and the rank-biserial correlation 2*CL - 1.
    """
    from scipy.stats import mannwhitneyu

    records = with_rarity(rec, model)
    check_coverage(records, config.hrs, rec.recorded_k)
    outs = outcomes(records, config.hrs)
    rows = []
    for name in SIGNALS:
        esc: list[float] = []
        non: list[float] = []
        for r, o in zip(records, outs, strict=True):
            v = baseline_signal(r, name)
            if v is None:
                continue
            (esc if o.escalated else non).append(v)
        row: dict[str, Any] = {
            "signal": name,
            "n_escalated": len(esc),
            "n_non_escalated": len(non),
            "mean_escalated": sum(esc) / len(esc) if esc else None,
            "mean_non_escalated": sum(non) / len(non) if non else None,
            "U": None,
            "p": None,
            "significant": None,
            "common_language": None,
            "rank_biserial": None,
        }
        if esc and non and len(set(esc + non)) > 1:
            res = mannwhitneyu(esc, non, alternative="two-sided")
            cl = float(res.statistic) / (len(esc) * len(non))
            row.update(
                U=float(res.statistic),
                p=float(res.pvalue),
                significant=bool(res.pvalue < 0.05),
                common_language=cl,
                rank_biserial=2 * cl - 1,
            )
        rows.append(row)
    return {"provenance": provenance(rec, config), "rows": rows}


# -- Tables 5 and 6: seeds and leave-one-signal-out ---------------------------------------------

PAPER_SEEDS = (30, 42, 100, 126, 999)


def _summary_of(
    records: Sequence[RecordedItem], cfg: HRSConfig, k: int, **kw: Any
) -> dict[str, Any]:
    m = metrics_row(records, cfg, k, **kw).model_dump()
    m.update(usage_summary(records))
    return m


def seeds(
    config: MedgateConfig,
    dataset: str,
    limit: int | None,
    seed_list: Sequence[int],
    orchestrator: str,
    rounds: Rounds,
) -> dict[str, Any]:
    """One recording per sampling seed (greedy calls are shared through the cache)."""
    from medgate.eval.metrics import mean_std

    runs = []
    first: Recording | None = None
    for s in seed_list:
        cfg = config.model_copy(update={"hrs": config.hrs.model_copy(update={"seed": s})})
        rec = record(cfg, dataset, "test", limit, orchestrator, rounds)
        first = first or rec
        runs.append({"seed": s, **_summary_of(rec.records, cfg.hrs, rec.recorded_k)})
    keys = [
        "safety_gain",
        "auto_answer_accuracy",
        "baseline_accuracy",
        "escalation_rate",
        "avg_input_tokens",
        "avg_output_tokens",
        "latency_s",
    ]
    agg = {k: mean_std([r[k] for r in runs]) for k in keys}
    assert first is not None
    return {"provenance": provenance(first, config), "runs": runs, "mean_std": agg}


def loso(
    config: MedgateConfig,
    dataset: str,
    limit: int | None,
    seed_list: Sequence[int],
    orchestrator: str,
    rounds: Rounds,
) -> dict[str, Any]:
    """Leave one signal out. A decision signal is dropped from the rule in replay (it never
    holds an answer back); a guidance signal is dropped from the gate, so the orchestrator no
    longer sees it, which needs a new recording (shared calls come from the cache)."""
    from medgate.eval.metrics import mean_std

    configs: list[tuple[str, list[str], list[str]]] = [("full", list(config.hrs.signals), [])]
    for s in config.hrs.signals:
        if s in ("entropy", "perplexity"):
            configs.append((f"no {s}", list(config.hrs.signals), [s]))
        else:
            configs.append((f"no {s}", [x for x in config.hrs.signals if x != s], []))
    rows = []
    first: Recording | None = None
    for label, signal_list, removed in configs:
        per_seed = []
        for sd in seed_list:
            hrs = config.hrs.model_copy(update={"seed": sd, "signals": signal_list})
            cfg = config.model_copy(update={"hrs": hrs})
            rec = record(cfg, dataset, "test", limit, orchestrator, rounds)
            first = first or rec
            per_seed.append(
                metrics_row(rec.records, hrs, rec.recorded_k, removed=removed).model_dump()
            )
        row: dict[str, Any] = {"configuration": label, "seeds": list(seed_list)}
        for k in ("safety_gain", "auto_answer_accuracy", "escalation_rate"):
            row[k] = mean_std([m[k] for m in per_seed])
        rows.append(row)
    assert first is not None
    return {"provenance": provenance(first, config), "rows": rows}


# -- Table 3: orchestrators -----------------------------------------------------------------------


def orchestrators(
    config: MedgateConfig,
    dataset: str,
    limit: int | None,
    names: Sequence[str],
    rounds: Rounds,
) -> dict[str, Any]:
    rows = []
    first: Recording | None = None
    for name in names:
        rec = record(config, dataset, "test", limit, name, rounds)
        first = first or rec
        row: dict[str, Any] = {"orchestrator": rec.spec.orchestrator}
        row.update(_summary_of(rec.records, config.hrs, rec.recorded_k))
        row["errors"] = sum(
            1 for r in rec.records if r.trajectory.stopped and r.trajectory.stopped.value == "error"
        )
        row["abstained"] = sum(
            1
            for r in rec.records
            if r.trajectory.stopped and r.trajectory.stopped.value == "abstain"
        )
        rows.append(row)
    assert first is not None
    return {"provenance": provenance(first, config), "rows": rows}


# -- Tables 7 and 8: six classifiers on question embeddings ----------------------------------------

CLASSIFIERS = ("logistic regression", "random forest", "gradient boosting", "SVM", "KNN", "MLP")


def _classifier(name: str, seed: int) -> Any:
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    models: dict[str, Any] = {
        "logistic regression": LogisticRegression(max_iter=2000, random_state=seed),
        "random forest": RandomForestClassifier(n_estimators=200, random_state=seed),
        "gradient boosting": GradientBoostingClassifier(random_state=seed),
        "SVM": SVC(random_state=seed),
        "KNN": KNeighborsClassifier(n_neighbors=5),
        "MLP": MLPClassifier(hidden_layer_sizes=(128,), max_iter=500, random_state=seed),
    }
    return make_pipeline(StandardScaler(), models[name])


def classifiers(
    config: MedgateConfig,
    dataset: str,
    escalated_ids: set[str] | None,
    train_limit: int | None = None,
    seed: int = 42,
) -> dict[str, Any]:
    """Six classifiers trained on the answering model's training-question embeddings, scored
    on the test split (Table 7) and on the test items the gate escalated (Table 8)."""
    import numpy as np
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    from medgate.eval.progress import Progress

    split = dataset_split(dataset, config.data_dir, 42)
    cache = call_cache(config)
    model = cached_model(config.model, config, cache)
    train = split.train[:train_limit] if train_limit else split.train
    test = split.test

    def embed(items: Sequence[EvalItem], label: str) -> Any:
        bar = Progress(len(items), label)
        rows = []
        for it in items:
            rows.append(model.embed(it.question))
            bar.update()
        return np.asarray(rows, dtype=np.float64)

    x_train, x_test = embed(train, f"{dataset} train embeddings"), embed(test, f"{dataset} test")
    y_train = [i.gold for i in train]
    y_test = [i.gold for i in test]
    esc_mask = [i.id in (escalated_ids or set()) for i in test]
    rows: list[dict[str, Any]] = []
    for name in CLASSIFIERS:
        clf = _classifier(name, seed).fit(x_train, y_train)
        pred = list(clf.predict(x_test))
        p, r, f, _ = precision_recall_fscore_support(
            y_test, pred, average="weighted", zero_division=0
        )
        esc_pred = [pr for pr, m in zip(pred, esc_mask, strict=True) if m]
        esc_gold = [g for g, m in zip(y_test, esc_mask, strict=True) if m]
        rows.append(
            {
                "classifier": name,
                "accuracy": float(accuracy_score(y_test, pred)),
                "precision": float(p),
                "recall": float(r),
                "f1": float(f),
                "escalated_accuracy": (
                    float(accuracy_score(esc_gold, esc_pred)) if esc_gold else None
                ),
            }
        )
    majority = max(set(y_test), key=y_test.count)
    return {
        "dataset": dataset,
        "model": config.model,
        "model_sha256": model.fingerprint,
        "n_train": len(train),
        "n_test": len(test),
        "n_escalated": sum(esc_mask),
        "majority_class_accuracy": y_test.count(majority) / len(y_test),
        "rows": rows,
        "average": {
            k: sum(r[k] for r in rows) / len(rows)
            for k in ("accuracy", "precision", "recall", "f1")
        },
        "average_escalated_accuracy": (
            sum(r["escalated_accuracy"] for r in rows) / len(rows) if any(esc_mask) else None
        ),
    }
