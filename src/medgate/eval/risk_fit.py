"""Fitting a risk model on training-split recordings and choosing its operating point.

Training items only, never a test item. Each dataset's recorded training items are divided by a
seeded hash of their id (stable as recordings grow) into a fitting part (two thirds) and a
calibration part (one third):

1. On the fitting part, a logistic regression over standardised features, its L2 strength
   chosen by stratified 5-fold cross-validation (AUROC); the out-of-fold AUROC is kept.
2. On the calibration part, which the model never saw: its AUROC, and the risk threshold that
   conformal risk control certifies for a target error alpha, in the Learn-then-Test form of
   :mod:`medgate.eval.calibrate`. The candidate thresholds are fixed before the calibration
   items are read (quantiles of the fitted model's risks on the fitting part); for each, H0
   "error among released answers > alpha" is tested with the exact binomial tail, Bonferroni
   over the candidates, and the certified threshold releasing the most is kept. With
   probability 1 - delta the error among released answers is then at most alpha for items
   exchangeable with the pooled calibration items. If none is certified, nothing is released.
3. On the same calibration items, the paper's grid (its Table 2 settings as the baseline gate)
   at the same alpha, for the paper's rule.

scikit-learn is needed here only (``pip install 'medgate[eval]'``); the artifact is applied with
numpy (:mod:`medgate.hrs.risk`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from medgate.errors import InputError
from medgate.eval.calibrate import Scored, binom_p_value, choose_grid, now
from medgate.eval.experiments import PAPER_THRESHOLDS
from medgate.eval.metrics import auroc
from medgate.eval.runner import RecordedItem
from medgate.hrs import features
from medgate.hrs.risk import DatasetFigures, OperatingPoint, RiskModel

#: Inverse regularisation strengths tried by cross-validation.
C_GRID = tuple(float(c) for c in np.logspace(-3, 2, 11))
#: Coverages whose fitting-part risk quantiles are the candidate thresholds.
COVERAGES = tuple(round(0.05 * i, 2) for i in range(1, 21))
SPLIT_SALT = "medgate-risk-calibration"
FOLDS = 5


@dataclass(frozen=True)
class Example:
    """One recorded training item: its dataset, trajectory and whether its first answer is
    wrong."""

    dataset: str
    record: RecordedItem

    @property
    def wrong(self) -> bool:
        its = self.record.trajectory.iterations
        return not its or its[0].answer != self.record.gold


def is_calibration(dataset: str, item_id: str) -> bool:
    """The seeded third of a dataset's training items kept for calibration."""
    digest = hashlib.sha256(f"{SPLIT_SALT}:{dataset}:{item_id}".encode()).hexdigest()
    return int(digest[:8], 16) % 3 == 0


def examples(recordings: Mapping[str, Sequence[RecordedItem]]) -> list[Example]:
    """Every recorded training item with a first answer (a failed probe has no features and is
    escalated in deployment, so it teaches the model nothing)."""
    return [
        Example(ds, r) for ds, recs in recordings.items() for r in recs if r.trajectory.iterations
    ]


def matrix(
    rows: Sequence[Example], names: Sequence[str], rounds: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], list[Example]]:
    """Features, labels (1 = wrong first answer) and the examples every feature was computed
    for; the others are left out."""
    xs, ys, kept = [], [], []
    for ex in rows:
        values = features.compute(ex.record.trajectory, names, rounds)
        if any(v is None for v in values.values()):
            continue
        xs.append([values[n] for n in names])
        ys.append(int(ex.wrong))
        kept.append(ex)
    x = np.asarray(xs, dtype=np.float64).reshape(len(xs), len(names))
    return x, np.asarray(ys, dtype=np.int64), kept


