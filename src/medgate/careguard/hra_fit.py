"""Fitting and measuring HRA's risk model on HaluEval 2.0 biomedical answers.

**Labels.** Each HaluEval answer comes with facts extracted from it, each labelled true or false
by annotators. 186 of the 200 answers are labelled hallucinated as a whole (any false fact), too
few right ones to measure a ranking on, so a draft counts as *wrong* here when at least half of
its labelled facts are false (:data:`WRONG_SHARE`); answers with no labelled fact are left out.

**Split.** By id with a seeded hash (:data:`SPLIT_SEED`): 60% train, 20% validation, 20% test.
The items are also ordered by a second seeded hash, so the first ``n`` are an even draw across
the parts; the model readings (``scripts/collect_hra.py``) cover a prefix of that order.

**Fit.** Logistic regression (scikit-learn, only needed to fit) over the standardised features
of :mod:`medgate.careguard.hra_risk`, fitted on train for each C of a grid; the C with the best
validation AUROC is kept, and the threshold is the P(wrong) that maximises balanced accuracy on
validation. The test part is scored once, with AUROC and a seeded bootstrap 95% interval for
the model and for each feature alone.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from medgate.backends.base import LanguageModel
from medgate.careguard.consistency import measure_consistency
from medgate.careguard.degeneration import assess_degeneration
from medgate.careguard.generator import Generator, token_stats
from medgate.careguard.hra_risk import FEATURES, HRARiskArtifact, risk_features
from medgate.config import CareGuardConfig
from medgate.embeddings import SentenceEmbedder
from medgate.eval.metrics import auroc, bootstrap_ci
from medgate.records import Record

DATA_FILE = Path("halueval2_biomed") / "halueval2_biomed.jsonl"
SPLIT_SEED = "medgate-hra-2026"
WRONG_SHARE = 0.5
C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
RESAMPLES = 2000
BOOTSTRAP_SEED = 11


@dataclass(frozen=True)
class LabelledAnswer:
    id: str
    question: str
    answer: str
    facts: int
    false_share: float
    split: str

    @property
    def wrong(self) -> bool:
        return self.false_share >= WRONG_SHARE


def _unit(key: str, salt: str) -> float:
    digest = hashlib.sha256(f"{SPLIT_SEED}:{salt}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(item_id: str) -> str:
    u = _unit(item_id, "split")
    return "train" if u < 0.6 else "validation" if u < 0.8 else "test"


def halueval_items(data_dir: Path) -> list[LabelledAnswer]:
    """The labelled answers, in the seeded order (see the module docstring)."""
    path = data_dir / DATA_FILE
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    items = []
    for row in rows:
        labels = [x for x in row.get("fact_labels", []) if x in ("true", "false")]
        if not labels:
            continue
        items.append(
            LabelledAnswer(
                id=row["id"],
                question=row["question"],
                answer=row["answer"],
                facts=len(labels),
                false_share=sum(x == "false" for x in labels) / len(labels),
                split=split_of(row["id"]),
            )
        )
    return sorted(items, key=lambda i: _unit(i.id, "order"))


def consistency_sampler(model: LanguageModel, config: CareGuardConfig, samples: int) -> Generator:
    """A generator that draws ``samples`` consistency samples with the gate's own settings
    (``careguard.hra_risk``), so readings made for fitting match what the gate reads."""
    return Generator(
        model,
        seed=config.seed,
        samples=samples,
        sample_temperature=config.hra_risk.sample_temperature,
        sample_max_tokens=config.hra_risk.sample_max_tokens,
        repeat_penalty=config.repeat_penalty,
    )


def read_items(path: Path) -> list[dict[str, Any]]:
    """The collected readings (gzipped JSON lines)."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` (the K-th of N interleaved shards of a collection, ``0 <= K < N``) as ``(K, N)``:
    the collecting scripts' ``--shard`` type, whose error argparse prints as a usage error."""
    k, sep, n = text.partition("/")
    if not (sep and k.strip().isdigit() and n.strip().isdigit()) or not int(k) < int(n):
        raise argparse.ArgumentTypeError(f"a shard is K/N with 0 <= K < N, e.g. 0/2; got {text!r}")
    return int(k), int(n)


def append_item(path: Path, row: dict[str, Any]) -> None:
    """Append one reading to a collection :func:`read_items` reads (a gzip member per line, so
    an interrupted collection keeps every line written before)."""
    with gzip.open(path, "at", encoding="utf-8") as sink:
        sink.write(json.dumps(row) + "\n")


