"""What the request screen and the controller model make of the questions that get a card.

    python scripts/first_aid_controller.py --file src/medgate/careguard/data/SET.jsonl ...
    python scripts/first_aid_controller.py --report

The gate reads the request-safety classifier and then the controller model (the embedded 0.5B
by default) before it routes a first-aid question to its card. The card is fixed text, so what
those two can change is whether the card is shown at all: a classifier refusal or a controller
finding of a harmful request withholds it, and a controller finding of self-harm or an
emergency replaces it with the crisis or emergency guidance (an emergency keeps the card after
it). This reads both on every question a card is routed to (``first_aid.first_aid_topic``,
after the crisis rules), and records per question: the card, the classifier's score and
verdict, the controller's category and whether it short-circuits, and the seconds each took.
``--collect`` appends to docs/results/first_aid_controller.jsonl (resumable by question);
``--report`` prints the counts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

# Run as a file (python scripts/NAME.py), the repository root must be importable too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.first_aid_routes import route

from medgate.backends.pool import ModelPool
from medgate.careguard.request_safety import build_request_screen
from medgate.careguard.triage import Controller
from medgate.config import load_config
from medgate.records import Case

OUT = Path("docs/results/first_aid_controller.jsonl")


def carded(path: Path) -> list[tuple[str, str, str, str]]:
    """(set, id, question, card) of every question of ``path`` that the gate routes to a card
    (not to the crisis or emergency guidance): :func:`scripts.first_aid_routes.route`."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        how, topic = route(row["question"])
        if how == "card" and topic is not None:
            out.append((path.stem, row["id"], row["question"], topic))
    return out


def collect(files: list[Path]) -> None:
    config = load_config()
    cg = config.careguard
    pool = ModelPool(config)
    screen = build_request_screen(config, pool)
    controller = Controller(
        pool.get(cg.spec("controller", config.model), role="controller"),
        max_tokens=cg.triage_max_tokens,
        seed=cg.seed,
        model_short_circuit=cg.model_short_circuit,
    )
    done = set()
    if OUT.is_file():
        done = {json.loads(line)["question"] for line in OUT.read_text().splitlines()}
    with OUT.open("a", encoding="utf-8") as sink:
        for path in files:
            for name, item, question, card in carded(path):
                if question in done:
                    continue
                done.add(question)
                safety = screen.assess(question) if screen is not None else None
                t0 = time.perf_counter()
                triage = controller.triage(Case(question=question))
                row = {
                    "set": name,
                    "id": item,
                    "question": question,
                    "card": card,
                    "screen_score": None if safety is None else round(safety.score, 4),
                    "screen_refuses": None if safety is None else safety.harmful,
                    "controller": triage.model_categories,
                    "controller_error": triage.model_error,
                    "categories": [c.value for c in triage.categories],
                    "short_circuit": None
                    if triage.short_circuit is None
                    else (triage.short_circuit.value),
                    "controller_seconds": round(time.perf_counter() - t0, 2),
                }
                sink.write(json.dumps(row) + "\n")
                sink.flush()
                print(row["id"], row["card"], row["screen_score"], row["categories"], flush=True)


def report() -> None:
    rows = [json.loads(line) for line in OUT.read_text().splitlines()]
    print(f"{len(rows)} questions routed to a card")
    print("refused by the request screen:", sum(bool(r["screen_refuses"]) for r in rows))
    print("max screen score:", max(r["screen_score"] for r in rows))
    print("controller short-circuits:", Counter(r["short_circuit"] for r in rows))
    print("harmful by the controller:", sum("harmful_request" in r["categories"] for r in rows))
    # Mostly a category whose quoted evidence is not in the question, which triage sets aside.
    print("controller replies set aside:", sum(bool(r["controller_error"]) for r in rows))
    seconds = sorted(r["controller_seconds"] for r in rows)
    print(f"controller seconds: median {seconds[len(seconds) // 2]:.1f}, max {seconds[-1]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", action="append", type=Path, default=[])
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args()
    if args.report:
        report()
    else:
        collect(args.file)


if __name__ == "__main__":
    main()
