"""The both-sides release check read over every released answer to a comparison question.

    python scripts/one_sided_replay.py

Reads every record of ``docs/results/careguard_runs*/`` released or refined, whose question asks
how two things differ (:func:`medgate.careguard.comparison.compared_sides`), and prints each
distinct (question, released text) pair that :func:`medgate.careguard.comparison.one_sided`
would hold back. A replay of the check alone on texts the gate already released: it says which
answers the check reads as one-sided, not what the gate would have drafted instead.
"""

from __future__ import annotations

import json
from pathlib import Path

from medgate.careguard.comparison import compared_sides, one_sided
from medgate.claims.safety_check import DISCLAIMER_SEPARATOR

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"


def main() -> None:
    seen: set[tuple[str, str]] = set()
    held: list[tuple[str, str, str, str]] = []
    for log in sorted(RESULTS.glob("careguard_runs*/*.jsonl")):
        for line in log.read_text("utf-8").splitlines():
            record = json.loads(line)
            question = record.get("question") or ""
            if record.get("status") not in ("released", "refined"):
                continue
            if compared_sides(question) is None:
                continue
            text = (record.get("shown") or "").split(DISCLAIMER_SEPARATOR)[0].strip()
            if (question, text) in seen:
                continue
            seen.add((question, text))
            if one_sided(question, text):
                held.append((log.parent.name, record["id"], question, text))
    print(f"{len(seen)} distinct released answers to comparison questions; {len(held)} one-sided")
    for run, item, question, text in held:
        print(f"- {run} {item}: {question}\n    {text[:200]}")


if __name__ == "__main__":
    main()
