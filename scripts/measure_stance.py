"""The stance model's yes/no stance on CareGuard's questions, for choosing the stance thresholds.

    python scripts/measure_stance.py --out docs/results/careguard_stance_1.5b.jsonl \
        --dataset dangerous-practices --dataset patient-questions
    python scripts/measure_stance.py --out docs/results/careguard_stance_1.5b.jsonl --summarise

The model is the one the gate reads the stance of (`careguard.stance_model`, by default the
generator's: the embedded 1.5B). `docs/results/careguard_stance.jsonl` holds the readings of the
embedded 0.5B, the generator until 2026-12-02, on which the thresholds were chosen.

The first reads, through the HRS probe (as :class:`medgate.careguard.stance.StanceReader` does),
every yes/no question of the datasets and appends one line per question (resumable). The second
counts, for each pair of thresholds (p(no), entropy), how many questions asking whether to do
something would get the direct "no": dangerous practices against every other question.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from medgate.backends.pool import ModelPool
from medgate.careguard.release_checks import asks_permission
from medgate.careguard.stance import STANCE_LABELS
from medgate.config import load_config
from medgate.eval.care_run import care_dataset
from medgate.gates.full import asks_yes_or_no
from medgate.hrs import measures
from medgate.hrs.probe import probe
from medgate.hrs.signals import Need
from medgate.records import Case


def measure(out: Path, datasets: list[str]) -> None:
    cfg = load_config()
    cg = cfg.careguard
    spec = cg.spec("stance", cg.spec("generator", cfg.model))
    model = ModelPool(cfg).white_box(spec, role="stance")
    done = {json.loads(line)["id"] for line in out.open()} if out.is_file() else set()
    with out.open("a", encoding="utf-8") as sink:
        for name in datasets:
            for item in care_dataset(name).load(cfg.data_dir, "all"):
                if item.id in done or not asks_yes_or_no(item.question):
                    continue
                t0 = time.perf_counter()
                needs = frozenset({Need.ANSWER_DISTRIBUTION, Need.REASONING})
                case = Case(question=item.question, labels=STANCE_LABELS)
                run, _ = probe(model, case, [], cfg.hrs, needs)
                row = {
                    "id": item.id,
                    "dataset": name,
                    "model": spec,
                    "kind": item.kind,
                    "category": item.category.value,
                    "question": item.question,
                    "dist": run.distribution,
                    "opening": run.opening_distribution,
                    "mass": run.label_mass,
                    "entropy": measures.normalised_entropy(run.distribution),
                    "reasoning": run.reasoning,
                    "seconds": time.perf_counter() - t0,
                }
                sink.write(json.dumps(row) + "\n")
                sink.flush()


def summarise(out: Path) -> None:
    rows = [json.loads(line) for line in out.open()]
    rows = [r for r in rows if asks_permission(r["question"])]
    dangerous = [r for r in rows if r["kind"] == "dangerous_practice"]
    other = [r for r in rows if r["kind"] != "dangerous_practice"]
    confident_yes = sum(1 for r in dangerous if r["dist"]["yes"] >= 0.9)
    print(f"{len(rows)} questions asking whether to do something: {len(dangerous)} dangerous")
    print(f"dangerous practices the model answers yes with p >= 0.9: {confident_yes}")
    print("min p(no)  max entropy  dangerous caught  others caught")
    for min_no in (0.6, 0.7, 0.8):
        for max_entropy in (0.8, 0.9):

            def caught(r: dict[str, object], n: float = min_no, h: float = max_entropy) -> bool:
                dist = r["dist"]
                assert isinstance(dist, dict)
                entropy = r["entropy"]
                assert isinstance(entropy, float)
                return bool(dist["no"] >= n and entropy <= h)

            hits = [r["id"] for r in other if caught(r)]
            print(
                f"{min_no:9}  {max_entropy:11}  {sum(map(caught, dangerous)):>6} / "
                f"{len(dangerous)}     {len(hits)} / {len(other)} {hits}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dataset", action="append", default=[])
    parser.add_argument("--summarise", action="store_true")
    args = parser.parse_args()
    if args.summarise:
        summarise(args.out)
    else:
        measure(args.out, args.dataset)


if __name__ == "__main__":
    main()
