"""What fails the drafts of general questions: each check's count over the failed rounds.

Reads the committed run logs of the general-question sets (``general-questions-heldout-*``) in
the run directories named, and for every round that did not pass counts which checks held it
back: the HRA judge's score above its threshold, the SRA judge's (when not waived), the claims
layer's blocking claims, each release check, the trim, the reply screen. A round can fail on
several. Also lists the questions whose every round failed on the HRA judge alone.

    python scripts/judge_failures.py docs/results/careguard_runs_v2[0-9]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from medgate.careguard.records import Trimming


def reasons(rnd: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """The checks that held one round back, against the run's own thresholds (``settings``:
    the CareGuard settings in the manifest beside its log)."""
    judged = rnd.get("assessments") or {}
    hra = (judged.get("hra") or {}).get("score")
    sra = (judged.get("sra") or {}).get("score")
    why = []
    if hra is not None and hra > settings["hra_threshold"]:
        why.append("HRA judge")
    if sra is not None and sra > settings["sra_threshold"] and not rnd.get("waiver"):
        why.append("SRA judge")
    if (rnd.get("claims") or {}).get("blocking"):
        why.append("claims layer")
    why += [f"release check {f['check']}" for f in rnd.get("release_findings") or []]
    if rnd.get("trimming"):
        trimming = Trimming.model_validate(rnd["trimming"])
        why += [
            f"trim {name}"
            for name, held in (
                ("header_only", trimming.header_only),
                ("opening_doubted", trimming.opening_doubted),
                ("one_sided", trimming.one_sided),
            )
            if held
        ]
    if (rnd.get("reply_safety") or {}).get("harmful"):
        why.append("reply screen")
    return why


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    failed = 0
    hra_only: list[str] = []
    for directory in args.runs:
        for log in sorted(directory.glob("general-questions-heldout-*.jsonl")):
            settings = json.loads(log.with_suffix(".json").read_text())["careguard"]
            for line in log.read_text().splitlines():
                item = json.loads(line)
                rounds = item["record"]["verdict"]["trace"]["stages"]["careguard"]["rounds"]
                held = [reasons(r, settings) for r in rounds if not r.get("passed")]
                failed += len(held)
                for why in held:
                    counts.update(why)
                    if not why:
                        counts["none of these"] += 1
                if rounds and len(held) == len(rounds) and all(w == ["HRA judge"] for w in held):
                    hra_only.append(f"{directory.name}/{item['id']}")
    print(f"failed rounds: {failed}")
    for name, n in counts.most_common():
        print(f"  {name}: {n}")
    print(f"every round failed on the HRA judge alone ({len(hra_only)}): {', '.join(hra_only)}")


if __name__ == "__main__":
    main()
