"""The cut for the trim of doubted sentences: chosen on dev first drafts, read once on test.

    python scripts/trim_doubted.py

The trim (:mod:`medgate.careguard.trimming`) keeps a released general answer's opening sentence
and every later sentence whose self-check P(no) ("is the statement medically correct?") is at
or below the cut, and any sentence that sends the reader to a professional; the rest are left
out. This replays that rule, with the same decision function, on the sentence readings already
recorded by ``scripts/self_check_prompts.py`` (reading ``correct``, the one the trim asks) for
the embedded 1.5B generator's hand-labelled first drafts of general health questions:

* ``dev``: 105 drafts (19 wrong), the pool the self-check's own cut was chosen on;
* ``test``: 158 drafts (35 wrong) never used to choose anything about the self-check.

Which sentences of a wrong draft are wrong is labelled by hand in
``docs/results/trim_doubted_labels.jsonl`` (the draft's sentences read beside its label and
reason, no reading shown); a right draft's sentences are all right. A trimmed draft is wrong when
a wrong sentence is kept; one left with only an opening ending in ':' is held back (the gate
asks for a refinement), counted apart.

The rule, fixed before the test pool was replayed: the cut is the highest on the grid
0.05, 0.10, ..., 0.50 whose trimmed dev drafts are at most 8% wrong (a margin of two points
under CareGuard's 10% target, since it is chosen on 105 drafts). The test figure at that cut is
the headline; the rest of the test grid is shown for reading after the choice.
Writes docs/results/trim_doubted.md and .json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from medgate.careguard.hra_fit import read_items
from medgate.careguard.trimming import decide, header_only

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
LABELS = RESULTS / "trim_doubted_labels.jsonl"
READING = "correct"
GRID = tuple(round(0.05 * k, 2) for k in range(1, 11))
MAX_DEV_WRONG = 0.08


def readings(pool: str) -> list[dict[str, Any]]:
    return read_items(RESULTS / f"self_check_prompts_{pool}.jsonl.gz")


def wrong_sentences() -> dict[str, set[int]]:
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line]
    return {r["key"]: set(r["wrong_sentences"]) for r in rows}


def replay(drafts: list[dict[str, Any]], wrong: dict[str, set[int]], cut: float) -> dict[str, Any]:
    """The trim at ``cut`` on every draft: wrong drafts before and after, held back, and how much
    of the right drafts is kept."""
    released = wrong_after = held = cut_to_lead = kept_right = total_right = 0
    for draft in drafts:
        statements = draft["statements"]
        if draft["bad"] and not wrong.get(draft["key"]):
            raise SystemExit(f"no sentence label for wrong draft {draft['id']} ({draft['key']})")
        bad = wrong.get(draft["key"], set()) if draft["bad"] else set()
        kept = [
            n
            for n, s in enumerate(statements)
            if decide(n, s["text"], s[READING], cut) != "doubted"
        ]
        if header_only([statements[n]["text"] for n in kept], len(statements)):
            held += 1
            continue
        released += 1
        wrong_after += bool(bad & set(kept))
        if not draft["bad"]:
            kept_right += len(kept)
            total_right += len(statements)
            cut_to_lead += len(kept) == 1 and len(statements) > 1
    return {
        "cut": cut,
        "drafts": len(drafts),
        "wrong_before": sum(bool(d["bad"]) for d in drafts),
        "released": released,
        "held_back": held,
        "wrong_after": wrong_after,
        "wrong_share": round(wrong_after / released, 4) if released else None,
        "right_sentences_kept": round(kept_right / total_right, 4) if total_right else None,
        "right_drafts_cut_to_lead": cut_to_lead,
    }


def row(r: dict[str, Any]) -> str:
    return (
        f"| {r['cut']:.2f} | {r['wrong_before']}/{r['drafts']} | {r['wrong_after']}/"
        f"{r['released']} ({r['wrong_share']:.3f}) | {r['held_back']} | "
        f"{r['right_sentences_kept']:.2f} | {r['right_drafts_cut_to_lead']} |"
    )


def main() -> None:
    wrong = wrong_sentences()
    dev, test = readings("dev"), readings("test")
    dev_grid = [replay(dev, wrong, c) for c in GRID]
    allowed = [r for r in dev_grid if r["wrong_share"] <= MAX_DEV_WRONG]
    if not allowed:
        raise SystemExit(f"no cut leaves at most {MAX_DEV_WRONG:.0%} of dev drafts wrong")
    chosen = max(allowed, key=lambda r: r["cut"])["cut"]
    test_grid = [replay(test, wrong, c) for c in GRID]
    untrimmed = {p: replay(d, wrong, 1.0) for p, d in (("dev", dev), ("test", test))}
    head = next(r for r in test_grid if r["cut"] == chosen)
    header = (
        "| cut | wrong, untrimmed | wrong after the trim | held back | right drafts' sentences "
        "kept | right drafts cut to their opening |\n|---|---|---|---|---|---|"
    )
    lines = [
        "# Trimming doubted sentences: the cut",
        "",
        "Generated by `python scripts/trim_doubted.py` from the recorded sentence readings "
        "(self_check_prompts_dev/test.jsonl.gz, reading `correct`) and the hand labels of wrong "
        "sentences in trim_doubted_labels.jsonl. The rule and the pools are in the script's "
        "docstring.",
        "",
        f"Chosen on dev: cut **{chosen:.2f}** (highest on the grid with at most "
        f"{MAX_DEV_WRONG:.0%} of trimmed dev drafts wrong).",
        "",
        f"Test, at that cut (the headline): {head['wrong_after']} of {head['released']} trimmed "
        f"drafts wrong ({head['wrong_share']:.3f}), against {untrimmed['test']['wrong_before']} "
        f"of {untrimmed['test']['drafts']} untrimmed ({untrimmed['test']['wrong_share']:.3f}); "
        f"{head['held_back']} held back; right drafts keep {head['right_sentences_kept']:.0%} "
        f"of their sentences, {head['right_drafts_cut_to_lead']} of them only the opening.",
        "",
        "## Dev (chosen on)",
        "",
        header,
        *(row(r) for r in dev_grid),
        "",
        "## Test (read once, after the choice)",
        "",
        header,
        *(row(r) for r in test_grid),
        "",
    ]
    summary = {
        "reading": READING,
        "rule": f"highest cut on {list(GRID)} with dev wrong share <= {MAX_DEV_WRONG}",
        "chosen": chosen,
        "test_at_chosen": head,
        "untrimmed": untrimmed,
        "dev": dev_grid,
        "test": test_grid,
    }
    (RESULTS / "trim_doubted.md").write_text("\n".join(lines), encoding="utf-8")
    (RESULTS / "trim_doubted.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
