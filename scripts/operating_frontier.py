"""What any threshold on a risk score could reach on a test split: the frontier behind the targets.

For each committed item log (default: the embedded 0.5B's,
``docs/results/answerer_0.5b/items/<dataset>_test.jsonl.gz``: one line per test
item with ``risk`` and ``correct``), every threshold on ``risk`` is tried (escalate the items
scoring above it) and the script reports, beside the deployed operating point read from the
log's ``escalated`` field:

- the least escalation that gets the error of released answers to ``--alpha``, and its lift
  (safety gain / escalation rate);
- the least escalation meeting both targets, released error at most ``--alpha`` and lift at
  least ``--lift``, or that no threshold meets both;
- the same with the ideal ranking (every wrong answer above every right one), the ceiling no
  score can pass for the dataset's error rate.

Thresholds here are chosen on the test items themselves: these are ORACLE figures, read to see
what limits the deployed rule (a weak ranking, or a target pair that the error rate rules out),
never an operating point. Run: python scripts/operating_frontier.py [--alpha 0.3] [--lift 1.5]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from medgate.eval.risk_eval import read_items

ITEMS = Path(__file__).resolve().parents[1] / "docs" / "results" / "answerer_0.5b" / "items"


@dataclass(frozen=True)
class Point:
    escalated: int
    caught: int  # wrong answers among the escalated
    items: int
    wrong: int

    @property
    def escalation(self) -> float:
        return self.escalated / self.items

    @property
    def gain(self) -> float:
        return self.caught / self.wrong if self.wrong else 0.0

    @property
    def lift(self) -> float:
        return self.gain / self.escalation if self.escalated else 0.0

    @property
    def released_error(self) -> float:
        released = self.items - self.escalated
        return (self.wrong - self.caught) / released if released else 0.0

    def describe(self) -> str:
        return (
            f"escalate {self.escalation:6.1%}  gain {self.gain:6.1%}  lift {self.lift:4.2f}  "
            f"released error {self.released_error:6.1%}"
        )


def frontier(scored: list[tuple[float, bool]]) -> list[Point]:
    """Every operating point a threshold on the score gives: escalate the top k, k = 0..n.

    Tied scores are escalated together, as a threshold would."""
    ranked = sorted(scored, key=lambda s: -s[0])
    n, wrong = len(ranked), sum(1 for _, right in ranked if not right)
    points, caught = [Point(0, 0, n, wrong)], 0
    for k, (score, right) in enumerate(ranked, start=1):
        caught += not right
        if k == n or ranked[k][0] != score:
            points.append(Point(k, caught, n, wrong))
    return points


def least(points: list[Point], alpha: float, lift: float = 0.0) -> Point | None:
    """The point escalating least whose released error is at most alpha and lift at least lift."""
    ok = [p for p in points if p.escalated and p.released_error <= alpha and p.lift >= lift]
    return min(ok, key=lambda p: p.escalated, default=None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, default=0.3, help="target error of released answers")
    ap.add_argument("--lift", type=float, default=1.5, help="target lift at the same point")
    ap.add_argument("--items", type=Path, default=ITEMS, help="folder of *_test.jsonl.gz logs")
    args = ap.parse_args(argv)
    logs = sorted(args.items.glob("*_test.jsonl.gz"))
    if not logs:
        ap.error(f"no *_test.jsonl.gz item logs in {args.items}")
    for log in logs:
        rows = read_items(log)
        n, wrong = len(rows), sum(1 for r in rows if not r.correct)
        deployed = Point(
            sum(r.escalated for r in rows),
            sum(r.escalated and not r.correct for r in rows),
            n,
            wrong,
        )
        print(
            f"{log.name.removesuffix('_test.jsonl.gz')}: {n} items, {wrong} wrong ({wrong / n:.1%})"
        )
        print(f"  {'deployed threshold':<30} {deployed.describe()}")
        # An item without a risk score ranks highest, as risk_figures scores it (fail closed).
        measured = frontier([(1.0 if r.risk is None else r.risk, r.correct) for r in rows])
        # Distinct scores, wrong answers first: the ideal ranking, one item per step.
        ideal = frontier(
            [(i / n + (0.0 if r.correct else 2.0), r.correct) for i, r in enumerate(rows)]
        )
        for name, points in (("risk", measured), ("ideal ranking", ideal)):
            for what, point in (
                (f"error <= {args.alpha:.0%}", least(points, args.alpha)),
                (f"and lift >= {args.lift:g}", least(points, args.alpha, args.lift)),
            ):
                label = f"{name}, {what}"
                print(f"  {label:<30} {point.describe() if point else 'no threshold reaches it'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
