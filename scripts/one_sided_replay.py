"""The both-sides release check read over every released answer to a comparison question.

    python scripts/one_sided_replay.py
    python scripts/one_sided_replay.py \
        --labels docs/results/careguard_v18/both_sides_labels.jsonl

Reads every record of ``docs/results/careguard_runs*/`` released or refined, whose question asks
how two things differ (:func:`medgate.careguard.comparison.compared_sides`), and prints each
distinct (question, released text) pair that :func:`medgate.careguard.comparison.one_sided`
would hold back. A replay of the check alone on texts the gate already released: it says which
answers the check reads as one-sided, not what the gate would have drafted instead.

``--labels`` reads hand labels of answers (``runs``, ``id``, ``shown_sha256``, ``both_sides``,
``wrong``) and prints, per run folder, the answers labelled, those describing both sides, those
wrong, and how often the check agrees with the label on the texts it can read.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from medgate.careguard.comparison import compared_sides, one_sided
from medgate.careguard.evaluation import shown_text
from medgate.eval.care_labels import shown_sha256

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"


def read_labels(path: Path) -> None:
    """Per run folder: answers labelled, both sides, wrong; the check against the label."""
    labels = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    texts: dict[tuple[str, str], tuple[str, str]] = {}
    for folder in {label["runs"] for label in labels}:
        for log in sorted((RESULTS / folder).glob("*.jsonl")):
            for line in log.read_text("utf-8").splitlines():
                record = json.loads(line)
                if record.get("shown"):
                    text = (shown_text(record["shown"]) or "").strip()
                    texts[(folder, shown_sha256(record["shown"]))] = (record["question"], text)
    counts: dict[str, Counter[str]] = {}
    for label in labels:
        c = counts.setdefault(label["runs"], Counter())
        c["answered"] += 1
        c["both_sides"] += bool(label["both_sides"])
        c["wrong"] += bool(label["wrong"])
        question, text = texts[(label["runs"], label["shown_sha256"])]
        check_says_both = not one_sided(question, text)
        c["check_agrees"] += check_says_both == bool(label["both_sides"])
        c["check_passes_one_side"] += check_says_both and not label["both_sides"]
    for folder, c in sorted(counts.items()):
        print(f"{folder}: {dict(c)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path)
    args = parser.parse_args()
    if args.labels is not None:
        read_labels(args.labels)
        return
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
            text = (shown_text(record.get("shown")) or "").strip()
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