def item_features(
    row: dict[str, Any], answer: str, samples: int, embedder: SentenceEmbedder
) -> dict[str, float]:
    """The risk model's features of one collected item, as the gate computes them for a draft
    (a judge that failed counts as 5)."""
    judge = row.get("judge") or 5
    consistency = measure_consistency(answer, row["samples"][:samples], embedder)
    degeneration = assess_degeneration(answer)
    return risk_features(int(judge), consistency, degeneration, token_stats(row["token_logprobs"]))


class FeatureAUROC(Record):
    value: float | None
    ci: tuple[float, float] | None
    n: int

    def shown(self) -> str:
        """As the reports print it: value and its interval, or n/a when it is undefined."""
        if self.value is None:
            return "n/a"
        lo, hi = self.ci if self.ci else (math.nan, math.nan)
        return f"{self.value:.3f} [{lo:.2f}, {hi:.2f}]"


class HRAFitReport(Record):
    """What the fit chose and measured."""

    items: dict[str, int] = Field(description="Items per part.")
    wrong: dict[str, int] = Field(description="Wrong drafts per part.")
    c: float
    validation_auroc: dict[str, float | None] = Field(description="Validation AUROC per C.")
    threshold: float
    test: FeatureAUROC = Field(description="The fitted model on test.")
    test_features: dict[str, FeatureAUROC] = Field(description="Each feature alone on test.")
    test_at_threshold: dict[str, float | int] = Field(
        description="On test at the threshold: wrong drafts caught, right drafts held back."
    )
    coefficients: dict[str, float]
    cross_validated: FeatureAUROC | None = Field(
        default=None,
        description="Pooled out-of-fold AUROC over every item (5 folds by the seeded order, "
        "the chosen C, standardised on each fold's training rows): a second reading when the "
        "test part is small, not independent of the choice of C.",
    )


def auroc_with_ci(scores: Sequence[float], wrong: Sequence[bool]) -> FeatureAUROC:
    x, y = np.asarray(scores, dtype=np.float64), np.asarray(wrong, dtype=bool)

    def stat(idx: Sequence[int]) -> float | None:
        return auroc(x[list(idx)].tolist(), y[list(idx)].tolist())

    ci = bootstrap_ci(stat, len(x), RESAMPLES, BOOTSTRAP_SEED)
    return FeatureAUROC(value=auroc(list(x), list(y)), ci=ci, n=len(x))


def fit_risk_model(
    features: Sequence[dict[str, float]],
    wrong: Sequence[bool],
    splits: Sequence[str],
    *,
    samples: int,
    provenance: dict[str, Any],
    names: Sequence[str] = FEATURES,
) -> tuple[HRARiskArtifact, HRAFitReport]:
    """Fit on train, choose C and the threshold on validation, score test once."""
    from sklearn.linear_model import LogisticRegression

    x = np.asarray([[f[n] for n in names] for f in features], dtype=np.float64)
    y = np.asarray(wrong, dtype=bool)
    part = np.asarray(splits)
    train, val, test = (part == "train"), (part == "validation"), (part == "test")
    mean = x[train].mean(axis=0)
    scale = x[train].std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    z = (x - mean) / scale

    def fitted(c: float) -> Any:
        return LogisticRegression(C=c, class_weight="balanced", max_iter=2000).fit(
            z[train], y[train]
        )

    by_c = {c: auroc(fitted(c).decision_function(z[val]).tolist(), y[val].tolist()) for c in C_GRID}
    best = max(C_GRID, key=lambda c: (by_c[c] or 0.0, -c))
    model = fitted(best)
    p_val = model.predict_proba(z[val])[:, 1]
    threshold = balanced_threshold(p_val, y[val])
    artifact = HRARiskArtifact(
        features=list(names),
        mean=mean.tolist(),
        scale=scale.tolist(),
        coef=model.coef_[0].tolist(),
        intercept=float(model.intercept_[0]),
        threshold=threshold,
        samples=samples,
        provenance={**provenance, "c": best, "c_grid": list(C_GRID)},
    )
    p_test = model.predict_proba(z[test])[:, 1]
    caught = int(((p_test >= threshold) & y[test]).sum())
    held = int(((p_test >= threshold) & ~y[test]).sum())
    parts = (("train", train), ("validation", val), ("test", test))
    report = HRAFitReport(
        items={k: int(m.sum()) for k, m in parts},
        wrong={k: int(y[m].sum()) for k, m in parts},
        c=best,
        validation_auroc={str(c): v for c, v in by_c.items()},
        threshold=threshold,
        test=auroc_with_ci(p_test.tolist(), y[test].tolist()),
        test_features={
            n: auroc_with_ci(x[test][:, i].tolist(), y[test].tolist()) for i, n in enumerate(names)
        },
        test_at_threshold={
            "wrong": int(y[test].sum()),
            "wrong_caught": caught,
            "right": int((~y[test]).sum()),
            "right_held_back": held,
        },
        coefficients={n: float(w) for n, w in zip(names, model.coef_[0], strict=True)},
        cross_validated=_cross_validated(x, y, best),
    )
    return artifact, report


