"""``medgate calibrate``: fit on the training split, save, and report achieved test error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from medgate.config import MedgateConfig
from medgate.eval.calibrate import (
    CalibrationArtifact,
    Choice,
    Scored,
    calibration_path,
    choose_conformal,
    choose_grid,
    evaluate,
    now,
    save_artifact,
)
from medgate.eval.data import dataset_split, items_digest
from medgate.eval.experiments import PAPER_THRESHOLDS, record
from medgate.eval.runner import RecordedItem, cached_model, call_cache, fit_training_centroid
from medgate.hrs.rarity import rarity_artifact_path, save_centroid


def scored(records: Sequence[RecordedItem]) -> list[Scored]:
    out = []
    for r in records:
        if not r.trajectory.iterations:
            continue  # a failed probe is escalated in deployment; it never counts as released
        it = r.trajectory.iterations[0]
        e, p = it.value("entropy"), it.value("perplexity")
        out.append(
            Scored(
                entropy=1.0 if e is None else e,
                perplexity=1.0 if p is None else p,
                correct=it.answer == r.gold,
            )
        )
    return out


def _test_stats(test: Sequence[Scored], c: Choice) -> dict[str, Any]:
    n_rel, err = evaluate(test, c.gate_e, c.gate_p)
    return {
        "n": len(test),
        "released": n_rel,
        "coverage": n_rel / len(test) if test else None,
        "errors": err,
        "error_rate": err / n_rel if n_rel else None,
    }


def run_calibration(
    config: MedgateConfig,
    dataset: str,
    alpha: float,
    delta: float,
    train_limit: int,
    test_limit: int | None,
    method: str,
    alphas: Sequence[float],
) -> dict[str, Any]:
    split = dataset_split(dataset, config.data_dir, 42)
    cache = call_cache(config)
    model = cached_model(config.model, config, cache)
    # 1. The rarity centroid on the whole training split (embeddings only).
    centroid, _ = fit_training_centroid(config, dataset, split.train, model)
    rarity_path = rarity_artifact_path(config, model)
    save_centroid(centroid, rarity_path)
    # 2. Baselines of a training subset (K=0: the thresholds act on round-0 signals).
    base_cfg = config.model_copy(
        update={"hrs": config.hrs.model_copy(update={"max_iterations": 0})}
    )
    train_rec = record(base_cfg, dataset, "train", train_limit, "retrieval", "ungated", cache=cache)
    train = scored(train_rec.records)
    # 3. Test baselines (the calls are those `medgate eval` made, so they come from the cache).
    test_rec = record(base_cfg, dataset, "test", test_limit, "retrieval", "ungated", cache=cache)
    test = scored(test_rec.records)
    rows: list[dict[str, Any]] = []
    for a in sorted({*alphas, alpha}):
        grid = choose_grid(train, a, PAPER_THRESHOLDS)
        conf = choose_conformal(train, a, delta)
        rows.append(
            {
                "alpha": a,
                "paper-grid": {"train": grid.model_dump(), "test": _test_stats(test, grid)},
                "conformal": {"train": conf.model_dump(), "test": _test_stats(test, conf)},
            }
        )
    chosen_row = next(r for r in rows if r["alpha"] == alpha)
    key = "conformal" if method == "conformal" else "paper-grid"
    saved = Choice.model_validate(chosen_row[key]["train"])
    artifact = CalibrationArtifact(
        model_fingerprint=model.fingerprint,
        dataset=dataset,
        fitted_on=f"{dataset} train split (seed 42): {len(train)} baselines "
        f"(ids {items_digest(train_rec.items)}), centroid on {centroid.n_questions} questions",
        alpha=alpha,
        delta=delta,
        method=saved.method,
        gate_e=saved.gate_e,
        gate_p=saved.gate_p,
        tau_e=saved.gate_e,
        tau_p=saved.gate_p,
        rarity_artifact=str(rarity_path),
        choices=[
            Choice.model_validate(chosen_row[k]["train"]) for k in ("paper-grid", "conformal")
        ],
        fitted_at=now(),
    )
    path = calibration_path(config, model.fingerprint)
    save_artifact(artifact, path)
    return {
        "dataset": dataset,
        "model": config.model,
        "model_sha256": model.fingerprint,
        "alpha": alpha,
        "delta": delta,
        "method": method,
        "n_train": len(train),
        "n_test": len(test),
        "train_recording": train_rec.store.path.name,
        "test_recording": test_rec.store.path.name,
        "artifact_path": str(path),
        "rarity_artifact": str(rarity_path),
        "saved": saved.model_dump(),
        "alphas": rows,
    }
