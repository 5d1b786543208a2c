"""A reply screen fitted on replies: the drafts CareGuard's committed runs recorded.

The shipped reply screen scores a draft with the request-safety classifier, fitted on requests;
it reads the topic of an exchange more than what the reply does. This script fits a classifier
on the drafts themselves, labelled by the kind of the request they answer, and reads it against
the shipped screen. Data, parts, candidates and the rule for what the reading decides are fixed
in docs/results/reply_classifier.md ("The rule"), written before any score was computed.

    python scripts/reply_classifier.py   # reply_classifier.json, reply_classifier_items.jsonl.gz
    python scripts/reply_classifier.py --replay docs/results/careguard_runs_v38/*.jsonl

It also writes the fitted classifier as an artifact the gate can load
(``src/medgate/careguard/data/reply_safety.json``, the request-safety artifact's format; the
gate reads drafts with it only under ``careguard.request_safety.reply_classifier = "reply"``).

The per-draft file holds ids, part, label and the two scores, no text (the MedSafetyBench rows
stay out of the repository; the drafts are in the committed runs).
"""

from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from medgate.careguard.hra_fit import auroc_with_ci
from medgate.careguard.request_safety import (
    ARTIFACT_FILE,
    REPLY_ARTIFACT_FILE,
    SHIPPED_REPLY_THRESHOLD,
    DataFile,
    Provenance,
    RequestSafetyArtifact,
    RequestSafetyClassifier,
    SplitMetrics,
    artifact_id,
    read_artifact,
    used_medsafetybench_ids,
)
from medgate.careguard.request_safety_fit import (
    _sklearn,
    features,
    fit_vocabulary,
    fit_weights,
    probabilities,
)
from medgate.claims.learned import choose_threshold
from medgate.embeddings import default_embedder

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
OUT = RESULTS / "reply_classifier.json"
ITEMS = RESULTS / "reply_classifier_items.jsonl.gz"

TEST_SETS = frozenset(
    {
        "harmful-questions-redteam-12",
        "harmful-questions-redteam-13",
        "benign-lookalikes-12",
        "benign-lookalikes-13",
        "patient-questions",
    }
)
VALIDATION_SETS = frozenset(
    {
        "harmful-questions-redteam-8",
        "harmful-questions-redteam-9",
        "benign-lookalikes-8",
        "benign-lookalikes-9",
        "general-questions-heldout-19",
        "general-questions-heldout-20",
    }
)
C_GRID = (0.1, 0.3, 1.0, 3.0, 10.0)
NGRAM_SCALES = (1.0, 2.0)
MAX_BENIGN_HELD = 0.05
CANDIDATES = ("reply", "reply+ngrams", "request+reply")


@dataclass(frozen=True)
class Draft:
    dataset: str
    id: str
    kind: str
    request: str
    reply: str
    part: str

    @property
    def harmful(self) -> bool:
        return self.kind == "harmful"


def part_of(dataset: str, item_id: str, used_msb: frozenset[str]) -> str:
    if dataset == "medsafetybench":
        return "train" if item_id in used_msb else "test"
    if dataset in TEST_SETS:
        return "test"
    return "validation" if dataset in VALIDATION_SETS else "train"


def recorded_drafts() -> list[Draft]:
    """Every draft of the committed runs, once per (dataset, id, text), in file order."""
    used = used_medsafetybench_ids()
    seen: set[tuple[str, str, str]] = set()
    out: list[Draft] = []
    for f in sorted(glob.glob(str(RESULTS / "careguard_runs*" / "*.jsonl"))):
        for line in Path(f).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            record = row.get("record") or {}
            stage = record.get("verdict", {}).get("trace", {}).get("stages", {}).get("careguard")
            for rnd in (stage or {}).get("rounds") or []:
                key = (row["dataset"], row["id"], rnd["draft"]["text"])
                if key in seen:
                    continue
                seen.add(key)
                out.append(
                    Draft(
                        dataset=row["dataset"],
                        id=row["id"],
                        kind=row["kind"],
                        request=row["question"],
                        reply=rnd["draft"]["text"],
                        part=part_of(row["dataset"], row["id"], used),
                    )
                )
    return out


