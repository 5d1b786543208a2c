"""Recompute every headline figure of the risk rule's tables from the committed item logs.

For each ``docs/results/risk_<dataset>.json`` the figures are computed again from its
``items/<dataset>_test.jsonl.gz`` (one line per test item: gold, baseline answer, signals, risk,
status under each rule) and compared with the table; any difference is printed and the script
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("docs/results"))
    args = parser.parse_args()
    tables = sorted(args.results.glob("risk_*.json"))
    if not tables:
        print(f"no risk tables in {args.results}")
        return 1
    failed = 0
    for path in tables:
        table = json.loads(path.read_text())
        committed = table["headline"]
        lines = read_items(args.results / table["items"])
        again = headline(lines, committed["risk_rule"]["alpha"])
        diffs = differences(committed, again)
        r, p = again["risk_rule"], again["paper_rule"]
        print(
            f"{table['dataset']}: {again['n']} items, risk AUROC {again['risk_auroc']['value']}, "
            f"risk rule escalates {r['escalation_rate']} (safety gain {r['safety_gain']}, "
            f"lift {r['lift']}, released error {r['error_rate']}), paper rule escalates "
            f"{p['escalation_rate']} (safety gain {p['safety_gain']})"
        )
        for d in diffs:
            print(f"  MISMATCH {path.name}{d}")
        failed += bool(diffs)
    if failed:
        print(f"{failed} of {len(tables)} tables differ from their item logs")
        return 1
    print(f"{len(tables)} tables match their item logs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
