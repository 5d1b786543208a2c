"""Recompute every headline figure of the risk rule's tables from the committed item logs.

For each ``risk_<dataset>.json`` in ``docs/results`` or below it (``medgate eval risk --write``)
the figures are computed again from the ``items/<dataset>_test.jsonl.gz`` beside it (one line
per test item: gold, baseline answer, signals, risk, status under each rule) and compared with
the table; so are the paper rule's figures and the signals' AUROCs in the
``eval_hrs_<dataset>_test_n<N>.json`` beside it when that table was written from the same
recording. The risk section of every ``eval_hrs_<dataset>_test_n<N>.json`` in the folder
or below it (e.g. another answerer's tables, ``answerer_1.5b/``) is computed again from the
``items/<dataset>_test.jsonl.gz`` written beside it. Any difference is printed and the script
exits 1. Run it from the repository's root: ``python scripts/recompute_results.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from medgate.eval.risk_eval import headline, read_items


def differences(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Where two JSON values differ (numbers within 1e-9)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for key in sorted(set(expected) | set(actual)):
            out += differences(expected.get(key), actual.get(key), f"{where}.{key}")
        return out
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        pairs = enumerate(zip(expected, actual, strict=True))
        return [d for i, (e, a) in pairs for d in differences(e, a, f"{where}[{i}]")]
    number = (int, float)
    if isinstance(expected, number) and isinstance(actual, number) and type(expected) is not bool:
        if math.isclose(expected, actual, rel_tol=0, abs_tol=1e-9):
            return []
    elif expected == actual:
        return []
    return [f"{where}: table {expected!r}, items {actual!r}"]


#: eval_hrs metrics and the paper rule's figures they must equal.
PAPER_FIGURES = {
    "baseline_accuracy": ("baseline_accuracy",),
    "escalation_rate": ("paper_rule", "escalation_rate"),
    "safety_gain": ("paper_rule", "safety_gain"),
    "auto_answer_accuracy": ("paper_rule", "auto_answer_accuracy"),
    "degradation_rate": ("paper_rule", "degradation_rate"),
}


def _at(data: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        data = data[key]
    return data


def eval_hrs_differences(results: Path, table: dict[str, Any], again: dict[str, Any]) -> list[str]:
    """The paper rule's Table 2 figures and the signals' AUROCs of ``eval_hrs_<dataset>_test_n*``
    tables written from the same recording, against the item log."""
    out = []
    for path in sorted(results.glob(f"eval_hrs_{table['dataset']}_test_n*.json")):
        data = json.loads(path.read_text())
        if data["provenance"].get("recording") != table.get("recording", {}).get("test"):
            print(f"  ({path.name} is from another recording: not checked)")
            continue
        if data["metrics"]["n"] != again["n"]:
            print(f"  ({path.name} has {data['metrics']['n']} items: not checked)")
            continue
        for name, keys in PAPER_FIGURES.items():
            out += differences(data["metrics"][name], _at(again, keys), f"{path.name}:{name}")
        for name, value in data["selective"]["auroc"].items():
            mine = again["signal_auroc"].get(name, {}).get("value")
            out += differences(value, mine, f"{path.name}:auroc.{name}")
    return out


def risk_section_differences(results: Path, path: Path) -> list[str] | None:
    """The risk rule's figures of an ``eval_hrs`` table against the item log written beside it
    by the same command; ``None`` when the table has no risk section or no item log."""
    data = json.loads(path.read_text())
    risk = data.get("risk")
    if not risk:
        return None
    items = path.parent / "items" / f"{data['provenance']['dataset']}_test.jsonl.gz"
    if not items.is_file():
        return None
    again = headline(read_items(items), risk["risk_rule"]["alpha"])
    shown = {key: value for key, value in risk.items() if key != "risk_model"}
    r = again["risk_rule"]
    print(
        f"{path.relative_to(results)}: {again['n']} items, risk AUROC "
        f"{again['risk_auroc']['value']}, risk rule escalates {r['escalation_rate']} "
        f"(lift {r['lift']}, released error {r['error_rate']})"
    )
    return differences(shown, again, f"{path.relative_to(results)}:risk")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("docs/results"))
    args = parser.parse_args(argv)
    tables = sorted(args.results.rglob("risk_*.json"))
    eval_tables = sorted(args.results.rglob("eval_hrs_*_test_n*.json"))
    if not tables and not eval_tables:
        print(f"no risk tables in {args.results}")
        return 1
    failed = 0
    for path in list(tables):
        table = json.loads(path.read_text())
        if "headline" not in table or "items" not in table:
            print(f"({path.relative_to(args.results)} is not a table of an item log: not checked)")
            tables.remove(path)
            continue
        committed = table["headline"]
        lines = read_items(path.parent / table["items"])
        again = headline(lines, committed["risk_rule"]["alpha"])
        diffs = differences(committed, again) + eval_hrs_differences(path.parent, table, again)
        r, p = again["risk_rule"], again["paper_rule"]
        print(
            f"{path.relative_to(args.results)}: {again['n']} items, "
            f"risk AUROC {again['risk_auroc']['value']}, "
            f"risk rule escalates {r['escalation_rate']} (safety gain {r['safety_gain']}, "
            f"lift {r['lift']}, released error {r['error_rate']}), paper rule escalates "
            f"{p['escalation_rate']} (safety gain {p['safety_gain']})"
        )
        for d in diffs:
            print(f"  MISMATCH {path.relative_to(args.results)}{d}")
        failed += bool(diffs)
    for path in eval_tables:
        found = risk_section_differences(args.results, path)
        if found is None:
            continue
        tables.append(path)
        for d in found:
            print(f"  MISMATCH {d}")
        failed += bool(found)
    if failed:
        print(f"{failed} of {len(tables)} tables differ from their item logs")
        return 1
    print(f"{len(tables)} tables match their item logs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
