"""Cost of the full five-signal HRS check relative to one plain greedy answer.

For each PubMedQA-L item, in one process and alternating the order, time
  plain: one greedy reasoning + answer-slot read of the answerer prompt, and
  full:  the probe every signal needs (greedy run, three seeded samples at T=0.3 reusing the
         prompt's KV state, question embedding) plus computing the five signals,
each starting from an empty prompt cache. Reports the median of the per-item ratios, the
ratio of medians, the median time of each stage of the full check (and of reading the prompt
alone, for scale), and peak resident memory. Run: python scripts/bench_hrs.py --items 20
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

from medgate.backends.base import AnswerSlot, DecodeParams
from medgate.backends.llamacpp import LlamaCppModel
from medgate.backends.pool import ModelPool
from medgate.config import load_config
from medgate.hrs.probe import needs_of, probe
from medgate.hrs.prompts import ANSWER_CUE, REASONING_STOPS, answerer_messages
from medgate.hrs.signals import SignalContext, build_signals
from medgate.records import Case


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=20)
    ap.add_argument("--data", type=Path, default=Path("../shared/data/pubmedqa/pqal.jsonl"))
    ap.add_argument("--model", default=None, help="model spec (default: the configured model)")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args()

    config = load_config(**({"model": args.model} if args.model else {}))
    t0 = time.perf_counter()
    model = ModelPool(config).white_box(config.model)
    load_s = time.perf_counter() - t0
    if not isinstance(model, LlamaCppModel):
        print("this benchmark drives the llama.cpp backend", file=sys.stderr)
        return 2
    signals = build_signals(config.hrs.signals)
    needs = needs_of(signals)
    ctx = SignalContext(l_max=config.hrs.l_max)
    lines = args.data.read_text().splitlines()[: args.items]
    cases = []
    for line in lines:
        item = json.loads(line)
        context = (
            item["context"] if isinstance(item["context"], str) else "\n".join(item["context"])
        )
        cases.append(Case(question=item["question"], context=context))

    plain_params = DecodeParams(
        max_tokens=config.hrs.l_max,
        min_tokens=config.hrs.min_reasoning_tokens,
        stop=REASONING_STOPS,
        answer_slot=AnswerSlot(cue=ANSWER_CUE, labels=("yes", "no", "maybe")),
    )

    def plain(case: Case) -> float:
        model.forget_prompt()
        t = time.perf_counter()
        model.complete(answerer_messages(case), plain_params)
        return time.perf_counter() - t

    stages: dict[str, list[float]] = {"prompt": [], "answer": [], "embedding": [], "signals": []}

    def full(case: Case) -> float:
        model.forget_prompt()
        t = time.perf_counter()
        run, timings = probe(model, case, [], config.hrs, needs)
        t_signals = time.perf_counter()
        for s in signals:
            s.compute(run, ctx)
        end = time.perf_counter()
        for timing in timings:
            stages[timing.stage].append(timing.seconds)
        stages["signals"].append(end - t_signals)
        return end - t

    def prompt_read(case: Case) -> float:
        """Reading the prompt alone: one token generated, from an empty prompt cache."""
        model.forget_prompt()
        t = time.perf_counter()
        model.complete(answerer_messages(case), DecodeParams(max_tokens=1))
        return time.perf_counter() - t

    plains, fulls, ratios = [], [], []
    for i, case in enumerate(cases):
        if i % 2 == 0:
            p, f = plain(case), full(case)
        else:
            f, p = full(case), plain(case)
        stages["prompt"].append(prompt_read(case))
        plains.append(p)
        fulls.append(f)
        ratios.append(f / p)
        print(f"item {i + 1:>2}: plain {p:6.2f} s  full {f:6.2f} s  ratio {f / p:4.2f}", flush=True)

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {
        "model": model.name,
        "sha256": model.fingerprint,
        "items": len(cases),
        "load_seconds": round(load_s, 2),
        "plain_median_s": round(statistics.median(plains), 3),
        "full_median_s": round(statistics.median(fulls), 3),
        "median_of_ratios": round(statistics.median(ratios), 3),
        "ratio_of_medians": round(statistics.median(fulls) / statistics.median(plains), 3),
        "full_stage_median_s": {
            "prompt read (one token, not part of the ratio)": round(
                statistics.median(stages["prompt"]), 3
            ),
            "answer (prompt read, greedy run and samples decoded together)": round(
                statistics.median(stages["answer"]), 3
            ),
            "question embedding": round(statistics.median(stages["embedding"] or [0.0]), 3),
            "five signals": round(statistics.median(stages["signals"]), 4),
        },
        "threads": model.threads,
        "peak_rss_mb": round(peak_mb, 1),
        "date": time.strftime("%Y-%m-%d"),
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
