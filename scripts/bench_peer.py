"""What a second model (``hrs.peer_model``) costs a whole ``medgate ask``: alternating runs of
the same question with and without it, each a fresh process, so the figures include loading.
With ``--answerer SPEC``, what answering with SPEC instead of the default model costs.

Reported: each run's wall seconds and peak resident memory, the gate's own seconds (the
verdict's ``timings``), and the ratio of medians and median of per-pair ratios (pairs run back
to back, so a shared machine's load moves both alike).

Run: python scripts/bench_peer.py --runs 5 --out docs/results/bench_peer.json
     python scripts/bench_peer.py --runs 5 --answerer embedded:qwen2.5-coder-1.5b \
         --out docs/results/bench_answerer.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTION = "Does aspirin reduce the risk of a second heart attack?"
CONTEXT = (
    "In a randomised trial of 5000 patients after myocardial infarction, daily low-dose aspirin "
    "reduced recurrent myocardial infarction by 25% compared with placebo."
)


#: The settings a run is compared with and without; they are cleared from the environment of
#: the run without them.
VARIED = ("MEDGATE_HRS__PEER_MODEL", "MEDGATE_MODEL")


def one_run(context: Path, settings: dict[str, str]) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k not in VARIED}
    env.update(settings)
    medgate = Path(sys.executable).with_name("medgate")
    argv = [str(medgate), "ask", QUESTION, "--context-file", str(context), "--json"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    # wait4 gives this child's own peak memory (ru_maxrss, KiB on Linux).
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"medgate ask failed (status {status}) with {settings or 'defaults'}")
    verdict = json.loads(out)
    return {
        "seconds": seconds,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "gate_seconds": float(verdict["timings"]["hrs.total"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--peer", default="embedded:qwen2.5-coder-1.5b")
    parser.add_argument("--answerer", help="compare this answering model with the default")
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args()
    if args.answerer:
        settings = {"MEDGATE_MODEL": args.answerer}
    else:
        settings = {"MEDGATE_HRS__PEER_MODEL": args.peer}
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp) / "context.txt"
        context.write_text(CONTEXT + "\n")
        pairs = [(one_run(context, {}), one_run(context, settings)) for _ in range(args.runs)]

    def median(which: int, key: str) -> float:
        return statistics.median(p[which][key] for p in pairs)

    report = {
        "runs": args.runs,
        **({"answerer": args.answerer} if args.answerer else {"peer": args.peer}),
        "with": settings,
        "pairs": pairs,
        "median_seconds": {"without": median(0, "seconds"), "with": median(1, "seconds")},
        "median_gate_seconds": {
            "without": median(0, "gate_seconds"),
            "with": median(1, "gate_seconds"),
        },
        "median_peak_rss_mb": {
            "without": median(0, "peak_rss_mb"),
            "with": median(1, "peak_rss_mb"),
        },
        "ratio_of_medians": median(1, "seconds") / median(0, "seconds"),
        "median_of_ratios": statistics.median(b["seconds"] / a["seconds"] for a, b in pairs),
    }
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
