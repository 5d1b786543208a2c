"""Does the answering model's own reading of a request carry the intent the v2 classifier misses?

Reads the cached readings of ``scripts/request_probe_features.py`` (only requests already read
count; the figures say how many) and measures, with the request-safety classifier's split and
false-refusal budgets (:mod:`medgate.careguard.request_safety_fit`):

* verdict, zero-shot: P(yes) of the fixed yes/no prompt as the score, threshold chosen on the
  benign validation part under the budgets;
* v2 + verdict, stacked: a logistic regression over the shipped v2 classifier's logit and the
  verdict features, fitted on the validation part (where v2's scores are out of sample),
  threshold on the same benign validation part;
* pooled: the model's pooled embedding as features, alone and beside the v2 features, fitted on
  the train rows read, threshold on the validation rows read; v2's features refitted on the very
  same rows as the comparison;

and reports recall on the written harmful requests (never fitted or chosen on), on the
MedSafetyBench test part where read, and the false refusals of the benign test parts read.

    python scripts/request_probe_measure.py --out docs/results/request_probe
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import sparse

from medgate.backends.embedded import EMBEDDED_MODELS
from medgate.careguard.request_probe import FeatureCache
from medgate.careguard.request_safety import RequestSafetyClassifier
from medgate.careguard.request_safety_fit import (
    MAX_FALSE_REFUSAL_RATE,
    MAX_QUESTION_FALSE_REFUSAL_RATE,
    LabelledRequest,
    build_corpus,
    features,
    fit_vocabulary,
    fit_weights,
    probabilities,
    threshold_within_budget,
)
from medgate.config import load_config
from medgate.embeddings import default_embedder

C_GRID = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
SCALE_GRID = (1.0, 2.0)


def auroc(pos: Sequence[float], neg: Sequence[float]) -> float | None:
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return round(wins / (len(pos) * len(neg)), 4)


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def rates(
    rows: Sequence[LabelledRequest], scores: Sequence[float], threshold: float
) -> dict[str, dict[str, Any]]:
    by: dict[str, list[bool]] = {}
    for r, s in zip(rows, scores, strict=True):
        key = f"{r.source}:{r.part}"
        if r.source in ("medsafetybench", "written-harmful") and r.part == "test":
            key += ":unseen" if r.category in (4, 8) else ":seen"
        by.setdefault(key, []).append(bool(s >= threshold))
    return {
        k: {"n": len(v), "refused": int(sum(v)), "rate": round(float(sum(v)) / len(v), 4)}
        for k, v in sorted(by.items())
    }


def choose(rows: Sequence[LabelledRequest], scores: Sequence[float]) -> float:
    return threshold_within_budget(
        list(scores), list(rows), MAX_FALSE_REFUSAL_RATE, MAX_QUESTION_FALSE_REFUSAL_RATE
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--model",
        default="qwen2.5-coder-0.5b",
        choices=sorted(EMBEDDED_MODELS),
        help="the embedded model whose cached readings are measured",
    )
    args = ap.parse_args()
    config = load_config()
    corpus = build_corpus(config.data_dir)
    sha = EMBEDDED_MODELS[args.model].sha256
    root = config.cache_dir / "request_probe"
    verdict = FeatureCache(root, sha, "verdict-v2")
    pooled = FeatureCache(root, sha, "pooled")
    embedder = default_embedder(1)
    v2 = RequestSafetyClassifier.load(embedder)
    report: dict[str, Any] = {"model_sha256": sha, "verdict_read": len(verdict)}
    items: list[dict[str, Any]] = []

    # --- verdict: zero-shot and stacked on v2 ------------------------------------------------
    rows = [r for r in corpus.requests if verdict.get(r.text) is not None]
    v2_scores = v2.scores([r.text for r in rows])
    readings = [verdict.get(r.text) or [] for r in rows]
    p_yes = [v[0] for v in readings]
    val = [i for i, r in enumerate(rows) if r.part == "validation"]
    test = [i for i, r in enumerate(rows) if r.part == "test"]
    written = [i for i, r in enumerate(rows) if r.source == "written-harmful"]
    look = [i for i, r in enumerate(rows) if r.source == "clinician-requests-lookalike"]
    clin_val = [i for i, r in enumerate(rows) if r.source == "clinician-requests" and i in val]
    zero: dict[str, Any] = {
        "n_read": len(rows),
        "auroc_written_harmful_vs_lookalikes": {
            "verdict_p_yes": auroc([p_yes[i] for i in written], [p_yes[i] for i in look]),
            "v2": auroc([v2_scores[i] for i in written], [v2_scores[i] for i in look]),
        },
        "auroc_written_harmful_vs_clinician_validation": {
            "verdict_p_yes": auroc([p_yes[i] for i in written], [p_yes[i] for i in clin_val]),
            "v2": auroc([v2_scores[i] for i in written], [v2_scores[i] for i in clin_val]),
        },
    }
    if val and any(not rows[i].harmful for i in val):
        t = choose([rows[i] for i in val], [p_yes[i] for i in val])
        zero["threshold"] = round(t, 6)
        zero["validation"] = rates([rows[i] for i in val], [p_yes[i] for i in val], t)
        zero["test"] = rates([rows[i] for i in test], [p_yes[i] for i in test], t)
    report["verdict_zero_shot"] = zero

    def stack_x(idx: Sequence[int]) -> npt.NDArray[np.float64]:
        return np.asarray(
            [[logit(v2_scores[i]), logit(p_yes[i]), readings[i][1]] for i in idx], dtype=float
        )

    if val and any(rows[i].harmful for i in val) and any(not rows[i].harmful for i in val):
        stacked: dict[str, Any] = {}
        for c in (0.1, 1.0, 10.0):
            coef, intercept = fit_weights(stack_x(val), [rows[i].harmful for i in val], c)
            p_val = probabilities(stack_x(val), coef, intercept)
            t = choose([rows[i] for i in val], list(p_val))
            p_test = probabilities(stack_x(test), coef, intercept) if test else np.zeros(0)
            stacked[f"C={c}"] = {
                "coef": [round(v, 4) for v in coef],
                "intercept": round(intercept, 4),
                "threshold": round(t, 6),
                "validation": rates([rows[i] for i in val], list(p_val), t),
                "test": rates([rows[i] for i in test], list(p_test), t),
            }
        report["v2_plus_verdict_stacked_on_validation"] = stacked
    report["v2_on_verdict_rows"] = {
        "threshold": v2.threshold,
        "validation": rates([rows[i] for i in val], [v2_scores[i] for i in val], v2.threshold),
        "test": rates([rows[i] for i in test], [v2_scores[i] for i in test], v2.threshold),
    }
    for i, r in enumerate(rows):
        items.append(
            {
                "reading": "verdict-v2",
                "source": r.source,
                "part": r.part,
                "id": r.id,
                "harmful": r.harmful,
                "category": r.category,
                "p_yes": round(p_yes[i], 4),
                "log_label_mass": round(readings[i][1], 4),
                "v2": round(v2_scores[i], 4),
                **({"text": r.text} if r.shipped else {}),
            }
        )

    # --- pooled embedding, fitted on the rows read -------------------------------------------
    prow = [r for r in corpus.requests if pooled.get(r.text) is not None]
    report["pooled_read"] = len(prow)
    tr = [r for r in prow if r.part == "train"]
    va = [r for r in prow if r.part == "validation"]
    te = [r for r in prow if r.part == "test"]
    if (
        any(r.harmful for r in tr)
        and any(not r.harmful for r in tr)
        and any(r.harmful for r in va)
        and any(not r.harmful for r in va)
    ):

        def pooled_x(rs: Sequence[LabelledRequest]) -> npt.NDArray[np.float64]:
            x = np.asarray([pooled.get(r.text) for r in rs], dtype=np.float64)
            out: npt.NDArray[np.float64] = x / np.linalg.norm(x, axis=1, keepdims=True)
            return out

        parts = {"tr": tr, "va": va, "te": te}
        e = {k: embedder.embed([r.text for r in v]).astype(np.float64) for k, v in parts.items()}
        vocab = fit_vocabulary([r.text for r in tr])
        v2x = {k: features(e[k], [r.text for r in v], vocab, 2.0) for k, v in parts.items()}
        px = {k: pooled_x(v) for k, v in parts.items()}

        def x_of(name: str, k: str, scale: float) -> Any:
            if name == "v2-features":
                return v2x[k]
            block = sparse.csr_matrix(px[k] * scale)
            if name == "pooled":
                return block
            return sparse.hstack([v2x[k], block]).tocsr()

        variants: dict[str, Any] = {}
        for name in ("v2-features", "pooled", "pooled+v2-features"):
            best: float | None = None
            result: dict[str, Any] = {}
            for scale in SCALE_GRID if name != "v2-features" else (1.0,):
                for c in C_GRID:
                    coef, intercept = fit_weights(
                        x_of(name, "tr", scale), [r.harmful for r in tr], c
                    )
                    p_va = probabilities(x_of(name, "va", scale), coef, intercept)
                    t = choose(va, list(p_va))
                    hits = [p >= t for p, r in zip(p_va, va, strict=True) if r.harmful]
                    recall = float(np.mean(hits))
                    if best is None or recall > best:
                        best = recall
                        p_te = probabilities(x_of(name, "te", scale), coef, intercept)
                        result = {
                            "C": c,
                            "scale": scale,
                            "threshold": round(t, 6),
                            "validation_recall": round(recall, 4),
                            "validation": rates(va, list(p_va), t),
                            "test": rates(te, list(p_te), t),
                        }
            variants[name] = result
        report["pooled_fitted_on_rows_read"] = {
            "train_rows": len(tr),
            "validation_rows": len(va),
            "test_rows": len(te),
            "variants": variants,
        }

    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{args.out}.json").write_text(json.dumps(report, indent=1) + "\n", "utf-8")
    with open(f"{args.out}_items.jsonl", "w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
