"""Do two CareGuard run logs of the same requests agree record for record?

    python scripts/compare_care_runs.py RUN_A.jsonl RUN_B.jsonl

Each request's scored result in one log is compared with the same request's in the other,
everything included (triage, every draft, every judge's reply and score, the decision, the
shown text) except what differs by construction: wall-clock seconds, timestamps, timings and
the records' random ids. It prints one line per request, the first path at which two records
part, and exits 1 when any does. A model served from a cache of an earlier prompt, or judges
racing for one model, show up here as drafts or scores that differ (medgate.backends.pool
.forget_prompts, medgate.careguard.evaluators.run_judges).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

#: Keys whose values are clock readings, wherever they appear.
CLOCK_KEYS = frozenset({"seconds", "created_at", "timings"})
#: A record's random id (uuid4 hex).
_RANDOM_ID = re.compile(r"^[0-9a-f]{32}$")


def comparable(value: Any) -> Any:
    """``value`` without clock readings and random ids."""
    if isinstance(value, dict):
        return {
            k: comparable(v)
            for k, v in value.items()
            if k not in CLOCK_KEYS
            and not (k == "id" and isinstance(v, str) and _RANDOM_ID.match(v))
        }
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """The first path at which ``a`` and ``b`` differ, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}"
            found = first_difference(a[key], b[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} against {len(b)})"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    return None if a == b else path or "."


def read(path: Path) -> dict[str, Any]:
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
    return {row["id"]: comparable(row) for row in rows}


def compare(a: Path, b: Path) -> list[tuple[str, str | None]]:
    """Each request both logs hold, with the first path where its records part (None: equal)."""
    left, right = read(a), read(b)
    return [(i, first_difference(left[i], right[i])) for i in left if i in right]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    args = parser.parse_args()
    rows = compare(args.a, args.b)
    for request, where in rows:
        print(f"{request}: {'same' if where is None else 'differs at ' + where}")
    parted = sum(where is not None for _, where in rows)
    print(f"{len(rows) - parted} of {len(rows)} requests agree record for record")
    sys.exit(1 if parted else 0)


if __name__ == "__main__":
    main()
