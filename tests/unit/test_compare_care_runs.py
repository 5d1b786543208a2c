"""scripts/compare_care_runs.py: clock readings and random ids never count, anything else does."""

from __future__ import annotations

import json
from pathlib import Path

from scripts.compare_care_runs import compare


def write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def row(request: str, record_id: str, seconds: float, score: int) -> dict[str, object]:
    return {
        "id": request,
        "seconds": seconds,
        "record": {
            "id": record_id,
            "created_at": f"2026-12-05T16:0{int(seconds)}:00+00:00",
            "assessments": [{"evaluator": "hra", "score": score, "seconds": seconds}],
        },
    }


def test_runs_that_differ_only_in_clock_and_record_ids_agree(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [row("q1", "a" * 32, 1.0, 2), row("q2", "b" * 32, 2.0, 1)])
    b = write(tmp_path / "b.jsonl", [row("q2", "c" * 32, 5.0, 1), row("q1", "d" * 32, 3.0, 2)])
    assert compare(a, b) == [("q1", None), ("q2", None)]


def test_a_changed_score_is_found_where_it_is(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [row("q1", "a" * 32, 1.0, 2), row("q2", "b" * 32, 1.0, 1)])
    b = write(tmp_path / "b.jsonl", [row("q1", "c" * 32, 1.0, 3)])
    assert compare(a, b) == [("q1", ".record.assessments[0].score")]
