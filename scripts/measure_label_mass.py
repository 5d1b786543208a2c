"""How much probability does the answerer put on the allowed labels? The basis of min_label_mass.

For the first N training items of each dataset (the seeded split the evaluation uses; training
only, so the floor is not chosen on test items), run the answerer's greedy probe once, as the
gate's first round does, and keep the raw probability mass the allowed labels had at the answer
slot before renormalising. Per-item results (dataset, item id, mass, answer, seconds; no item
text) go to a JSONL file, which is resumed when run again; the summary is printed as JSON.

Run: python scripts/measure_label_mass.py --items 60 --items 40 --items 40 \
        --dataset pubmedqa-l --dataset bioasq --dataset pubmedqa-a \
        --out docs/results/label_mass.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def measure(datasets: list[str], items: list[int], data_dir: Path, out: Path) -> None:
    from medgate.config import load_config
    from medgate.errors import ModelError
    from medgate.eval.data import dataset_split
    from medgate.hrs.probe import probe
    from medgate.hrs.signals import Need
    from medgate.pipeline import ModelPool

    config = load_config()
    model = ModelPool(config).white_box(config.model)
    needs = frozenset({Need.ANSWER_DISTRIBUTION, Need.REASONING})
    done = (
        {json.loads(line)["id"] for line in out.read_text().splitlines()}
        if out.is_file()
        else set()
    )
    with out.open("a") as sink:
        for name, n in zip(datasets, items, strict=True):
            for item in dataset_split(name, data_dir).part("train")[:n]:
                if item.id in done:
                    continue
                t0 = time.perf_counter()
                row: dict[str, Any] = {"dataset": name, "id": item.id}
                try:
                    run, _ = probe(model, item.case(), [], config.hrs, needs)
                    row |= {"label_mass": run.label_mass, "answer": run.answer}
                except ModelError as exc:  # e.g. a prompt longer than the window
                    row["error"] = str(exc)[:200]
                row["seconds"] = time.perf_counter() - t0
                sink.write(json.dumps(row) + "\n")
                sink.flush()
                print(f"{name} {item.id} {row.get('label_mass')}", file=sys.stderr, flush=True)


def summary(out: Path) -> dict[str, Any]:
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    masses = sorted(r["label_mass"] for r in rows if r.get("label_mass") is not None)

    def quantile(q: float) -> float:
        return round(masses[min(len(masses) - 1, int(q * len(masses)))], 4)

    by_dataset = {
        name: round(
            min(r["label_mass"] for r in rows if r["dataset"] == name and "label_mass" in r), 4
        )
        for name in dict.fromkeys(r["dataset"] for r in rows if "label_mass" in r)
    }
    return {
        "items": len(rows),
        "measured": len(masses),
        "errors": sum(1 for r in rows if "error" in r),
        "min": round(masses[0], 4),
        "p01": quantile(0.01),
        "p05": quantile(0.05),
        "median": round(statistics.median(masses), 4),
        "min_by_dataset": by_dataset,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", action="append", required=True)
    ap.add_argument("--items", type=int, action="append", required=True)
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if len(args.dataset) != len(args.items):
        ap.error("give one --items per --dataset")
    measure(args.dataset, args.items, args.data_dir, args.out)
    print(json.dumps(summary(args.out), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
