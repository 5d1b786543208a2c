"""Does a second model's answer tell when the answering model is wrong? Cross-model agreement.

For each of the first N test items of a dataset, the second model (default: the embedded 1.5B)
answers exactly the answering model's baseline prompt, greedily, and only its label at the
answer slot is kept: what ``hrs.peer_model`` adds to each probe (medgate.hrs.probe). Its label
is compared with the answering model's baseline answer in the committed item log
(``docs/results/answerer_0.5b/items/<dataset>_test.jsonl.gz``, written by ``medgate eval risk
--write``).

Reported: both models' accuracy on the items; how often they agree; the answering model's
accuracy where they agree and where they do not; the AUROC of disagreement for a wrong answer
beside the risk model's; the AUROC of a fixed, unfitted combination (disagreeing items ranked
above agreeing ones, each group by risk), since the risk model was fitted without the feature
(fitting with it needs the second model's answers on the training items too); and the seconds
one second-model answer costs. One line per item in ``--out`` (resumable: items already there
are not asked again).

Run: MEDGATE_BACKEND__N_THREADS=1 python scripts/peer_agreement.py --dataset pubmedqa-l \
        --limit 200 --out docs/results/peer/pubmedqa-l_test.jsonl

``--split train`` records the second model's answers on training items, and ``--fit`` then
fits the risk model with them (feature set ``evidence+cross_model``: whether the second model
disagrees and the probability it gave the first answer) beside the same feature set without
them, on the same training items, and reports both on every test item that has a second-model
answer (``docs/results/peer/risk_with_peer.json``); ``--fit --ship`` also saves the one with
the second model into the package, bound to both models' weights. The answers are joined to
the recorded trajectories by item id: the second model reads only the baseline prompt, so its
answer does not depend on the recording. Needs
``MEDGATE_RECORDINGS_DIR=docs/results/recordings`` and
``MEDGATE_BACKEND__N_THREADS=1`` (the recordings' key).
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
from typing import Any

from medgate.backends.pool import ModelPool
from medgate.config import load_config
from medgate.eval.data import dataset_split
from medgate.eval.metrics import auroc, bootstrap_ci
from medgate.eval.runner import RecordedItem
from medgate.hrs.fitting import within_window
from medgate.hrs.measures import normalised_entropy
from medgate.hrs.probe import greedy_params, top_label
from medgate.hrs.prompts import answerer_messages

ROOT = Path(__file__).resolve().parents[1]
PEER_DIR = ROOT / "docs" / "results" / "peer"


def ask(dataset: str, split: str, limit: int, peer_spec: str, out: Path) -> None:
    config = load_config()
    parts = dataset_split(dataset, config.data_dir)
    items = (parts.train if split == "train" else parts.test)[:limit]
    done = (
        {json.loads(line)["id"] for line in out.read_text().splitlines()} if out.exists() else set()
    )
    todo = [i for i in items if i.id not in done]
    if not todo:
        return
    model = ModelPool(config).white_box(peer_spec)
    hrs = config.hrs
    with out.open("a", encoding="utf-8") as fh:
        for n, item in enumerate(todo, 1):
            t0 = time.perf_counter()
            # A context too long for the window is cut as the probe cuts it (the two models
            # share a tokenizer), so the second model reads the prompt the answerer read.
            ((run,), fit) = within_window(
                item.case(),
                (),
                lambda c: model.complete_batch(answerer_messages(c), [greedy_params(c, hrs)]),
            )
            seconds = time.perf_counter() - t0
            dist = run.label_probs
            line = {
                "id": item.id,
                "peer": peer_spec,
                "peer_sha256": model.fingerprint,
                "peer_answer": top_label(dist) if dist else None,
                "peer_distribution": dist,
                "seconds": round(seconds, 3),
                **({"context_cut_to_chars": fit.kept_chars} if fit else {}),
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
    peer_wrong = [p["peer_answer"] != r["gold"] for r, p in rows]
    combined = [float(d) + k for d, k in zip(differ, risk, strict=True)]  # risk is in [0, 1]

    def area(scores: list[float], of: list[bool] = wrong) -> dict[str, object]:
        def statistic(idx: Sequence[int]) -> float | None:
            return auroc([scores[i] for i in idx], [of[i] for i in idx])

        ci = bootstrap_ci(statistic, len(rows))
        value = auroc(scores, of)
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
        "peer_accuracy": round(1 - sum(peer_wrong) / len(rows), 3),
        "agreement": round(1 - sum(differ) / len(rows), 3),
        "answerer_accuracy_where_they_agree": accuracy([not d for d in differ]),
        "answerer_accuracy_where_they_differ": accuracy(differ),
        "auroc_disagreement": area([float(d) for d in differ]),
        "auroc_risk": area(risk),
        "auroc_disagreement_then_risk_unfitted": area(combined),
        # Each model's own answer-slot entropy as a score for its own wrong answer: the one
        # signal both runs have, so the two answerers' uncertainty can be compared like for like.
        "answerer_auroc_entropy": area([float(r["signals"]["entropy"]) for r, _ in rows]),
        "peer_auroc_entropy": area(
            [normalised_entropy(p["peer_distribution"]) for _, p in rows], peer_wrong
        ),
        "peer_seconds_median": round(statistics.median(p["seconds"] for _, p in rows), 2),
    }


def peer_answers(dataset: str, split: str) -> dict[str, dict[str, Any]]:
    path = PEER_DIR / f"{dataset}_{split}.jsonl"
    if not path.exists():
        return {}
    lines = (json.loads(line) for line in path.read_text().splitlines())
    return {p["id"]: p for p in lines if p["peer_answer"]}


def with_peer(
    records: Sequence[RecordedItem], peers: dict[str, dict[str, Any]]
) -> list[RecordedItem]:
    """The records that have a second-model answer, with it set on the first probe's run."""
    out = []
    for rec in records:
        its = rec.trajectory.iterations
        if not its or rec.item_id not in peers:
            continue
        p = peers[rec.item_id]
        run = its[0].run.model_copy(
            update={"peer_answer": p["peer_answer"], "peer_distribution": p["peer_distribution"]}
        )
        first = its[0].model_copy(update={"run": run})
        traj = rec.trajectory.model_copy(update={"iterations": [first, *its[1:]]})
        out.append(rec.model_copy(update={"trajectory": traj}))
    return out


