"""Two more readings tried for the 1.5B's risk model, on training items only: do they rank its
wrong answers where its own answer slot does not (PubMedQA-L)?

The 1.5B's risk model misses lift 1.5 and alpha 0.3 on PubMedQA-L because its ranking there is
weak (docs/results/README.md). Before any new feature is fitted into a risk model it should rank
wrong answers on its own, so each candidate is measured here against the answer slot's own
doubt (1 minus the top label's probability), by AUROC for a wrong 1.5B answer with a bootstrap
interval, on the training items whose 1.5B answer is committed (``docs/results/peer/<dataset>_
train.jsonl``: the 1.5B answering the baseline prompt greedily, 300 items per dataset). No test
item is read.

* ``evidence reader``: a logistic regression on sentence embeddings (the shipped all-MiniLM-L6-v2,
  :func:`medgate.embeddings.default_embedder`) of the question and the closing part of its
  evidence (:func:`medgate.hrs.evidence.closing_part`, where abstracts state their findings),
  predicting the gold label; every training item is scored out of fold (5 folds, seeded), and
  the reading is its probability that the gold label is not the 1.5B's answer. Its own 3-way
  (2-way for BioASQ) accuracy is reported beside the majority label's share.
* ``0.5B answer``: the embedded 0.5B's first answer to the same prompt, from its committed
  training recording: whether it differs from the 1.5B's, and 1 minus its probability of the
  1.5B's label.
* ``answer slot + 0.5B``: the sum of the answer slot's doubt and the 0.5B's, unfitted.

Run (about a minute; only the sentence encoder is loaded):
    MEDGATE_DATA_DIR=../shared/data python scripts/risk_features_tried.py \\
        --out docs/results/risk_features_tried.md
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict

from medgate.careguard.hra_fit import auroc_with_ci, read_items
from medgate.embeddings import default_embedder
from medgate.eval.data import dataset_split
from medgate.hrs.evidence import closing_part

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
DATASETS = ("pubmedqa-l", "bioasq", "pubmedqa-a")
SMALL = "embedded:qwen2.5-coder-0.5b"
FOLDS = 5
C = 1.0


def first_answers(dataset: str, model: str) -> dict[str, dict[str, Any]]:
    """``model``'s first answer and label distribution per training item, from its committed
    recording of the training split."""
    for manifest in sorted((RESULTS / "recordings").glob(f"{dataset}-train-*.json")):
        if json.loads(manifest.read_text())["model"] != model:
            continue
        out = {}
        for row in read_items(manifest.with_suffix(".jsonl.gz")):
            run = row["trajectory"]["iterations"][0]["run"]
            out[row["item_id"]] = {"answer": run["answer"], "distribution": run["distribution"]}
        return out
    raise SystemExit(f"no committed training recording of {dataset} by {model}")


def peer_answers(dataset: str) -> dict[str, dict[str, Any]]:
    """The 1.5B's first answer per training item (docs/results/peer)."""
    path = RESULTS / "peer" / f"{dataset}_train.jsonl"
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {r["id"]: r for r in rows if r["peer_answer"]}


def shown(scores: Sequence[float], wrong: Sequence[bool]) -> str:
    """AUROC for a wrong answer with its bootstrap interval, as the reports print it."""
    return auroc_with_ci(scores, wrong).shown()


def measure(dataset: str, data_dir: Path, embedder: Any) -> dict[str, Any]:
    train = dataset_split(dataset, data_dir).train
    labels = sorted({item.gold for item in train})
    vectors = embedder.embed([f"{i.question} {closing_part(i.context)}" for i in train])
    gold = np.array([labels.index(i.gold) for i in train])
    folds = StratifiedKFold(FOLDS, shuffle=True, random_state=0)
    proba = cross_val_predict(
        LogisticRegression(C=C, max_iter=2000), vectors, gold, cv=folds, method="predict_proba"
    )
    big, small = peer_answers(dataset), first_answers(dataset, SMALL)
    rows = [(k, i) for k, i in enumerate(train) if i.id in big and i.id in small]
    answer = [big[i.id]["peer_answer"] for _, i in rows]
    wrong = [a != i.gold for a, (_, i) in zip(answer, rows, strict=True)]
    slot = [1 - max(big[i.id]["peer_distribution"].values()) for _, i in rows]
    reader = [1 - float(proba[k, labels.index(a)]) for a, (k, _) in zip(answer, rows, strict=True)]
    small_doubt = [
        1 - small[i.id]["distribution"].get(a, 0.0) for a, (_, i) in zip(answer, rows, strict=True)
    ]
    differs = [float(small[i.id]["answer"] != a) for a, (_, i) in zip(answer, rows, strict=True)]
    majority = Counter(i.gold for i in train).most_common(1)[0][1] / len(train)
    return {
        "dataset": dataset,
        "training items": len(train),
        "items with both answers": len(rows),
        "1.5B wrong": sum(wrong),
        "evidence reader accuracy (out of fold, all training items)": round(
            float((proba.argmax(1) == gold).mean()), 3
        ),
        "majority label share": round(majority, 3),
        "AUROC for a wrong 1.5B answer": {
            "answer slot (1 - top probability)": shown(slot, wrong),
            "evidence reader": shown(reader, wrong),
            "0.5B differs": shown(differs, wrong),
            "0.5B doubt of the 1.5B's label": shown(small_doubt, wrong),
            "answer slot + 0.5B doubt (unfitted sum)": shown(
                [a + b for a, b in zip(slot, small_doubt, strict=True)], wrong
            ),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the Markdown report")
    args = parser.parse_args()
    data_dir = Path(os.environ.get("MEDGATE_DATA_DIR", ROOT.parent / "shared" / "data"))
    embedder = default_embedder()
    results = [measure(d, data_dir, embedder) for d in DATASETS]
    names = list(results[0]["AUROC for a wrong 1.5B answer"])
    lines = [
        "# Readings tried for the 1.5B's risk model (training items only)",
        "",
        "Generated by `MEDGATE_DATA_DIR=../shared/data python scripts/risk_features_tried.py "
        f"--out {args.out}`; what each reading is, in the script's docstring. AUROC for a wrong "
        "1.5B answer with a bootstrap 95% interval (2000 resamples, seeded). No test item read.",
        "",
        "| | " + " | ".join(r["dataset"] for r in results) + " |",
        "|---|" + "---|" * len(results),
    ]
    for key in ("items with both answers", "1.5B wrong", "majority label share"):
        lines.append(f"| {key} | " + " | ".join(str(r[key]) for r in results) + " |")
    key = "evidence reader accuracy (out of fold, all training items)"
    lines.append(f"| {key} | " + " | ".join(str(r[key]) for r in results) + " |")
    for name in names:
        cells = " | ".join(r["AUROC for a wrong 1.5B answer"][name] for r in results)
        lines.append(f"| AUROC: {name} | {cells} |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
