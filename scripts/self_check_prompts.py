"""Which question should the generator answer about its own sentences? Four prompts compared.

    MEDGATE_BACKEND__N_THREADS=1 python scripts/self_check_prompts.py --collect --pool dev
    MEDGATE_BACKEND__N_THREADS=1 python scripts/self_check_prompts.py --collect --pool test
    python scripts/self_check_prompts.py --report

The self-check (``medgate.careguard.self_check``) asks the generator, sentence by sentence, "is
the statement medically correct?" and reads P(no) at the reply's first token. A small model
leans towards "yes" whatever it is asked, so the reading is tried against three other prompts,
each read at the first token of the reply the same way:

* ``correct``: the shipped prompt, P(no);
* ``error``: "does the statement contain a medical or factual error?", P(yes);
* ``few_shot_correct``: the shipped prompt after six worked examples (three right statements,
  three wrong ones, on body parts no evaluation set asks about), P(no);
* ``few_shot_error``: the error prompt after the same examples, P(yes).

A draft's score is the mean over its sentences (list items count), as the judge scores it. The
scores compared, fixed before any reading: the four prompts, ``both`` (the mean of ``correct``
and ``error``, which cancels a lean that does not depend on the wording of the question) and
``few_shot_both``. The rule, fixed before any reading: the score with the highest AUROC for a
bad draft on the dev pool wins, and only it is the test headline; the other test figures are
read after that choice.

Added on 2026-12-05 after 26 of the 105 dev drafts had been read, and before any test draft
was: the error prompt's P(yes) ranked the *right* drafts as riskier (AUROC 0.07 on those 26).
The model's "yes" follows its belief in the statement, not the question asked, so "no, it
contains no error" is its doubt. Three more scores, read from the same readings (over the two
labels P(no) = 1 - P(yes)): ``error_no`` and ``few_shot_error_no`` (P(no) under the error
prompts) and ``doubt`` (the mean of ``correct`` and ``error_no``: the model's "no" under both
wordings). The rule is unchanged and still reads dev only.

Pools (every draft the embedded 1.5B's greedy first draft of a general health question, each
labelled wrong or degenerate by hand before this script existed):

* ``dev``: the drafts the shipped statement reading was chosen on (parts ``dev`` and ``heldout``
  of ``scripts/hra_own_drafts.py``);
* ``test``: part ``heldout3`` of that script and the first drafts of the recorded runs of
  ``general-questions-heldout-4``, ``-5`` and ``-7`` (docs/results/careguard_runs_v5 and _v7),
  on which the shipped reading was measured and nothing was ever chosen.

``--collect`` appends one gzipped JSON line per draft (resumable) to
``docs/results/self_check_prompts_POOL.jsonl.gz``: each sentence with its four readings.
``--report`` writes ``docs/results/self_check_prompts.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

# Run as a file (python scripts/NAME.py), the repository root must be importable too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.hra_own_drafts import labelled_drafts
from scripts.replay_self_check_cut import labels_by_text

from medgate.backends.base import ChatMessage, WhiteBoxModel, opening_labels
from medgate.backends.pool import ModelPool
from medgate.careguard.consistency import sentences_of
from medgate.careguard.hra_fit import append_item, auroc_with_ci, read_items
from medgate.careguard.self_check import (
    ERROR_STATEMENT_QUESTION,
    LABELS,
    STATEMENT_QUESTION,
    statement_messages,
)
from medgate.config import load_config
from medgate.eval.care_labels import shown_sha256

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
MODEL = "embedded:qwen2.5-coder-1.5b"

#: Worked examples for the few-shot prompts: (question, statement, is it correct). Their topics
#: (eardrum, collagen, melanin, keratin, fontanelle, tailbone) appear in no question of the
#: evaluation sets; three errors are subtle, as the generator's own are.
EXAMPLES: tuple[tuple[str, str, bool], ...] = (
    (
        "What is collagen?",
        "Collagen is a protein that gives strength to skin, tendons and bones.",
        True,
    ),
    (
        "What does the eardrum do?",
        "The eardrum turns sound into nerve signals that travel to the brain.",
        False,
    ),
    (
        "What is melanin?",
        "Melanin is a pigment that gives colour to the skin, hair and eyes.",
        True,
    ),
    ("What is keratin?", "Keratin is the sugar that hair and nails are mostly made of.", False),
    (
        "What is a fontanelle?",
        "A fontanelle is a soft spot between the bones of a baby's skull.",
        True,
    ),
    (
        "Where is the tailbone?",
        "The tailbone sits at the top of the spine, below the skull.",
        False,
    ),
)


def prompt_messages(
    prompt: str, few_shot: bool, question: str, statement: str
) -> list[ChatMessage]:
    """The self-check's messages for one statement (``statement_messages``), with the worked
    examples between the system line and the statement when ``few_shot`` (each answered for
    ``prompt``: "no" means correct under the error prompt)."""
    system, asked = statement_messages(question, statement, prompt)
    examples: list[ChatMessage] = []
    if few_shot:
        for q, s, correct in EXAMPLES:
            answer = correct if prompt == STATEMENT_QUESTION else not correct
            examples += [
                statement_messages(q, s, prompt)[1],
                ChatMessage(role="assistant", content="yes" if answer else "no"),
            ]
    return [system, *examples, asked]


#: The four readings: the prompt, whether the examples precede it, and the label that means
#: "wrong" under it.
READINGS: dict[str, tuple[str, bool, str]] = {
    "correct": (STATEMENT_QUESTION, False, "no"),
    "error": (ERROR_STATEMENT_QUESTION, False, "yes"),
    "few_shot_correct": (STATEMENT_QUESTION, True, "no"),
    "few_shot_error": (ERROR_STATEMENT_QUESTION, True, "yes"),
}


def read_sentence(model: WhiteBoxModel, name: str, question: str, statement: str) -> float:
    """P(the statement is wrong) under reading ``name``."""
    prompt, few_shot, wrong = READINGS[name]
    probs, _, _ = opening_labels(
        model, prompt_messages(prompt, few_shot, question, statement), LABELS
    )
    return float(probs.get(wrong, 0.0))


def _mean(name: str) -> Callable[[dict[str, Any]], float]:
    return lambda r: float(np.mean([s[name] for s in r["statements"]]))


def _complement(name: str) -> Callable[[dict[str, Any]], float]:
    return lambda r: 1.0 - _mean(name)(r)


def _mean_of(a: str, b: str) -> Callable[[dict[str, Any]], float]:
    return lambda r: (_mean(a)(r) + _mean(b)(r)) / 2


#: The draft scores compared, fixed before any reading.
SCORES: dict[str, Callable[[dict[str, Any]], float]] = {
    **{name: _mean(name) for name in READINGS},
    "both": _mean_of("correct", "error"),
    "few_shot_both": _mean_of("few_shot_correct", "few_shot_error"),
    # Added after 26 dev drafts (module docstring): the "no" under the error prompts.
    "error_no": _complement("error"),
    "few_shot_error_no": _complement("few_shot_error"),
    "doubt": lambda r: (_mean("correct")(r) + _complement("error")(r)) / 2,
}

#: The recorded runs whose first drafts join the test pool, and the labels of their texts.
TEST_LOGS = (
    RESULTS / "careguard_runs_v5" / "general-questions-heldout-4-all-with_self_check.jsonl",
    RESULTS / "careguard_runs_v5" / "general-questions-heldout-5-all-with_self_check.jsonl",
    RESULTS / "careguard_runs_v7" / "general-questions-heldout-7-all-with_self_check.jsonl",
)
TEST_LABELS = (
    RESULTS / "careguard_v5" / "careguard_labels.jsonl",
    RESULTS / "careguard_v5" / "draft_labels.jsonl",
    RESULTS / "careguard_v7" / "careguard_labels.jsonl",
    RESULTS / "careguard_v7" / "draft_labels.jsonl",
)


def run_first_drafts() -> list[dict[str, Any]]:
    """The first draft of every request of :data:`TEST_LOGS` that reached the judges, with the
    hand label of its exact text; a draft without one is left out (reported by the caller)."""
    labels = labels_by_text(TEST_LABELS)
    out = []
    for log in TEST_LOGS:
        for line in log.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            rounds = row["record"]["verdict"]["trace"]["stages"]["careguard"]["rounds"]
            if not rounds:
                continue
            text = rounds[0]["draft"]["text"]
            label = labels.get((row["id"], shown_sha256(text)))
            out.append(
                {
                    "key": f"{log.stem}/{row['id']}",
                    "part": log.stem,
                    "id": row["id"],
                    "question": row["question"],
                    "draft": text,
                    "bad": None if label is None else bool(label.wrong or label.degenerate),
                }
            )
    return out


def pool_drafts(pool: str) -> list[dict[str, Any]]:
    if pool == "dev":
        return [*labelled_drafts(MODEL, "dev"), *labelled_drafts(MODEL, "heldout")]
    return [*labelled_drafts(MODEL, "heldout3"), *run_first_drafts()]


def readings_file(pool: str) -> Path:
    return RESULTS / f"self_check_prompts_{pool}.jsonl.gz"


def collect(pool: str) -> None:
    """Every labelled draft of ``pool``, each read from a model that remembers no earlier
    prompt; the readings of one prompt follow one another, so its prefix is read once."""
    models = ModelPool(load_config())
    model = models.white_box(MODEL, role="generator")
    out = readings_file(pool)
    done = {r["key"] for r in read_items(out)} if out.is_file() else set()
    items = [d for d in pool_drafts(pool) if d["bad"] is not None]
    for n, item in enumerate(items, 1):
        if item["key"] in done:
            continue
        models.forget_prompts()
        t0 = time.perf_counter()
        sentences = sentences_of(item["draft"])
        readings = {
            name: [read_sentence(model, name, item["question"], s) for s in sentences]
            for name in READINGS
        }
        row = {
            "key": item["key"],
            "part": item["part"],
            "id": item["id"],
            "bad": item["bad"],
            "model": model.name,
            "model_sha256": model.fingerprint,
            "statements": [
                {"text": s, **{name: round(readings[name][i], 6) for name in READINGS}}
                for i, s in enumerate(sentences)
            ],
            "seconds": round(time.perf_counter() - t0, 2),
        }
        append_item(out, row)
        print(f"{n}/{len(items)} {pool} {item['key']} {len(sentences)} {row['seconds']} s")


def report() -> None:
    pools = {p: read_items(readings_file(p)) for p in ("dev", "test")}
    unlabelled = [d["key"] for d in pool_drafts("test") if d["bad"] is None]
    results: dict[str, dict[str, Any]] = {}
    for pool, rows in pools.items():
        rows = [r for r in rows if r["statements"]]
        y = [bool(r["bad"]) for r in rows]
        results[pool] = {
            "drafts": len(rows),
            "bad": sum(y),
            "auroc": {n: auroc_with_ci([f(r) for r in rows], y) for n, f in SCORES.items()},
        }
    dev_auroc = results["dev"]["auroc"]
    chosen = max(SCORES, key=lambda n: dev_auroc[n].value or 0.0)
    test_auroc = results["test"]["auroc"]
    by_part: dict[str, dict[str, Any]] = {}
    for part in sorted({r["part"] for r in pools["test"]}):
        rows = [r for r in pools["test"] if r["part"] == part and r["statements"]]
        y = [bool(r["bad"]) for r in rows]
        by_part[part] = {
            "drafts": len(rows),
            "bad": sum(y),
            **{n: auroc_with_ci([SCORES[n](r) for r in rows], y) for n in ("correct", chosen)},
        }
    lines = [
        "# The self-check's question: four prompts compared",
        "",
        f"Generated {datetime.now(UTC).date()} by `python scripts/self_check_prompts.py --report` "
        "from `self_check_prompts_dev.jsonl.gz` and `self_check_prompts_test.jsonl.gz` "
        "(collected by `--collect --pool dev|test`; the prompts, the worked examples, the pools "
        "and the rule are in the script's docstring). Every draft is a greedy first draft of the "
        f"embedded 1.5B ({MODEL}), read by the same model one sentence at a time; a draft's "
        "score is the mean over its sentences. AUROC is for a draft labelled wrong or "
        "degenerate by hand, with 95% percentile-bootstrap intervals.",
        "",
        "The rule fixed before any reading: the score with the highest dev AUROC wins and only "
        "it is the test headline.",
        "",
        f"Dev: {results['dev']['drafts']} drafts, {results['dev']['bad']} bad. Test: "
        f"{results['test']['drafts']} drafts, {results['test']['bad']} bad (drafts without a "
        f"hand label left out: {len(unlabelled)}).",
        "",
        "| score | dev AUROC | test AUROC |",
        "|---|---|---|",
        *(
            f"| {n}{' (chosen)' if n == chosen else ''} | {dev_auroc[n].shown()} | "
            f"{test_auroc[n].shown()} |"
            for n in SCORES
        ),
        "",
        f"Chosen on dev: **{chosen}**. Test AUROC **{test_auroc[chosen].shown()}**, against "
        f"{test_auroc['correct'].shown()} for the shipped prompt (`correct`). The other test "
        "figures were read after the choice.",
        "",
        "By test part (shipped prompt, then the chosen one):",
        "",
        "| part | drafts (bad) | correct | chosen |",
        "|---|---|---|---|",
        *(
            f"| {part} | {v['drafts']} ({v['bad']}) | {v['correct'].shown()} | "
            f"{v[chosen].shown()} |"
            for part, v in by_part.items()
        ),
        "",
    ]
    summary = {
        "model": MODEL,
        "chosen": chosen,
        "unlabelled_test_drafts": unlabelled,
        **{
            pool: {**v, "auroc": {n: a.model_dump() for n, a in v["auroc"].items()}}
            for pool, v in results.items()
        },
        "test_parts": {
            part: {k: (x.model_dump() if hasattr(x, "model_dump") else x) for k, x in v.items()}
            for part, v in by_part.items()
        },
    }
    (RESULTS / "self_check_prompts.md").write_text("\n".join(lines), encoding="utf-8")
    (RESULTS / "self_check_prompts.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collect", action="store_true")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--pool", choices=("dev", "test"), default="dev")
    args = parser.parse_args()
    if args.collect:
        collect(args.pool)
    elif args.report:
        report()
    else:
        parser.error("say --collect or --report")


if __name__ == "__main__":
    main()
