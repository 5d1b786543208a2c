"""Which embedded model should answer by default? Baseline quality and cost on PubMedQA-L.

For each model, in its own process (so peak memory is its own), answer the first N items of the
PubMedQA-L test split once with the full five-signal probe (no orchestrator) and report 3-way
accuracy, the always-"yes" accuracy on the same items, AUROC of entropy and of perplexity for a
wrong answer, the median wall time of one probe, the model load time and the peak resident memory.

Run: python scripts/compare_models.py --items 40 \
        embedded:qwen2.5-coder-0.5b embedded:qwen2.5-coder-1.5b --out docs/results/model_choice.json
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def measure(spec: str, items: int, data_dir: Path) -> dict[str, object]:
    from medgate.backends.pool import ModelPool
    from medgate.config import load_config
    from medgate.eval.data import dataset_split
    from medgate.eval.metrics import auroc
    from medgate.hrs.probe import needs_of, probe
    from medgate.hrs.signals import SignalContext, build_signals

    config = load_config(model=spec)
    t0 = time.perf_counter()
    model = ModelPool(config).white_box(spec)
    load_s = time.perf_counter() - t0
    signals = build_signals(["entropy", "perplexity", "token_length"])
    ctx = SignalContext(l_max=config.hrs.l_max)
    test = dataset_split("pubmedqa-l", data_dir).test[:items]
    rows = []
    for item in test:
        t = time.perf_counter()
        run, _ = probe(model, item.case(), [], config.hrs, needs_of(signals))
        seconds = time.perf_counter() - t
        values = {s.name: s.compute(run, ctx).value for s in signals}
        rows.append({"gold": item.gold, "answer": run.answer, "seconds": seconds, **values})
        print(f"{spec} {len(rows)}/{len(test)} {seconds:.1f}s", file=sys.stderr, flush=True)
    wrong = [r["answer"] != r["gold"] for r in rows]
    return {
        "model": spec,
        "sha256": model.fingerprint,
        "items": len(rows),
        "accuracy": round(1 - sum(wrong) / len(rows), 3),
        "always_yes_accuracy": round(sum(r["gold"] == "yes" for r in rows) / len(rows), 3),
        "auroc_entropy_wrong": _round(auroc([float(r["entropy"] or 0) for r in rows], wrong)),
        "auroc_perplexity_wrong": _round(auroc([float(r["perplexity"] or 0) for r in rows], wrong)),
        "mean_reasoning_tokens": round(
            statistics.mean(float(r["token_length"] or 0) * config.hrs.l_max for r in rows), 1
        ),
        "median_probe_s": round(statistics.median(float(r["seconds"]) for r in rows), 2),
        "load_s": round(load_s, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--items", type=int, default=40)
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(args.models[0], args.items, args.data_dir)))
        return 0
    results = []
    for spec in args.models:
        cmd = [sys.executable, __file__, "--one", spec, "--items", str(args.items)]
        cmd += ["--data-dir", str(args.data_dir)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    report = {"date": time.strftime("%Y-%m-%d"), "dataset": "pubmedqa-l test", "results": results}
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
