"""Does a second model's answer tell when the answering model is wrong? Cross-model agreement.

For each of the first N test items of a dataset, the second model (default: the embedded 1.5B)
answers exactly the answering model's baseline prompt, greedily, and only its label at the
answer slot is kept: what ``hrs.peer_model`` adds to each probe (medgate.hrs.probe). Its label
is compared with the answering model's baseline answer in the committed item log
(``docs/results/items/<dataset>_test.jsonl.gz``, written by ``medgate eval risk --write``).

Reported: both models' accuracy on the items; how often they agree; the answering model's
accuracy where they agree and where they do not; the AUROC of disagreement for a wrong answer
beside the risk model's; the AUROC of a fixed, unfitted combination (disagreeing items ranked
above agreeing ones, each group by risk), since the risk model was fitted without the feature
(fitting with it needs the second model's answers on the training items too); and the seconds
one second-model answer costs. One line per item in ``--out`` (resumable: items already there
are not asked again).

Run: MEDGATE_BACKEND__N_THREADS=1 python scripts/peer_agreement.py --dataset pubmedqa-l \
        --limit 100 --out docs/results/peer_pubmedqa-l.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from medgate.backends.pool import ModelPool
from medgate.config import load_config
from medgate.eval.data import dataset_split
from medgate.eval.metrics import auroc, bootstrap_ci
from medgate.hrs.probe import greedy_params, top_label
from medgate.hrs.prompts import answerer_messages

ROOT = Path(__file__).resolve().parents[1]


def ask(dataset: str, limit: int, peer_spec: str, out: Path) -> None:
    config = load_config()
    items = dataset_split(dataset, config.data_dir).test[:limit]
    done = (
        {json.loads(line)["id"] for line in out.read_text().splitlines()} if out.exists() else set()
    )
    todo = [i for i in items if i.id not in done]
    if not todo:
        return
    model = ModelPool(config).white_box(peer_spec)
    with out.open("a", encoding="utf-8") as fh:
        for n, item in enumerate(todo, 1):
            case = item.case()
            params = greedy_params(case, config.hrs)
            t0 = time.perf_counter()
            (run,) = model.complete_batch(answerer_messages(case), [params])
            seconds = time.perf_counter() - t0
            dist = run.label_probs
            line = {
                "id": item.id,
                "peer": peer_spec,
                "peer_sha256": model.fingerprint,
                "peer_answer": top_label(dist) if dist else None,
                "peer_distribution": dist,
                "seconds": round(seconds, 3),
            }
            fh.write(json.dumps(line) + "\n")
            fh.flush()
            print(f"{n}/{len(todo)} {seconds:.1f}s", file=sys.stderr, flush=True)


def summarise(dataset: str, out: Path, items_log: Path) -> dict[str, object]:
    with gzip.open(items_log, "rt", encoding="utf-8") as fh:
        logged = {r["id"]: r for r in map(json.loads, fh)}
    peers = [json.loads(line) for line in out.read_text().splitlines()]
    rows = [(logged[p["id"]], p) for p in peers if p["id"] in logged and p["peer_answer"]]
    wrong = [not r["correct"] for r, _ in rows]
    differ = [r["answer"] != p["peer_answer"] for r, p in rows]
    risk = [float(r["risk"]) for r, _ in rows]
    combined = [float(d) + k for d, k in zip(differ, risk, strict=True)]  # risk is in [0, 1]

    def area(scores: list[float]) -> dict[str, object]:
        def statistic(idx: Sequence[int]) -> float | None:
            return auroc([scores[i] for i in idx], [wrong[i] for i in idx])

        ci = bootstrap_ci(statistic, len(rows))
        value = auroc(scores, wrong)
        return {
            "value": None if value is None else round(value, 3),
            "ci95": None if ci is None else [round(ci[0], 3), round(ci[1], 3)],
        }

    def accuracy(keep: list[bool]) -> float | None:
        chosen = [not w for w, k in zip(wrong, keep, strict=True) if k]
        return round(sum(chosen) / len(chosen), 3) if chosen else None

    return {
        "dataset": dataset,
        "items": len(rows),
        "peer": peers[0]["peer"] if peers else None,
        "peer_sha256": peers[0]["peer_sha256"] if peers else None,
        "answerer_accuracy": accuracy([True] * len(rows)),
        "peer_accuracy": round(sum(p["peer_answer"] == r["gold"] for r, p in rows) / len(rows), 3),
        "agreement": round(1 - sum(differ) / len(rows), 3),
        "answerer_accuracy_where_they_agree": accuracy([not d for d in differ]),
        "answerer_accuracy_where_they_differ": accuracy(differ),
        "auroc_disagreement": area([float(d) for d in differ]),
        "auroc_risk": area(risk),
        "auroc_disagreement_then_risk_unfitted": area(combined),
        "peer_seconds_median": round(statistics.median(p["seconds"] for _, p in rows), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="pubmedqa-l")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--peer", default="embedded:qwen2.5-coder-1.5b")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--summary-only", action="store_true")
    args = parser.parse_args()
    if not args.summary_only:
        ask(args.dataset, args.limit, args.peer, args.out)
    items_log = ROOT / "docs" / "results" / "items" / f"{args.dataset}_test.jsonl.gz"
    summary = summarise(args.dataset, args.out, items_log)
    text = json.dumps(summary, indent=1)
    args.out.with_suffix(".summary.json").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