def peer_weights(answers: Sequence[dict[str, dict[str, Any]]]) -> tuple[str, str]:
    """The one second model (spec, sha256) that gave every answer; a mix is refused, since a
    fitted model is bound to the weights whose agreement rate it learned."""
    models = {(p["peer"], p["peer_sha256"]) for part in answers for p in part.values()}
    if len(models) != 1:
        raise SystemExit(f"the answers come from {len(models)} second models, not one: {models}")
    return models.pop()


def fit(
    alpha: float = 0.3, delta: float = 0.1, ship: bool = False, command: str = ""
) -> dict[str, Any]:
    """The risk model with and without the second model's answer, on the same items; with
    ``ship``, the one with it is saved into the package, bound to both models' weights (the gate
    applies it only with that second model as ``hrs.peer_model``)."""
    from medgate.eval.risk_eval import item_lines, risk_figures
    from medgate.eval.risk_fit import Recorded, fit_risk_model
    from medgate.eval.risk_run import (
        DATASETS,
        ORCHESTRATOR,
        K,
        _unsaved,
        paper_config,
        recorded_items,
    )
    from medgate.eval.runner import cached_model, call_cache
    from medgate.hrs.risk import SHIPPED_DIR, artifact_name, load_risk_model, save_risk_model

    config = load_config()
    config = config.model_copy(update={"hrs": config.hrs.model_copy(update={"max_iterations": K})})
    train = {}
    answers = {ds: peer_answers(ds, "train") for ds in DATASETS}
    peer_spec, peer_sha = peer_weights(list(answers.values()))
    for ds in DATASETS:
        records = recorded_items(config, ds, "train", 300, recorded_only=True)[0]
        train[ds] = with_peer(records, answers[ds])
    recorded = Recorded(
        model=config.model,
        model_fingerprint=cached_model(config.model, config, call_cache(config)).fingerprint,
        knowledge=ORCHESTRATOR,
        knowledge_detail="",
        rounds=K,
        peer_model=peer_spec,
        peer_fingerprint=peer_sha,
    )
    models = {
        fs: _unsaved(fit_risk_model(train, recorded, fs, alpha, delta, command=command), fs)
        for fs in ("evidence", "evidence+cross_model")
    }
    if ship:
        fs = "evidence+cross_model"
        path = SHIPPED_DIR / artifact_name(recorded.model_fingerprint, fs)
        save_risk_model(models[fs].model, path)
        models[fs] = load_risk_model(path, recorded.model_fingerprint)
    paper = paper_config(config)
    tests: dict[str, Any] = {}
    for ds in DATASETS:
        records = recorded_items(config, ds, "test", 200, recorded_only=True)[0]
        chosen = with_peer(records, peer_answers(ds, "test"))
        if not chosen:
            continue
        tests[ds] = {"items": len(chosen)}
        for fs, m in models.items():
            lines = item_lines(ds, chosen, paper, m, m.model.operating_point.threshold)
            figures = risk_figures(lines, m.model.operating_point.alpha)
            tests[ds][fs] = figures
    return {
        "training_items": {ds: len(r) for ds, r in train.items()},
        "models": {
            fs: {
                "C": m.model.regularisation_c,
                "cv_auroc": m.model.cv_auroc,
                "calibration_auroc": m.model.calibration_auroc,
                "threshold": m.model.operating_point.threshold,
                "per_dataset": {ds: f.model_dump() for ds, f in m.model.per_dataset.items()},
                "coefficients": dict(zip(m.model.features, m.model.coef, strict=True)),
            }
            for fs, m in models.items()
        },
        "tests": tests,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="pubmedqa-l")
    parser.add_argument("--split", choices=("train", "test"), default="test")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--peer", default="embedded:qwen2.5-coder-1.5b")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument("--fit", action="store_true", help="fit the risk model with the answers")
    parser.add_argument(
        "--ship", action="store_true", help="with --fit, save the peer model into the package"
    )
    args = parser.parse_args()
    if args.fit:
        command = "python scripts/peer_agreement.py --fit" + (" --ship" if args.ship else "")
        result = fit(ship=args.ship, command=command)
        text = json.dumps(result, indent=1, default=str)
        (PEER_DIR / "risk_with_peer.json").write_text(text + "\n")
        print(text)
        return 0
    if args.out is None:
        parser.error("--out is required unless --fit")
    if not args.summary_only:
        ask(args.dataset, args.split, args.limit, args.peer, args.out)
    if args.split == "train":
        return 0  # training answers feed the risk model's fitting; nothing to compare here
    items_log = (
        ROOT / "docs" / "results" / "answerer_0.5b" / "items" / f"{args.dataset}_test.jsonl.gz"
    )
    summary = summarise(args.dataset, args.out, items_log)
    text = json.dumps(summary, indent=1)
    args.out.with_suffix(".summary.json").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
