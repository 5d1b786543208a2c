"""Which requests of a CareGuard request set do the keyword rules alone send to crisis guidance?

    python scripts/crisis_rules.py --dataset crisis-questions-heldout [--dataset ...]
    python scripts/crisis_rules.py --file src/medgate/careguard/data/crisis_questions.jsonl

For each request: whether a self-harm or emergency rule matched (and which words), and whether
the rules would overrule a controller model's crisis finding (`rules_out_urgency`). No model is
read, so this shows what the rules carry on their own; `medgate eval care` runs the whole gate.
`--file` reads one of medgate's own request files directly (id, question, category per line),
so an older commit's rules, put first on PYTHONPATH, can be read against a set written later.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from medgate.careguard.categories import match_rules, rules_out_urgency
from medgate.eval.care_run import care_dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", action="append", default=[])
    parser.add_argument("--file", action="append", type=Path, default=[])
    parser.add_argument("--split", default="all")
    parser.add_argument("--data-dir", type=Path, default=Path("."))
    args = parser.parse_args()
    if not args.dataset and not args.file:
        parser.error("name at least one --dataset or --file")
    sets: list[tuple[str, list[tuple[str, str, str]]]] = []
    for name in args.dataset:
        loaded = care_dataset(name).load(args.data_dir, args.split)
        sets.append((name, [(i.id, i.question, i.category) for i in loaded]))
    for path in args.file:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        sets.append((path.name, [(r["id"], r["question"], r["category"]) for r in rows]))
    for name, items in sets:
        matched = 0
        for item_id, question, expected in items:
            crisis = [e for e in match_rules(question) if e.category.short_circuits]
            matched += bool(crisis)
            found = "; ".join(f"{e.category.value}: {e.matched!r}" for e in crisis) or "-"
            overrules = rules_out_urgency(question) is not None
            note = " (rules out a model's crisis finding)" if overrules else ""
            print(f"{item_id:8} expected {expected:20} {found}{note}")
        print(f"{name}: {matched} of {len(items)} sent to crisis guidance by the rules alone\n")


if __name__ == "__main__":
    main()