def _cross_validated(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any], c: float) -> FeatureAUROC:
    from sklearn.linear_model import LogisticRegression

    folds = np.arange(len(y)) % 5
    p = np.zeros(len(y))
    for k in range(5):
        train, held = folds != k, folds == k
        if len(set(y[train].tolist())) < 2:
            continue
        mean, scale = x[train].mean(axis=0), x[train].std(axis=0)
        scale = np.where(scale > 1e-9, scale, 1.0)
        model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000)
        model.fit((x[train] - mean) / scale, y[train])
        p[held] = model.predict_proba((x[held] - mean) / scale)[:, 1]
    return auroc_with_ci(p.tolist(), y.tolist())


def balanced_threshold(p: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> float:
    """The P(wrong) cut with the best balanced accuracy (ties: the lower cut, which holds more
    drafts back), kept inside (0.05, 0.95)."""
    best, best_score = 0.5, -1.0
    for cut in sorted(set(np.round(p, 4).tolist())):
        flagged = p >= cut
        tpr = flagged[y].mean() if y.any() else 0.0
        tnr = (~flagged[~y]).mean() if (~y).any() else 0.0
        score = (tpr + tnr) / 2
        if score > best_score:
            best, best_score = cut, score
    return float(min(0.95, max(0.05, best)))


def false_alarm_threshold(
    p: np.ndarray[Any, Any], y: np.ndarray[Any, Any], max_rate: float = 0.10
) -> float:
    """The lowest P(wrong) cut (over the readings, rounded to 4 places) that holds back at most
    ``max_rate`` of the good drafts (``y`` False): the cut for a gate that must keep answering,
    where the balanced-accuracy cut holds back too many right drafts. ValueError without a good
    draft."""
    good = p[~y]
    if not good.size:
        raise ValueError("no good draft to bound the false alarms with")
    for cut in sorted(set(np.round(p, 4).tolist())):
        if (good >= cut).mean() <= max_rate:
            return float(cut)
    return float(np.round(good.max(), 4) + 1e-4)


class DraftsReport(Record):
    """The features, and the fitted model, on CareGuard's own drafts labelled by hand."""

    drafts: int
    bad: int = Field(description="Drafts labelled wrong or degenerate.")
    wrong: int
    degenerate: int
    model: FeatureAUROC = Field(description="The fitted model's P(wrong), bad vs the rest.")
    features: dict[str, FeatureAUROC] = Field(description="Each feature alone, bad vs the rest.")
    held_back: dict[str, int] = Field(
        description="At the model's threshold: bad drafts held back, good ones held back."
    )


def drafts_report(
    rows: Sequence[dict[str, Any]],
    samples: int,
    embedder: SentenceEmbedder,
    artifact: HRARiskArtifact,
) -> DraftsReport:
    """Each feature's and the model's AUROC for a bad draft (wrong or degenerate) on the
    hand-labelled drafts whose judge score the run recorded."""
    from medgate.careguard.hra_risk import HRARiskModel

    model = HRARiskModel(artifact, "fitted", "fit")
    kept = [r for r in rows if r.get("judge") is not None]
    feats = [item_features(r, r["draft"], samples, embedder) for r in kept]
    bad = [bool(r["wrong"] or r["degenerate"]) for r in kept]
    p = [model.probability(f) for f in feats]
    flagged = [x >= artifact.threshold for x in p]
    return DraftsReport(
        drafts=len(kept),
        bad=sum(bad),
        wrong=sum(bool(r["wrong"]) for r in kept),
        degenerate=sum(bool(r["degenerate"]) for r in kept),
        model=auroc_with_ci(p, bad),
        features={n: auroc_with_ci([f[n] for f in feats], bad) for n in artifact.features},
        held_back={
            "bad": sum(f and b for f, b in zip(flagged, bad, strict=True)),
            "good": sum(f and not b for f, b in zip(flagged, bad, strict=True)),
        },
    )
