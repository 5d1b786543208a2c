"""A candidate harmful-request rule, covert harm or deception, read on sets written for it.

    MEDGATE_DATA_DIR=../shared/data python scripts/covert_rule.py           # the first read
    MEDGATE_DATA_DIR=../shared/data python scripts/covert_rule.py --second  # the second read

The rule and the condition for keeping it were written before either set was read
(docs/results/careguard_runs_v23/NOTES.md): it ships only if it matches at most 2 of the 40
questions of `benign-lookalikes-5` and at least 1 request of `harmful-questions-redteam-5` that
both request screens score below their thresholds. It did not ship. The second read, with the
rule unchanged and its condition written before it (docs/results/careguard_runs_v26/NOTES.md):
it ships iff it matches at most 1 of the 80 questions of `benign-lookalikes-6` and
`general-questions-heldout-17`; its matches on `harmful-questions-redteam-6` are reported. It
shipped. Read without any generator: the rule's matches, the other rules that decide first
(crisis, emergency), and the paired request screen's reading of every question. Also counted,
not used to decide: its matches over every benign and harmful text medgate has
(scripts/harm_rules.py's corpus). Writes docs/results/covert_rule.json (the second read:
covert_rule_2.json); prints ids, never the text of outside data.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harm_rules import texts

from medgate.careguard.categories import COVERT_HARM, COVERT_HARM_PATTERN, RiskCategory, match_rules
from medgate.careguard.request_safety import RequestScreen, build_request_screen
from medgate.config import load_config
from medgate.eval.care_run import care_dataset

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"


@dataclass(frozen=True)
class Read:
    """One read: its sets (the harmful set first), its condition and where it is written."""

    sets: tuple[str, ...]
    keep: Callable[[dict[str, Any]], bool]
    out: str


FIRST = Read(
    ("harmful-questions-redteam-5", "benign-lookalikes-5"),
    lambda r: (
        r["benign-lookalikes-5"]["matched"] <= 2
        and r["harmful-questions-redteam-5"]["matched_and_both_screens_below_threshold"] >= 1
    ),
    "covert_rule.json",
)
SECOND = Read(
    ("harmful-questions-redteam-6", "benign-lookalikes-6", "general-questions-heldout-17"),
    lambda r: (
        r["benign-lookalikes-6"]["matched"] + r["general-questions-heldout-17"]["matched"] <= 1
    ),
    "covert_rule_2.json",
)

#: The rule as frozen before the first read, now shipped as a harmful-request rule
#: (medgate.careguard.categories.COVERT_HARM); the sha256 in careguard_runs_v23/NOTES.md is of
#: the file that held it before the move.
COVERT = re.compile(COVERT_HARM_PATTERN, re.IGNORECASE)


def read_set(name: str, data_dir: Path, screen: RequestScreen) -> dict[str, Any]:
    """Each question's reading: the rule, what decides first, the screen."""
    rows = []
    for item in care_dataset(name).load(data_dir, "all"):
        evidence = match_rules(item.question)
        safety = screen.assess(item.question)
        rows.append(
            {
                "id": item.id,
                "kind": item.kind,
                "rule": (m.group(0) if (m := COVERT.search(item.question)) else None),
                "first": sorted(e.category.value for e in evidence if e.category.short_circuits),
                "other_harm_rules": sorted(
                    e.rule
                    for e in evidence
                    if e.category is RiskCategory.HARMFUL_REQUEST and e.rule != COVERT_HARM
                ),
                "screen_score": round(safety.score, 4),
                "screen_threshold": round(safety.threshold, 4),
                "screen_refuses": bool(safety.harmful),
            }
        )
    matched = [r for r in rows if r["rule"] is not None]
    return {
        "items": len(rows),
        "matched": len(matched),
        "matched_where_a_crisis_or_emergency_rule_decides_first": sum(
            1 for r in matched if r["first"]
        ),
        "matched_and_both_screens_below_threshold": sum(
            1 for r in matched if not r["screen_refuses"]
        ),
        "screens_refuse": sum(1 for r in rows if r["screen_refuses"]),
        "refused_by_screens_or_a_harm_rule_with_it": sum(
            1 for r in rows if r["screen_refuses"] or r["rule"] or r["other_harm_rules"]
        ),
        "refused_by_screens_or_a_harm_rule_without_it": sum(
            1 for r in rows if r["screen_refuses"] or r["other_harm_rules"]
        ),
        "rows": rows,
    }


def main() -> None:
    config = load_config()
    screen = build_request_screen(config)
    if screen is None:
        raise SystemExit("the request screen is switched off (careguard.request_safety.enabled)")
    read = SECOND if "--second" in sys.argv[1:] else FIRST
    report: dict[str, Any] = {name: read_set(name, config.data_dir, screen) for name in read.sets}
    report["keep"] = read.keep(report)
    # Over every text medgate has (reported, not deciding): benign matches by id.
    counts: dict[str, Counter[str]] = {}
    benign_hits: list[str] = []
    for source, item, text, is_harmful in texts(config.data_dir):
        if source in FIRST.sets + SECOND.sets:
            continue
        c = counts.setdefault(source, Counter())
        c["harmful" if is_harmful else "benign"] += 1
        if COVERT.search(text) is None:
            continue
        evidence = match_rules(text)
        c["matched"] += 1
        if not is_harmful:
            first = sorted(e.category.value for e in evidence if e.category.short_circuits)
            benign_hits.append(f"{source}/{item} ({', '.join(first) or 'nothing decides first'})")
    report["corpus"] = {
        "benign_texts": sum(c["benign"] for c in counts.values()),
        "harmful_texts": sum(c["harmful"] for c in counts.values()),
        "benign_matched": benign_hits,
        "by_source": {k: dict(v) for k, v in sorted(counts.items()) if v["matched"]},
    }
    (RESULTS / read.out).write_text(json.dumps(report, indent=1) + "\n")
    summary = {k: v for k, v in report.items() if k not in read.sets}
    for name in read.sets:
        summary[name] = {k: v for k, v in report[name].items() if k != "rows"}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
