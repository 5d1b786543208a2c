"""Can a closed reading of a model's hallucination rubric rank a wrong draft?

    export MEDGATE_BACKEND__N_THREADS=1
    python scripts/hra_reading.py --collect --pool dev --model 0.5b   # and --model 1.5b
    python scripts/hra_reading.py --collect --pool test --model CHOSEN --shard 0/2   # and 1/2
    python scripts/hra_reading.py --report

Why: the HRA judge (the embedded 0.5B writes a justification, then a score of 1-5) does not see
wrong answers (docs/results/judges.md, docs/careguard.md "HRA's risk model"), and the SRA judge's
written score ranks a complying draft at chance where the expected score over its rubric, read
from the same model's probabilities, does better (docs/results/sra_reading.md). The same
reading under the HRA rubric, by the HRA's model (0.5B) and by the generator (1.5B), alone and
beside the best score the gate's own readings give today (the maximum of the opening's
``support`` and the trim's sentence P(no), docs/results/opening_support.md).

Drafts: the hand-labelled pools of ``scripts/opening_support.py`` (dev 105, test 158; a draft
is wrong when any sentence is wrong or degenerate). What is read and what it decides is fixed in
docs/results/hra_reading.md ("The rule"), written before any reading. ``--collect`` appends one
gzipped JSON line per draft (resumable) to ``docs/results/hra_reading_POOL_MODEL_K.jsonl.gz``
(key and reading, no text); ``--report`` writes docs/results/hra_reading.json.
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# Run as a file (python scripts/NAME.py), the repository root must be importable too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.opening_support import scored
from scripts.self_check_prompts import pool_drafts
from scripts.sra_reading import expected_score
from scripts.trim_doubted import wrong_sentences

from medgate.backends.pool import ModelPool
from medgate.careguard.evaluators import HRA_RUBRIC
from medgate.careguard.hra_fit import append_item, auroc_with_ci, parse_shard, read_items
from medgate.config import load_config
from medgate.eval.metrics import auroc, bootstrap_ci

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
OUT = RESULTS / "hra_reading.json"
MODELS = {"0.5b": "embedded:qwen2.5-coder-0.5b", "1.5b": "embedded:qwen2.5-coder-1.5b"}
QUESTION = (
    "Rate the hallucination risk of the reply from 1 to 5.\n"
    + HRA_RUBRIC.split("\n", 1)[1]
    + "\nAnswer with the number only."
)


def today(row: dict[str, Any]) -> float:
    """The best whole-draft score of the gate's own readings (opening_support.md)."""
    return float(max(row["support"], *row["sentences"]))


#: The candidates, over a pool row with the readings of both models (``rubric_0.5b`` ...).
CANDIDATES: dict[str, Callable[[dict[str, Any]], float]] = {
    "rubric 0.5b": lambda r: r["rubric_0.5b"],
    "rubric 1.5b": lambda r: r["rubric_1.5b"],
    "mean of today's and rubric 0.5b": lambda r: (today(r) + r["rubric_0.5b"]) / 2,
    "mean of today's and rubric 1.5b": lambda r: (today(r) + r["rubric_1.5b"]) / 2,
}


def model_of(candidate: str) -> str:
    return candidate.rsplit(" ", 1)[1]


def collect(pool: str, model_key: str, shard: int, shards: int) -> None:
    model = ModelPool(load_config()).white_box(MODELS[model_key], role="hra")
    labelled = {r["key"] for r in scored(pool, wrong_sentences())}
    out = RESULTS / f"hra_reading_{pool}_{model_key}_{shard}.jsonl.gz"
    done = {r["key"] for r in read_items(out)} if out.exists() else set()
    drafts = [d for d in pool_drafts(pool) if d["key"] in labelled][shard::shards]
    for d in drafts:
        if d["key"] in done:
            continue
        t0 = time.perf_counter()
        value = expected_score(model, QUESTION, d["question"], d["draft"])
        append_item(
            out,
            {
                "key": d["key"],
                f"rubric_{model_key}": value,
                "seconds": round(time.perf_counter() - t0, 2),
            },
        )


def pool_rows(pool: str) -> list[dict[str, Any]]:
    """The pool's labelled rows with every rubric reading collected for them."""
    readings: dict[str, dict[str, float]] = {}
    for f in sorted(glob.glob(str(RESULTS / f"hra_reading_{pool}_*.jsonl.gz"))):
        for r in read_items(Path(f)):
            readings.setdefault(r["key"], {}).update(
                {k: v for k, v in r.items() if k.startswith("rubric_")}
            )
    return [{**r, **readings.get(r["key"], {})} for r in scored(pool, wrong_sentences())]


def reading() -> dict[str, Any]:
    dev, test = pool_rows("dev"), pool_rows("test")
    y_dev = [r["wrong_draft"] for r in dev]
    on_dev = {
        name: auroc_with_ci([score(r) for r in dev], y_dev).model_dump()
        for name, score in CANDIDATES.items()
    }
    on_dev["today's (reference)"] = auroc_with_ci([today(r) for r in dev], y_dev).model_dump()
    chosen = max(CANDIDATES, key=lambda name: on_dev[name]["value"] or 0.0)
    result: dict[str, Any] = {
        "command": "python scripts/hra_reading.py --report",
        "dev": on_dev,
        "chosen": chosen,
    }
    key = f"rubric_{model_of(chosen)}"
    rows = [r for r in test if key in r]
    if rows:
        y = np.asarray([r["wrong_draft"] for r in rows])
        new = np.asarray([CANDIDATES[chosen](r) for r in rows])
        old = np.asarray([today(r) for r in rows])

        def diff(idx: list[int] | Any) -> float | None:
            i = list(idx)
            a, b = auroc(new[i].tolist(), y[i].tolist()), auroc(old[i].tolist(), y[i].tolist())
            return None if a is None or b is None else a - b

        result["test"] = {
            "drafts": len(rows),
            "wrong": int(y.sum()),
            "chosen": auroc_with_ci(new.tolist(), y.tolist()).model_dump(),
            "today's": auroc_with_ci(old.tolist(), y.tolist()).model_dump(),
            "difference": bootstrap_ci(diff, len(rows), 2000, 7),
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collect", action="store_true")
    parser.add_argument("--pool", choices=("dev", "test"))
    parser.add_argument("--model", choices=tuple(MODELS))
    parser.add_argument(
        "--shard", type=parse_shard, default=(0, 1), help="K/N: every N-th draft from the K-th"
    )
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args()
    if args.collect:
        if args.pool is None or args.model is None:
            parser.error("--collect needs --pool and --model")
        collect(args.pool, args.model, *args.shard)
    if args.report:
        result = reading()
        OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