@dataclass
class Fitted:
    """A fitted logistic regression with its cross-validated figures."""

    mean: np.ndarray[Any, Any]
    scale: np.ndarray[Any, Any]
    coef: np.ndarray[Any, Any]
    intercept: float
    c: float
    oof: np.ndarray[Any, Any]

    def risk(self, x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        z = (x - self.mean) / self.scale
        out: np.ndarray[Any, Any] = 1.0 / (1.0 + np.exp(-(z @ self.coef + self.intercept)))
        return out


def fit_logistic(
    x: np.ndarray[Any, Any],
    y: np.ndarray[Any, Any],
    strata: Sequence[str],
    seed: int = 42,
    c_grid: Sequence[float] = C_GRID,
) -> Fitted:
    """Standardise, choose C by stratified k-fold AUROC, refit on all rows; keep out-of-fold
    risks at the chosen C."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_predict
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    smaller = min(int(y.sum()), len(y) - int(y.sum()))
    if smaller < FOLDS:
        raise InputError(
            f"{len(y)} fitting items hold only {smaller} of the rarer class (right or wrong "
            f"first answers); {FOLDS}-fold cross-validation needs at least {FOLDS}: record more "
            "training items"
        )
    pipe = Pipeline([("scale", StandardScaler()), ("lr", LogisticRegression(max_iter=5000))])
    folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=seed)
    split = list(folds.split(x, list(strata)))
    search = GridSearchCV(pipe, {"lr__C": list(c_grid)}, cv=split, scoring="roc_auc")
    search.fit(x, y)
    best = search.best_estimator_
    c = float(search.best_params_["lr__C"])
    oof = cross_val_predict(
        Pipeline([("scale", StandardScaler()), ("lr", LogisticRegression(C=c, max_iter=5000))]),
        x,
        y,
        cv=split,
        method="predict_proba",
    )[:, 1]
    scaler, lr = best.named_steps["scale"], best.named_steps["lr"]
    return Fitted(
        mean=np.asarray(scaler.mean_, dtype=np.float64),
        scale=np.asarray(scaler.scale_, dtype=np.float64),
        coef=np.asarray(lr.coef_[0], dtype=np.float64),
        intercept=float(lr.intercept_[0]),
        c=c,
        oof=np.asarray(oof, dtype=np.float64),
    )


def candidate_thresholds(fit_risks: Sequence[float]) -> list[float]:
    """Thresholds fixed before any calibration item is read: the fitting part's risk quantiles
    at coverages 5%, 10%, ..., 100% (the last releases everything)."""
    qs = np.quantile(np.asarray(fit_risks, dtype=np.float64), [c for c in COVERAGES[:-1]])
    return sorted({*(float(q) for q in qs), 1.0})


def certify(
    risks: Sequence[float],
    wrong: Sequence[bool],
    candidates: Sequence[float],
    alpha: float,
    delta: float,
) -> OperatingPoint:
    """The certified threshold that releases the most calibration items (risk <= threshold),
    Bonferroni over ``candidates``; nothing released when none is certified."""
    level = delta / max(1, len(candidates))
    best: OperatingPoint | None = None
    for t in candidates:
        released = [w for r, w in zip(risks, wrong, strict=True) if r <= t]
        errors = sum(released)
        pv = binom_p_value(errors, len(released), alpha)
        if released and pv <= level and (best is None or len(released) > best.released):
            best = OperatingPoint(
                method="conformal (Learn-then-Test, Bonferroni)",
                alpha=alpha,
                delta=delta,
                threshold=t,
                certified=True,
                n=len(risks),
                released=len(released),
                errors=errors,
                error_rate=errors / len(released),
                p_value=pv,
            )
    if best is None:
        return OperatingPoint(
            method="conformal (none certified: escalate all)",
            alpha=alpha,
            delta=delta,
            threshold=0.0,
            certified=False,
            n=len(risks),
            released=0,
            errors=0,
            error_rate=None,
        )
    return best


def _scored(rows: Sequence[Example]) -> list[Scored]:
    out = []
    for ex in rows:
        base = ex.record.trajectory.iterations[0]
        e, p = base.value("entropy"), base.value("perplexity")
        out.append(
            Scored(
                entropy=1.0 if e is None else e,
                perplexity=1.0 if p is None else p,
                correct=not ex.wrong,
            )
        )
    return out


def _auroc(scores: Sequence[float], wrong: Sequence[bool]) -> float | None:
    return auroc(list(scores), list(wrong)) if scores else None


def _digest(rows: Sequence[Example]) -> str:
    ids = sorted(f"{ex.dataset}:{ex.record.item_id}" for ex in rows)
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:12]


@dataclass
class Recorded:
    """What the fit reads about the recordings: the answerer and the knowledge source."""

    model: str
    model_fingerprint: str
    knowledge: str
    knowledge_detail: str
    rounds: int
    peer_model: str | None = None
    peer_fingerprint: str | None = None


def fit_risk_model(
    recordings: Mapping[str, Sequence[RecordedItem]],
    recorded: Recorded,
    feature_set: str,
    alpha: float,
    delta: float,
    alphas: Sequence[float] = (),
    seed: int = 42,
    command: str = "",
    c_grid: Sequence[float] = C_GRID,
) -> RiskModel:
    """Fit one feature set on the pooled training recordings and choose its operating point."""
    import sklearn

    names = features.FEATURE_SETS[feature_set]
    rounds = recorded.rounds if features.needs_rounds(names) else 0
    pool = examples(recordings)
    fit_rows = [e for e in pool if not is_calibration(e.dataset, e.record.item_id)]
    cal_rows = [e for e in pool if is_calibration(e.dataset, e.record.item_id)]
    x_fit, y_fit, fit_kept = matrix(fit_rows, names, rounds)
    strata = [f"{e.dataset}:{int(e.wrong)}" for e in fit_kept]
    fitted = fit_logistic(x_fit, y_fit, strata, seed, c_grid)
    x_cal, y_cal, cal_kept = matrix(cal_rows, names, rounds)
    cal_risk = fitted.risk(x_cal).tolist()
    cal_wrong = [bool(v) for v in y_cal]
    candidates = candidate_thresholds(fitted.risk(x_fit).tolist())
    point = certify(cal_risk, cal_wrong, candidates, alpha, delta)
    others = [certify(cal_risk, cal_wrong, candidates, a, delta) for a in sorted(set(alphas))]
    per_dataset = {}
    for ds in recordings:
        fi = [i for i, e in enumerate(fit_kept) if e.dataset == ds]
        ci = [i for i, e in enumerate(cal_kept) if e.dataset == ds]
        per_dataset[ds] = DatasetFigures(
            n_fit=len(fi),
            n_calibration=len(ci),
            cv_auroc=_auroc([float(fitted.oof[i]) for i in fi], [bool(y_fit[i]) for i in fi]),
            calibration_auroc=_auroc([cal_risk[i] for i in ci], [cal_wrong[i] for i in ci]),
        )
    grid = choose_grid(_scored(cal_rows), alpha, PAPER_THRESHOLDS)
    counts = ", ".join(
        f"{ds} {per_dataset[ds].n_fit}+{per_dataset[ds].n_calibration}" for ds in recordings
    )
    return RiskModel(
        model=recorded.model,
        model_fingerprint=recorded.model_fingerprint,
        feature_set=feature_set,
        features=list(names),
        rounds=rounds,
        knowledge=recorded.knowledge if rounds else None,
        knowledge_detail=recorded.knowledge_detail if rounds else "",
        peer_model=recorded.peer_model if features.reads_peer(names) else None,
        peer_fingerprint=recorded.peer_fingerprint if features.reads_peer(names) else None,
        mean=fitted.mean.tolist(),
        scale=fitted.scale.tolist(),
        coef=fitted.coef.tolist(),
        intercept=fitted.intercept,
        regularisation_c=fitted.c,
        fitted_on=(
            f"training splits (seed 42) of {', '.join(recordings)}: fitting + calibration items "
            f"{counts} (ids {_digest(fit_kept)} / {_digest(cal_kept)}); "
            f"{len(fit_rows) - len(fit_kept) + len(cal_rows) - len(cal_kept)} left out for a "
            "feature not computed"
        ),
        cv_auroc=_auroc(fitted.oof.tolist(), [bool(v) for v in y_fit]),
        calibration_auroc=_auroc(cal_risk, cal_wrong),
        per_dataset=per_dataset,
        operating_point=point,
        operating_points=others,
        grid=grid,
        sklearn_version=sklearn.__version__,
        fitted_at=now(),
        command=command,
    )
