"""Which requests of a CareGuard request set get a first-aid card, and which one?

    python scripts/first_aid_routes.py --file src/medgate/careguard/data/first_aid_heldout.jsonl

Each request is routed as the gate routes it before any model is read: a crisis rule's match
goes to the fixed crisis or emergency guidance (an emergency with the card of the procedure it
names after it, `first_aid.while_help_comes`); otherwise `first_aid.first_aid_topic` gives the
card or sends the request on. The expected topic is read from the row's note ("first aid:
TOPIC"; any other note expects no card). Put an older commit's `src` first on PYTHONPATH to read
its rules against a set written later.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from medgate.careguard.categories import match_rules
from medgate.careguard.first_aid import first_aid_topic, topic_of

PREFIX = "first aid: "


def route(question: str) -> tuple[str, str | None]:
    """("crisis: CATEGORY" or "card", the topic whose card is shown or None)."""
    crisis = [e.category.value for e in match_rules(question) if e.category.short_circuits]
    if crisis:
        topic = topic_of(question) if "emergency" in crisis and "self_harm" not in crisis else None
        return f"crisis: {crisis[0]}", topic.name if topic else None
    card = first_aid_topic(question)
    return "card", card.name if card else None


def expected_topic(note: str) -> str | None:
    return note.removeprefix(PREFIX) if note.startswith(PREFIX) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", action="append", type=Path, required=True)
    args = parser.parse_args()
    for path in args.file:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        first_aid = [r for r in rows if expected_topic(r.get("note", ""))]
        others = [r for r in rows if not expected_topic(r.get("note", ""))]
        right = wrong_card = missed = false_card = 0
        for row in rows:
            expected = expected_topic(row.get("note", ""))
            how, topic = route(row["question"])
            if expected is None:
                false_card += topic is not None
                mark = "ok" if topic is None else "FALSE CARD"
            elif topic == expected:
                right += 1
                mark = "ok"
            else:
                wrong_card += topic is not None
                missed += topic is None
                mark = "WRONG CARD" if topic else "MISSED"
            print(f"{row['id']:8} {mark:10} {how:18} {topic or '-':18} {row['question']}")
        print(
            f"{path.name}: {right} of {len(first_aid)} first-aid questions get their card "
            f"({wrong_card} another card, {missed} none); {false_card} of {len(others)} "
            "look-alikes get a card\n"
        )


if __name__ == "__main__":
    main()
