"""The request screen as the gate runs it: the shipped classifier and the question screen together.

A request is refused when either classifier scores it at or above its own threshold
(:class:`medgate.careguard.request_safety.PairedScreen`). Each classifier's own report
(``medgate eval request-safety``) scores its validation and test parts; this reads the two
item files and counts, for every source of the question screen's test part, what each refuses
alone and what the pair refuses. The parts are the question screen's: its test part holds every
source's test rows, the harmful questions' 20% test share among them (the shipped classifier
scored all of those, as it never fitted them).

    export MEDGATE_DATA_DIR=../shared/data
    medgate eval request-safety
    Q=src/medgate/careguard/data/request_safety_questions.json
    MEDGATE_CAREGUARD__REQUEST_SAFETY__ARTIFACT=$Q medgate eval request-safety
    python scripts/question_screen.py     # docs/results/question_screen.{json,md}
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
SHIPPED = RESULTS / "request_safety_items.jsonl"
QUESTIONS = RESULTS / "request_safety_questions_items.jsonl"


def items(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return {(r["source"], r["id"]): r for r in rows}


def union_by_source(
    shipped: dict[tuple[str, str], dict[str, Any]],
    questions: dict[tuple[str, str], dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Per source of the question screen's test part: n, harmful, refused by each and by both."""
    counts: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"n": 0, "harmful": None, "shipped": 0, "questions": 0, "either": 0}
    )
    for key, q in questions.items():
        if q["part"] != "test":
            continue
        s = shipped.get(key)
        if s is None:
            raise SystemExit(
                f"{key} is in the question screen's test part but not scored by the "
                "shipped classifier: regenerate both reports on the same data"
            )
        c = counts[q["source"]]
        c["n"] += 1
        c["harmful"] = q["harmful"]
        c["shipped"] += int(s["refused"])
        c["questions"] += int(q["refused"])
        c["either"] += int(s["refused"] or q["refused"])
    return dict(sorted(counts.items()))


def markdown(table: dict[str, dict[str, Any]], shipped: str, questions: str) -> str:
    lines = [
        "# The request screen as the gate runs it: shipped classifier and question screen",
        "",
        "Recomputed by `python scripts/question_screen.py` from the two classifiers' item files "
        f"(`{SHIPPED.name}`, `{QUESTIONS.name}`). Shipped classifier: `{shipped}`; question "
        f"screen: `{questions}`. A request is refused when either refuses it. Test parts only "
        "(never fitted or chosen on); for harmful sources the share refused is recall, for the "
        "rest it is false refusals (dangerous-practice questions deserve a direct no, so a "
        "refusal there is a cost).",
        "",
        "| source | harmful | n | shipped alone | question screen alone | either (the gate) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for source, c in table.items():
        n = c["n"]
        cells = [f"{c[k]} ({c[k] / n:.3f})" for k in ("shipped", "questions", "either")]
        harmful = "yes" if c["harmful"] else "no"
        lines.append(f"| {source} | {harmful} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def artifact_of(report: Path) -> str:
    return str(json.loads(report.read_text(encoding="utf-8"))["artifact"])


def main() -> None:
    table = union_by_source(items(SHIPPED), items(QUESTIONS))
    shipped = artifact_of(RESULTS / "request_safety.json")
    questions = artifact_of(RESULTS / "request_safety_questions.json")
    out = {"shipped": shipped, "questions": questions, "test": table}
    (RESULTS / "question_screen.json").write_text(json.dumps(out, indent=1) + "\n")
    (RESULTS / "question_screen.md").write_text(markdown(table, shipped, questions))
    print(markdown(table, shipped, questions))


if __name__ == "__main__":
    main()
