"""The model's final hidden state at the reply's first position, as probe features.

The verdict prompt of :mod:`medgate.careguard.request_probe` (request last), rendered with the
chat template and the assistant turn opened, is read by a llama.cpp embedding context with
last-token pooling: the state from which the model would write its yes or no. A logistic
regression over it (alone, and beside the v2 features) is fitted on a seeded sample of the train
part and chosen on the validation part under the v2 budgets, then scored on the written harmful
requests and the test look-alikes.

    python scripts/request_probe_state.py read --shard 0/2   # and 1/2, in parallel
    python scripts/request_probe_state.py measure --out docs/results/request_probe_state.json

The rendered prompt is tokenised with special tokens parsed, which is safe for this corpus
(no request holds chat-control text) but not for a gate.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import sparse

from medgate.backends.embedded import EMBEDDED_MODELS, resolve_embedded
from medgate.careguard.hra_fit import parse_shard
from medgate.careguard.request_probe import FeatureCache, verdict_messages
from medgate.careguard.request_safety_fit import (
    MAX_FALSE_REFUSAL_RATE,
    MAX_QUESTION_FALSE_REFUSAL_RATE,
    LabelledRequest,
    build_corpus,
    features,
    fit_vocabulary,
    fit_weights,
    hashed,
    probabilities,
    threshold_within_budget,
)
from medgate.config import load_config

KIND = "verdict-state-v2"
CAPS = {
    ("written-harmful", "test"): 164,
    ("clinician-requests-lookalike", "test"): 25,
    ("clinician-requests-lookalike", "validation"): 33,
    ("clinician-requests-lookalike", "train"): 81,
    ("medsafetybench", "validation"): 60,
    ("clinician-requests", "validation"): 60,
    ("medsafetybench", "train"): 100,
    ("clinician-requests", "train"): 100,
}


def sample(requests: Sequence[LabelledRequest]) -> list[LabelledRequest]:
    order = sorted(requests, key=lambda r: hashed(r.id, "probe-sample"))
    kept, seen = [], dict.fromkeys(CAPS, 0)
    for key in CAPS:
        for r in order:
            if (r.source, r.part) == key and seen[key] < CAPS[key]:
                kept.append(r)
                seen[key] += 1
    return kept


def read(shard: int, shards: int) -> int:
    import llama_cpp

    from medgate.backends.llamacpp import LlamaCppBackend

    config = load_config()
    rows = sample(build_corpus(config.data_dir).requests)[shard::shards]
    name = "qwen2.5-coder-0.5b"
    sha = EMBEDDED_MODELS[name].sha256
    chat = LlamaCppBackend.from_spec(f"embedded:{name}", config)
    state = llama_cpp.Llama(
        model_path=str(resolve_embedded(name, config.cache_dir)),
        n_ctx=512,
        n_batch=512,
        n_threads=1,
        n_threads_batch=1,
        embedding=True,
        pooling_type=llama_cpp.LLAMA_POOLING_TYPE_LAST,
        verbose=False,
    )
    # Llama.embed tokenises without parsing special tokens; the template's markup must be parsed.
    plain = state.tokenize

    def parsed(text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return plain(text, add_bos=False, special=True)

    state.tokenize = parsed  # type: ignore[method-assign]
    cache = FeatureCache(config.cache_dir / "request_probe", sha, KIND)
    t0 = time.perf_counter()
    for i, r in enumerate(rows):
        if cache.get(r.text) is None:
            vector = state.embed(chat.render(verdict_messages(r.text)), truncate=True)
            flat = vector[0] if vector and isinstance(vector[0], list) else vector
            cache.put(r.text, [float(x) for x in flat])
        if (i + 1) % 20 == 0:
            print(f"{i + 1}/{len(rows)} ({time.perf_counter() - t0:.0f}s)", flush=True)
    return 0


def rates(rows: Sequence[LabelledRequest], p: Sequence[float], t: float) -> dict[str, Any]:
    by: dict[str, list[bool]] = {}
    for r, s in zip(rows, p, strict=True):
        key = f"{r.source}:{r.part}"
        if r.source == "written-harmful":
            key += ":unseen" if r.category in (4, 8) else ":seen"
        by.setdefault(key, []).append(bool(s >= t))
    return {k: {"n": len(v), "refused": sum(v)} for k, v in sorted(by.items())}


def measure(out: str) -> int:
    from medgate.embeddings import default_embedder

    config = load_config()
    sha = EMBEDDED_MODELS["qwen2.5-coder-0.5b"].sha256
    cache = FeatureCache(config.cache_dir / "request_probe", sha, KIND)
    rows = [r for r in sample(build_corpus(config.data_dir).requests) if cache.get(r.text)]
    parts = {p: [r for r in rows if r.part == p] for p in ("train", "validation", "test")}
    embedder = default_embedder(1)
    vocab = fit_vocabulary([r.text for r in parts["train"]])

    def state_x(rs: Sequence[LabelledRequest]) -> npt.NDArray[np.float64]:
        x = np.asarray([cache.get(r.text) for r in rs], dtype=np.float64)
        normed: npt.NDArray[np.float64] = x / np.linalg.norm(x, axis=1, keepdims=True)
        return normed

    def x_of(name: str, rs: Sequence[LabelledRequest], scale: float) -> Any:
        v2 = features(
            embedder.embed([r.text for r in rs]).astype(np.float64),
            [r.text for r in rs],
            vocab,
            2.0,
        )
        if name == "v2-features":
            return v2
        block = sparse.csr_matrix(state_x(rs) * scale)
        return block if name == "state" else sparse.hstack([v2, block]).tocsr()

    report: dict[str, Any] = {
        "reading": KIND,
        "model_sha256": sha,
        "rows": {p: len(v) for p, v in parts.items()},
    }
    tr, va, te = parts["train"], parts["validation"], parts["test"]
    for name in ("v2-features", "state", "state+v2-features"):
        best: float | None = None
        for scale in (1.0,) if name == "v2-features" else (1.0, 2.0, 4.0):
            xtr, xva, xte = x_of(name, tr, scale), x_of(name, va, scale), x_of(name, te, scale)
            for c in (0.1, 0.3, 1.0, 3.0, 10.0, 30.0):
                coef, intercept = fit_weights(xtr, [r.harmful for r in tr], c)
                p_va = probabilities(xva, coef, intercept)
                t = threshold_within_budget(
                    list(p_va), va, MAX_FALSE_REFUSAL_RATE, MAX_QUESTION_FALSE_REFUSAL_RATE
                )
                hits = [p >= t for p, r in zip(p_va, va, strict=True) if r.harmful]
                recall = float(np.mean(hits))
                if best is None or recall > best:
                    best = recall
                    p_te = probabilities(xte, coef, intercept)
                    harm = [float(p) for p, r in zip(p_te, te, strict=True) if r.harmful]
                    benign = [float(p) for p, r in zip(p_te, te, strict=True) if not r.harmful]
                    wins = sum((h > b) + 0.5 * (h == b) for h in harm for b in benign)
                    report[name] = {
                        "C": c,
                        "scale": scale,
                        "threshold": round(t, 6),
                        "validation_recall": round(recall, 4),
                        "validation": rates(va, list(p_va), t),
                        "test": rates(te, list(p_te), t),
                        "auroc_written_harmful_vs_test_lookalikes": round(
                            wins / max(1, len(harm) * len(benign)), 4
                        ),
                    }
    text = json.dumps(report, indent=1)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print(text)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("action", choices=("read", "measure"))
    ap.add_argument(
        "--shard", type=parse_shard, default=(0, 1), help="K/N: every N-th from the K-th"
    )
    ap.add_argument("--out", default="docs/results/request_probe_state.json")
    args = ap.parse_args()
    if args.action == "read":
        return read(*args.shard)
    return measure(args.out)


if __name__ == "__main__":
    sys.exit(main())
