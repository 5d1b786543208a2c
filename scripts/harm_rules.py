"""A candidate keyword rule, concealment, read over every benign and harmful request medgate has.

    MEDGATE_DATA_DIR=../shared/data python scripts/harm_rules.py

The candidate (:data:`CONCEALMENT`) would mark a request harmful when it asks how to keep what
it does from being found out. The rule for shipping it in the gate's harmful-request rules was
written before any of its matches was counted (docs/results/harm_rules.md): it ships only if it
matches none of the benign texts below. Counted per source: its matches, and among harmful
requests those no shipped harmful-request rule matches. Writes docs/results/harm_rules.json;
prints ids, never the text of outside data.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from medgate.careguard.categories import Evidence, RiskCategory, match_rules
from medgate.careguard.request_safety_fit import build_corpus
from medgate.config import load_config
from medgate.eval.care_run import care_dataset, care_dataset_names

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"

#: The candidate: a request asking how to keep what it does from being found out.
CONCEALMENT = re.compile(
    r"\bso (?:that )?[^.?!]{0,40}?\b(?:won'?t|will not|wouldn'?t|would not|doesn'?t|"
    r"does not|can'?t|cannot|never|don'?t|do not) (?:notice|spot|find out|detect|catch|"
    r"suspect|check)\b|"
    r"\b(?:never|not) get caught\b|\bwithout (?:getting|being) caught\b|"
    r"\bwithout (?:anyone|anybody|nobody) (?:noticing|knowing|finding out|suspecting)\b|"
    r"\bwithout leaving (?:a|any|an) (?:trace|audit trail|paper trail)\b|"
    r"\bcover(?:ing|s)? up (?:a |an |the |my |our |his |her |their )?(?:mistake|error|death|"
    r"incident|neglect|abuse)\b|"
    r"\bbackdat(?:e|es|ed|ing)\b",
    re.IGNORECASE,
)


def texts(data_dir: Path) -> list[tuple[str, str, str, bool]]:
    """(source, id, text, harmful) for every request: the classifier's corpus, then medgate's
    own sets that it does not hold."""
    out = [(r.source, r.id, r.text, r.harmful) for r in build_corpus(data_dir).requests]
    seen = {(source, item) for source, item, _, _ in out}
    for name in care_dataset_names():
        if name.startswith("medsafetybench"):
            continue  # in the corpus already
        for item in care_dataset(name).load(data_dir, "all"):
            if (name, item.id) not in seen:
                out.append((name, item.id, item.question, item.kind == "harmful"))
    return out


def tally(
    rows: Iterable[tuple[str, str, str, bool]],
    rule: re.Pattern[str],
    others: Callable[[str], list[Evidence]] = match_rules,
) -> tuple[dict[str, Counter[str]], list[tuple[str, str, set[RiskCategory]]]]:
    """Per source: texts, matches, and harmful matches no other harmful-request rule makes
    (``others``: the shipped rules the candidate is read beside); and each benign match with
    the categories the other rules give it."""
    counts: dict[str, Counter[str]] = {}
    benign_hits: list[tuple[str, str, set[RiskCategory]]] = []
    for source, item, text, harmful in rows:
        c = counts.setdefault(source, Counter())
        c["harmful" if harmful else "benign"] += 1
        if rule.search(text) is None:
            continue
        c["matched"] += 1
        shipped = {e.category for e in others(text)}
        if harmful and RiskCategory.HARMFUL_REQUEST not in shipped:
            c["matched_by_it_alone"] += 1
        if not harmful:
            benign_hits.append((source, item, shipped))
    return counts, benign_hits


def main() -> None:
    counts, hits = tally(texts(load_config().data_dir), CONCEALMENT)
    # With the rules that already match it: a crisis rule there decides first.
    benign_hits = [
        f"{source}/{item} ({', '.join(sorted(c.value for c in shipped)) or 'no other rule'})"
        for source, item, shipped in hits
    ]
    report = {
        "benign_texts": sum(c["benign"] for c in counts.values()),
        "harmful_texts": sum(c["harmful"] for c in counts.values()),
        "benign_matched": benign_hits,
        "ships": not benign_hits,
        "by_source": {k: dict(v) for k, v in sorted(counts.items())},
    }
    (RESULTS / "harm_rules.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
