"""Read the answering model's features of every request of the request-safety corpus into the
on-disk cache (``cache_dir/request_probe/MODEL_SHA/KIND.jsonl``), so that fitting is free.

    python scripts/request_probe_features.py --kind pooled
    python scripts/request_probe_features.py --kind verdict-v2
    python scripts/request_probe_features.py --kind pooled --per-source 60
    python scripts/request_probe_features.py --kind verdict-v2 --time 30

Resumes where it stopped. Sources are read in the order fitting needs them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from medgate.backends.llamacpp import LlamaCppModel
from medgate.backends.pool import ModelPool
from medgate.careguard.request_probe import READINGS, FeatureCache, read_all
from medgate.careguard.request_safety_fit import Corpus, LabelledRequest, build_corpus, hashed
from medgate.config import load_config

#: (source, part) in the order read: the new-wording test and its look-alikes first, then what
#: choosing the threshold needs, then fitting, then the rest of the test part.
ORDER = (
    ("written-harmful", "test"),
    ("clinician-requests-lookalike", None),
    ("medsafetybench", "validation"),
    ("clinician-requests", "validation"),
    ("patient-questions", None),
    ("patient-questions-harmful", None),
    ("medsafetybench", "train"),
    ("clinician-requests", "train"),
    ("pubmedqa-l", "validation"),
    ("pubmedqa-a", "validation"),
    ("bioasq", "validation"),
    ("medsafetybench", "test"),
    ("clinician-requests-heldout", "test"),
)


def timing(model: LlamaCppModel, kind: str, corpus: Corpus, n: int) -> int:
    texts = [r.text for r in corpus.where(source="clinician-requests-heldout")][: n + 1]
    reading = READINGS[kind]
    reading(model, texts[0])  # warm-up: the fixed prompt's prefix, the embedding context
    seconds = []
    for text in texts[1:]:
        t0 = time.perf_counter()
        reading(model, text)
        seconds.append(time.perf_counter() - t0)
    out = {
        "kind": kind,
        "n": len(seconds),
        "median_s": round(float(np.median(seconds)), 4),
        "p95_s": round(float(np.percentile(seconds, 95)), 4),
        "threads": model.threads,
        "load_average": [round(v, 1) for v in os.getloadavg()],
    }
    print(json.dumps(out))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=sorted(READINGS), required=True)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument(
        "--time",
        type=int,
        default=None,
        help="instead: time this many readings (the clinician-style held-out requests, no cache) "
        "after one warm-up, and print the median and p95 seconds",
    )
    ap.add_argument(
        "--per-source",
        type=int,
        default=None,
        help="at most this many requests of each (source, part), a seeded-hash sample",
    )
    args = ap.parse_args()
    config = load_config()
    corpus = build_corpus(config.data_dir)

    def rank(r: LabelledRequest) -> tuple[int, int]:
        for i, (source, part) in enumerate(ORDER):
            if r.source == source and part in (None, r.part):
                return (0, i)
        return (1, ("validation", "train", "test").index(r.part))

    chosen = sorted(corpus.requests, key=lambda r: (rank(r), hashed(r.id, "probe-sample")))
    if args.per_source:
        seen: dict[tuple[str, str], int] = {}
        kept = []
        for r in chosen:
            n = seen.get((r.source, r.part), 0)
            if n < args.per_source:
                kept.append(r)
            seen[(r.source, r.part)] = n + 1
        chosen = kept
    texts = list(dict.fromkeys(r.text for r in chosen))
    if args.limit:
        texts = texts[: args.limit]
    model = ModelPool(config).white_box(config.model)
    if args.time:
        if not isinstance(model, LlamaCppModel):
            raise SystemExit("--time measures the embedded llama.cpp model")
        return timing(model, args.kind, corpus, args.time)
    cache = FeatureCache(config.cache_dir / "request_probe", model.fingerprint, args.kind)
    t0 = time.perf_counter()
    done = len(cache)

    def progress(i: int, n: int) -> None:
        if i % 20 == 0 or i == n:
            print(f"{args.kind}: {i}/{n} ({time.perf_counter() - t0:.0f}s)", flush=True)

    read_all(model, texts, args.kind, cache, progress)
    print(f"{args.kind}: {len(cache)} cached ({done} before), {cache.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
