"""First drafts of CareGuard's generator for general health questions, from one model, for
comparing answering models, or instruction sets, by hand labels (docs/results/generators.md,
docs/results/generator_instructions.md).

    MEDGATE_BACKEND__N_THREADS=1 python scripts/draft_general_answers.py \\
        --model embedded:qwen2.5-coder-1.5b --dataset benign-questions \\
        --out docs/results/generator_drafts.jsonl
    python scripts/draft_general_answers.py --summarise \\
        --out docs/results/generator_drafts.jsonl --labels docs/results/generator_labels.jsonl
    MEDGATE_BACKEND__N_THREADS=1 python scripts/draft_general_answers.py --judge \\
        --out docs/results/generator_drafts.jsonl --judged docs/results/generator_judged.jsonl
    python scripts/draft_general_answers.py --summarise --out docs/results/generator_drafts.jsonl \\
        --labels docs/results/generator_labels.jsonl --judged docs/results/generator_judged.jsonl

The first writes, for every benign question of the dataset, the greedy first-round draft the
gate would write (the general-information instructions, `careguard.answer_max_tokens`,
`careguard.repeat_penalty`, a draft that used its whole budget cut back to its last sentence,
the prompt read from scratch as a request's first), one JSON line per (model, question),
resumable. Until 2026-12-05 each prompt was read after the previous question's, which the model
keeps cached; llama.cpp then decodes it in other batches and a greedy token can flip, so about
half of those drafts differ from the gate's first draft of the question (`--after-previous`
writes them that way again). Nothing is judged here: the drafts are labelled by
hand, and the second prints each model's share of drafts labelled wrong or degenerate. The
third has CareGuard's configured judges assess every draft as the gate assesses a first draft of
a general question (no token signals: the judges' own scores are what is read), resumable; the
summary then adds each judge's AUROC for a draft labelled wrong or degenerate.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from medgate.backends.base import DecodeParams, WhiteBoxModel
from medgate.backends.pool import ModelPool, forget_prompts
from medgate.careguard.categories import BASE_INSTRUCTIONS, RiskCategory, knowledge_question
from medgate.careguard.generator import generator_messages, trim_to_sentence
from medgate.careguard.records import Triage
from medgate.careguard.triage import instructions_for
from medgate.config import CareGuardConfig, load_config
from medgate.eval.care_run import care_dataset
from medgate.eval.metrics import auroc
from medgate.records import Case

#: The general-information instruction sets compared in docs/results/generator_instructions.md,
#: frozen here so that a row's set can be rebuilt whatever the gate ships. "accurate" is the one
#: line CareGuard gave general questions until 2026-12-05.
GENERAL_INSTRUCTIONS: dict[str, tuple[str, ...]] = {
    "accurate": ("Give accurate general health information.",),
    "brief": (
        "Answer the question directly in two to four short sentences, the main point first.",
        "Leave out any detail you are not sure is right: a cause, a mechanism, a number or an "
        "example.",
    ),
}
#: What a row written before the sets were compared was drafted under.
DEFAULT_SET = "accurate"


def general_triage(instructions: str) -> Triage:
    """The triage of a general question, with the base rules and the named general set."""
    general = [RiskCategory.GENERAL]
    lines = [*BASE_INSTRUCTIONS, *GENERAL_INSTRUCTIONS[instructions]]
    return Triage(category=general[0], categories=general, instructions=lines)


def answer_key(model: str, item_id: str, answer: str) -> str:
    """What a label is bound to: the model, the question and the exact text it read."""
    return hashlib.sha256(f"{model}\n{item_id}\n{answer}".encode()).hexdigest()[:16]


def general_draft(
    model: WhiteBoxModel, question: str, cg: CareGuardConfig, instructions: str = DEFAULT_SET
) -> tuple[str, int]:
    """The greedy first-round draft the gate writes under the named general-information
    instructions (its decoding; a draft that used its whole budget cut back to its last
    sentence), and its token count."""
    triage = general_triage(instructions)
    params = [
        DecodeParams(
            max_tokens=cg.answer_max_tokens,
            temperature=0.0,
            seed=cg.seed,
            repeat_penalty=cg.repeat_penalty,
        )
    ]
    (completion,) = model.complete_batch(
        generator_messages(Case(question=question), triage, []), params
    )
    text = completion.text.strip()
    if completion.n_tokens >= cg.answer_max_tokens:
        text = trim_to_sentence(text)
    return text, completion.n_tokens


def draft(
    out: Path, model_spec: str, datasets: list[str], instructions: str, after_previous: bool
) -> None:
    cfg = load_config()
    model = ModelPool(cfg).white_box(model_spec, role="generator")
    done = set()
    if out.is_file():
        done = {
            (r["model"], r["id"], r.get("instructions", DEFAULT_SET))
            for r in map(json.loads, out.open())
            if r
        }
    with out.open("a", encoding="utf-8") as sink:
        for name in datasets:
            for item in care_dataset(name).load(cfg.data_dir, "all"):
                if item.kind != "benign" or (model_spec, item.id, instructions) in done:
                    continue
                t0 = time.perf_counter()
                if not after_previous:
                    forget_prompts([model])  # the gate's draft: read as a request's first prompt
                text, tokens = general_draft(model, item.question, cfg.careguard, instructions)
                row = {
                    "dataset": name,
                    "id": item.id,
                    "question": item.question,
                    "model": model_spec,
                    "instructions": instructions,
                    "model_sha256": model.fingerprint,
                    "answer": text,
                    "key": answer_key(model_spec, item.id, text),
                    "tokens": tokens,
                    "seconds": round(time.perf_counter() - t0, 2),
                }
                sink.write(json.dumps(row) + "\n")
                sink.flush()
                print(f"{model_spec} {instructions} {item.id} {row['seconds']} s", flush=True)


def judge(out: Path, judged: Path) -> None:
    from medgate.careguard.build import build_careguard
    from medgate.careguard.records import Draft

    cfg = load_config()
    gate = build_careguard(cfg, ModelPool(cfg))
    general = [RiskCategory.GENERAL]
    triage = Triage(
        category=general[0], categories=general, instructions=instructions_for(general, [])
    )
    done = {json.loads(x)["key"] for x in judged.open() if x.strip()} if judged.is_file() else set()
    with judged.open("a", encoding="utf-8") as sink:
        for row in map(json.loads, out.open()):
            if row["key"] in done:
                continue
            t0 = time.perf_counter()
            case = Case(question=row["question"])
            assessed = gate.evaluators.assess(case, triage, Draft(text=row["answer"]), 0)
            line = {
                "key": row["key"],
                "model": row["model"],
                "id": row["id"],
                "judges": {
                    name: {"judge": a.judge_score, "score": a.score, "error": a.error}
                    for name, a in assessed.items()
                },
                "judge_models": {name: cfg.careguard.spec(name, cfg.model) for name in assessed},
                "seconds": round(time.perf_counter() - t0, 2),
            }
            sink.write(json.dumps(line) + "\n")
            sink.flush()
            print(f"judged {row['model']} {row['id']} {line['seconds']} s", flush=True)


def load_labels(files: list[Path]) -> dict[str, dict[str, Any]]:
    """Every label of the given files by the key of the draft it judged."""
    return {
        row["key"]: row
        for path in files
        for row in map(json.loads, (x for x in path.open() if x.strip()))
    }


def summarise_judges(labels: list[Path], judged: Path) -> None:
    by_key = load_labels(labels)
    rows = [x for x in map(json.loads, judged.open()) if x["key"] in by_key]
    print(
        "\n| drafts by | judge | n (bad) | AUROC for a bad draft | bad passed (<= 2) "
        "| good held (> 2) |"
    )
    print("|---|---|---:|---:|---:|---:|")
    groups = [*sorted({r["model"] for r in rows}), "both"]
    for group in groups:
        part = [r for r in rows if group in ("both", r["model"])]
        for name in sorted({n for r in part for n in r["judges"]}):
            scored = [r for r in part if r["judges"][name]["judge"] is not None]
            bad = [by_key[r["key"]]["wrong"] or by_key[r["key"]]["degenerate"] for r in scored]
            scores = [float(r["judges"][name]["judge"]) for r in scored]
            a = auroc(scores, bad)
            passed = sum(1 for s, b in zip(scores, bad, strict=True) if b and s <= 2)
            held = sum(1 for s, b in zip(scores, bad, strict=True) if not b and s > 2)
            print(
                f"| {group} | {name} | {len(scored)} ({sum(bad)}) | "
                f"{'n/a' if a is None else f'{a:.3f}'} | {passed} | {held} |"
            )


def summarise(out: Path, labels: list[Path]) -> None:
    drafts = [json.loads(x) for x in out.open() if x.strip()]
    by_key = load_labels(labels)
    # drafts, wrong, degenerate, wrong or degenerate, unlabelled, tokens
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])
    for d in drafts:
        label = by_key.get(d["key"])
        c = counts[(d["dataset"], d["model"], d.get("instructions", DEFAULT_SET))]
        c[0] += 1
        c[5] += d["tokens"]
        if label is None:
            c[4] += 1
            continue
        c[1] += bool(label["wrong"])
        c[2] += bool(label["degenerate"])
        c[3] += bool(label["wrong"] or label["degenerate"])
    print(
        "| set | model | instructions | drafts | mean tokens | wrong | degenerate "
        "| wrong or degenerate | unlabelled |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for (dataset, model, instructions), (n, wrong, degenerate, bad, unlabelled, tokens) in sorted(
        counts.items()
    ):
        print(
            f"| {dataset} | {model} | {instructions} | {n} | {tokens / n:.1f} | {wrong} "
            f"| {degenerate} | {bad} ({bad / n:.3f}) | {unlabelled} |"
        )


def summarise_pairs(out: Path, labels: list[Path], first: str, second: str) -> None:
    """Both sets' drafts of the same question side by side: how often only one was bad, with
    the exact two-sided sign test over those questions; over all questions and over the
    knowledge questions (the ones CareGuard gives the `brief` set)."""
    by_key = load_labels(labels)
    bad: dict[tuple[str, str, str], bool] = {}
    questions: dict[tuple[str, str], str] = {}
    for d in map(json.loads, (x for x in out.open() if x.strip())):
        label = by_key.get(d["key"])
        if label is not None:
            bad[(d["dataset"], d["id"], d.get("instructions", DEFAULT_SET))] = bool(
                label["wrong"] or label["degenerate"]
            )
            questions[(d["dataset"], d["id"])] = d["question"]
    print(
        f"\n| set | questions | both bad | only `{first}` bad | only `{second}` bad | sign test p |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    datasets = sorted({k[0] for k in questions})
    for dataset in [*datasets, "all"]:
        for scope in ("all questions", "knowledge questions"):
            pairs = [
                (bad[(ds, i, first)], bad[(ds, i, second)])
                for (ds, i), q in sorted(questions.items())
                if dataset in ("all", ds)
                and (ds, i, first) in bad
                and (ds, i, second) in bad
                and (scope == "all questions" or knowledge_question(q))
            ]
            only_first = sum(1 for a, b in pairs if a and not b)
            only_second = sum(1 for a, b in pairs if b and not a)
            both = sum(1 for a, b in pairs if a and b)
            p = sign_test(only_first, only_second)
            print(
                f"| {dataset}, {scope} | {len(pairs)} | {both} | {only_first} | "
                f"{only_second} | {p:.3f} |"
            )


def same_as_gate(out: Path, log: Path, instructions: str) -> None:
    """How many of a CareGuard run's first drafts are the very drafts written here under the
    named set (the gate reads each request's prompts from scratch)."""
    drafts = {
        (d["id"], d.get("instructions", DEFAULT_SET)): d["answer"]
        for d in map(json.loads, (x for x in out.open() if x.strip()))
    }
    same = compared = 0
    for row in map(json.loads, (x for x in log.open() if x.strip())):
        rounds = row["record"]["verdict"]["trace"]["stages"]["careguard"]["rounds"]
        mine = drafts.get((row["id"], instructions))
        if rounds and mine is not None:
            compared += 1
            same += rounds[0]["draft"]["text"].strip() == mine
    print(f"{same} of {compared} first drafts in {log.name} equal the `{instructions}` drafts")


def sign_test(k: int, m: int) -> float:
    """Exact two-sided binomial p for k against m discordant pairs at 1/2."""
    n = k + m
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(k, m) + 1)) / 2**n
    return float(min(1.0, 2 * tail))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", action="append", default=[])
    parser.add_argument("--dataset", action="append", default=[])
    parser.add_argument(
        "--instructions",
        choices=sorted(GENERAL_INSTRUCTIONS),
        default=DEFAULT_SET,
        help="The general-information instruction set to draft under.",
    )
    parser.add_argument(
        "--after-previous",
        action="store_true",
        help="Read each prompt after the previous question's, as the model keeps it cached, "
        "instead of from scratch as the gate does: how the drafts of 2026-12-02 to 2026-12-05 "
        "were written (docs/results/generator_instructions.md).",
    )
    parser.add_argument(
        "--same-as-gate",
        nargs=2,
        metavar=("RUN_LOG", "SET"),
        help="Count a CareGuard run log's first drafts equal to this file's drafts of SET.",
    )
    parser.add_argument("--summarise", action="store_true")
    parser.add_argument(
        "--labels", type=Path, action="append", help="A label file (may be given again)."
    )
    parser.add_argument("--judge", action="store_true")
    parser.add_argument("--judged", type=Path)
    parser.add_argument(
        "--pairs",
        nargs=2,
        metavar=("FIRST", "SECOND"),
        help="With --summarise: the two instruction sets question by question.",
    )
    args = parser.parse_args()
    if args.same_as_gate:
        log, instructions = args.same_as_gate
        same_as_gate(args.out, Path(log), instructions)
        return
    if args.summarise:
        if args.labels is None:
            parser.error("--summarise needs --labels")
        summarise(args.out, args.labels)
        if args.pairs:
            summarise_pairs(args.out, args.labels, *args.pairs)
        if args.judged is not None:
            summarise_judges(args.labels, args.judged)
        return
    if args.judge:
        if args.judged is None:
            parser.error("--judge needs --judged")
        judge(args.out, args.judged)
        return
    for spec in args.model:
        draft(
            args.out,
            spec,
            args.dataset or ["benign-questions", "patient-questions"],
            args.instructions,
            args.after_previous,
        )


if __name__ == "__main__":
    main()