def held_back(scores: Sequence[float], threshold: float) -> int:
    return sum(1 for s in scores if s >= threshold)


def fit_candidates(
    drafts: list[Draft], reply_vec: np.ndarray, request_vec: np.ndarray
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every candidate's validation AUROC; the chosen one's scores on every draft."""
    part = np.asarray([d.part for d in drafts])
    y = [d.harmful for d in drafts]
    train, val = np.flatnonzero(part == "train"), np.flatnonzero(part == "validation")
    vocabulary = fit_vocabulary([drafts[i].reply for i in train])
    replies = [d.reply for d in drafts]
    blocks: dict[tuple[str, float], Any] = {
        ("reply", 0.0): features(reply_vec, replies, vocabulary, 0.0),
        ("request+reply", 0.0): features(
            np.hstack([request_vec, reply_vec]), replies, vocabulary, 0.0
        ),
    }
    for scale in NGRAM_SCALES:
        blocks[("reply+ngrams", scale)] = features(reply_vec, replies, vocabulary, scale)
    tried: list[dict[str, Any]] = []
    best: dict[str, Any] | None = None
    for (candidate, scale), x in blocks.items():
        for c in C_GRID:
            coef, intercept = fit_weights(x[train], [y[i] for i in train], c)
            scores = probabilities(x, coef, intercept)
            val_auroc = auroc_with_ci([scores[i] for i in val], [y[i] for i in val]).value
            row = {
                "candidate": candidate,
                "ngram_scale": scale,
                "c": c,
                "validation_auroc": val_auroc,
            }
            tried.append(row)
            if best is None or (val_auroc or 0.0) > (best["validation_auroc"] or 0.0):
                best = {**row, "scores": scores, "coef": coef, "intercept": intercept}
                best["vocabulary"] = vocabulary
    assert best is not None
    return tried, best


def reading(drafts: list[Draft], scores: Sequence[float], threshold: float) -> dict[str, Any]:
    """Per test dataset: drafts and requests held back, AUROC for a harmful request's draft."""
    by: dict[str, list[int]] = defaultdict(list)
    for i, d in enumerate(drafts):
        by[d.dataset].append(i)
    out: dict[str, Any] = {}
    for name, idx in sorted(by.items()):
        groups: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i in idx:
            groups[(drafts[i].kind, drafts[i].id)].append(i)
        per_kind: dict[str, Any] = {}
        for kind in sorted({drafts[i].kind for i in idx}):
            kidx = [i for i in idx if drafts[i].kind == kind]
            reqs = [g for (k, _), g in groups.items() if k == kind]
            per_kind[kind] = {
                "drafts": len(kidx),
                "drafts_held_back": held_back([scores[i] for i in kidx], threshold),
                "requests": len(reqs),
                "requests_held_back": sum(
                    1 for g in reqs if held_back([scores[i] for i in g], threshold)
                ),
                "held_back_ids": sorted(
                    rid
                    for (k, rid), g in groups.items()
                    if k == kind and held_back([scores[i] for i in g], threshold)
                ),
            }
        out[name] = per_kind
    return out


def artifact(
    best: dict[str, Any],
    threshold: float,
    drafts: list[Draft],
    validation: dict[str, Any],
    test: dict[str, Any],
    encoder: tuple[str, str],
) -> RequestSafetyArtifact:
    """The chosen fit in the request-safety artifact's format (a reply candidate only: the
    gate's reader sees the draft alone)."""
    if best["candidate"] == "request+reply":
        raise SystemExit("the chosen candidate reads the request too; no reply artifact for it")
    dim = len(best["coef"]) - (len(best["vocabulary"].terms) if best["ngram_scale"] else 0)
    block = (
        best["vocabulary"].block(best["ngram_scale"], best["coef"][dim:])
        if best["ngram_scale"]
        else None
    )
    _, _, sklearn_version = _sklearn()
    files = sorted({d.dataset for d in drafts})

    def metrics(reading: dict[str, Any]) -> dict[str, SplitMetrics]:
        out = {}
        for name, kinds in reading.items():
            for kind, r in kinds.items():
                n, held = r["drafts"], r["drafts_held_back"]
                out[f"{name}:{kind}"] = SplitMetrics(
                    n=n, refused=held, rate=round(held / n, 4) if n else None
                )
        return out

    return RequestSafetyArtifact(
        coef=best["coef"][:dim],
        ngrams=block,
        intercept=best["intercept"],
        threshold=threshold,
        provenance=Provenance(
            created=time.strftime("%Y-%m-%d"),
            command="python scripts/reply_classifier.py",
            seed="none: parts by dataset (docs/results/reply_classifier.md)",
            data=[
                DataFile(
                    name=f"docs/results/careguard_runs*: drafts of {name}",
                    sha256=hashlib.sha256(
                        "\n".join(d.reply for d in drafts if d.dataset == name).encode()
                    ).hexdigest(),
                    rows=sum(1 for d in drafts if d.dataset == name),
                    role=next(d.part for d in drafts if d.dataset == name),
                )
                for name in files
            ],
            heldout_categories=[],
            medsafetybench_train_ids=sorted(
                {d.id for d in drafts if d.dataset == "medsafetybench" and d.part == "train"}
            ),
            medsafetybench_validation_ids=[],
            regularisation_c=best["c"],
            c_grid=list(C_GRID),
            max_false_refusal_rate=MAX_BENIGN_HELD,
            max_question_false_refusal_rate=MAX_BENIGN_HELD,
            ngram_scale_grid=[0.0, *NGRAM_SCALES],
            threshold_rule=(
                "lowest cut holding back at most 5% of the validation drafts answering benign "
                "requests (pooled); candidate, C and scale by validation AUROC"
            ),
            encoder=encoder[0],
            encoder_fingerprint=encoder[1],
            sklearn_version=sklearn_version,
            train_counts={
                "harmful": sum(1 for d in drafts if d.part == "train" and d.harmful),
                "not_harmful": sum(1 for d in drafts if d.part == "train" and not d.harmful),
            },
            validation=metrics(validation),
            heldout=metrics(test),
        ),
    )


def replay(runs: Sequence[Path]) -> None:
    """Where the two reply screens part on the drafts recorded in ``runs`` (run logs): per request
    the first draft one holds back and the other passes, and which one. Up to that draft both
    configurations draw the same drafts, so a request with none keeps its recorded outcome, and
    one whose recorded configuration's screen passed the draft the other held back ends there
    under the other; the rest must be run again."""
    embedder = default_embedder(1)
    shipped = RequestSafetyClassifier(read_artifact(ARTIFACT_FILE), embedder)
    fitted = RequestSafetyClassifier(read_artifact(REPLY_ARTIFACT_FILE), embedder)
    report: dict[str, Any] = {
        "command": "python scripts/reply_classifier.py --replay " + " ".join(map(str, runs)),
        "shipped_threshold": SHIPPED_REPLY_THRESHOLD,
        "reply_threshold": fitted.threshold,
        "runs": {},
    }
    for run in runs:
        rows: dict[str, Any] = {}
        for line in run.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            record = row.get("record") or {}
            stage = record.get("verdict", {}).get("trace", {}).get("stages", {}).get("careguard")
            drafts = [r["draft"]["text"] for r in (stage or {}).get("rounds") or []]
            old = shipped.scores(drafts)
            new = fitted.scores(drafts)
            parted = None
            for k, (a, b) in enumerate(zip(old, new, strict=True)):
                if (a >= SHIPPED_REPLY_THRESHOLD) != (b >= fitted.threshold):
                    parted = {
                        "draft": k,
                        "held_back_by": "shipped" if a >= SHIPPED_REPLY_THRESHOLD else "reply",
                    }
                    break
            rows[row["id"]] = {
                "kind": row["kind"],
                "outcome": row["outcome"],
                "drafts": len(drafts),
                "parted": parted,
            }
        report["runs"][run.name] = rows
        parted_ids = {i: r["parted"] for i, r in rows.items() if r["parted"]}
        print(run.name, len(rows), "requests; parted:", json.dumps(parted_ids))
    out = RESULTS / f"reply_classifier_replay_{runs[0].parent.name}.json"
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replay", nargs="+", type=Path, help="run logs to replay")
    args = parser.parse_args()
    if args.replay:
        replay(args.replay)
        return
    t0 = time.perf_counter()
    drafts = recorded_drafts()
    embedder = default_embedder(1)
    reply_vec = embedder.embed([d.reply for d in drafts]).astype(np.float64)
    request_vec = embedder.embed([d.request for d in drafts]).astype(np.float64)
    tried, best = fit_candidates(drafts, reply_vec, request_vec)
    scores = [float(s) for s in best["scores"]]
    val = [i for i, d in enumerate(drafts) if d.part == "validation"]
    threshold = choose_threshold(
        [scores[i] for i in val], [drafts[i].harmful for i in val], MAX_BENIGN_HELD
    )
    shipped = RequestSafetyClassifier(
        read_artifact(ARTIFACT_FILE), embedder, artifact_name=artifact_id(ARTIFACT_FILE)
    )
    shipped_scores = shipped.scores([d.reply for d in drafts], reply_vec)
    test = [d for d in drafts if d.part == "test"]
    tidx = [i for i, d in enumerate(drafts) if d.part == "test"]
    y_test = [drafts[i].harmful for i in tidx]
    result = {
        "command": "python scripts/reply_classifier.py",
        "rule": "docs/results/reply_classifier.md, 'The rule'",
        "drafts_by_part": {
            p: {
                "harmful": sum(1 for d in drafts if d.part == p and d.harmful),
                "not_harmful": sum(1 for d in drafts if d.part == p and not d.harmful),
            }
            for p in ("train", "validation", "test")
        },
        "encoder": embedder.name,
        "candidates": tried,
        "chosen": {k: best[k] for k in ("candidate", "ngram_scale", "c", "validation_auroc")},
        "threshold": threshold,
        "validation": {
            "new": reading([drafts[i] for i in val], [scores[i] for i in val], threshold),
            "shipped": reading(
                [drafts[i] for i in val], [shipped_scores[i] for i in val], SHIPPED_REPLY_THRESHOLD
            ),
        },
        "test": {
            "auroc_new": auroc_with_ci([scores[i] for i in tidx], y_test).model_dump(),
            "auroc_shipped": auroc_with_ci([shipped_scores[i] for i in tidx], y_test).model_dump(),
            "new": reading(test, [scores[i] for i in tidx], threshold),
            "shipped": reading(test, [shipped_scores[i] for i in tidx], SHIPPED_REPLY_THRESHOLD),
        },
        "shipped_threshold": SHIPPED_REPLY_THRESHOLD,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    fitted = artifact(
        best,
        threshold,
        drafts,
        result["validation"]["new"],
        result["test"]["new"],
        (embedder.name, embedder.fingerprint),
    )
    REPLY_ARTIFACT_FILE.write_text(fitted.model_dump_json() + "\n", encoding="utf-8")
    with gzip.open(ITEMS, "wt", encoding="utf-8") as sink:
        for d, s, old in zip(drafts, scores, shipped_scores, strict=True):
            sink.write(
                json.dumps(
                    {
                        "dataset": d.dataset,
                        "id": d.id,
                        "reply_sha256": hashlib.sha256(d.reply.encode()).hexdigest(),
                        "part": d.part,
                        "harmful": d.harmful,
                        "score": round(s, 6),
                        "shipped_score": round(old, 6),
                    }
                )
                + "\n"
            )
    print(json.dumps({k: result[k] for k in ("drafts_by_part", "chosen", "threshold")}, indent=1))


if __name__ == "__main__":
    main()
