"""Is a draft's opening sentence supported by the generator's own samples? SelfCheckGPT's prompt
variant, measured on the embedded 1.5B's hand-labelled first drafts.

    MEDGATE_BACKEND__N_THREADS=1 python scripts/opening_support.py --collect --pool dev
    MEDGATE_BACKEND__N_THREADS=1 python scripts/opening_support.py --collect --pool test
    python scripts/opening_support.py --report

Why: the trim of doubted sentences (docs/careguard.md) keeps a general answer's opening sentence
always, and most wrong answers left after it are wrong in that opening. The generator's own
reading of the opening ("is the statement medically correct?") ranks wrong openings too weakly
to hold them back without losing many right answers. SelfCheckGPT (Manakul et al. 2023) reads
a sentence against answers the same model samples for the same question: a claim the model
believes is likely to come back in its samples; a claim it made up, less so. Its strongest
variant asks a model whether each sample supports the sentence. Here the generator itself is
asked, for each of 3 samples, "Is the statement supported by the passage?", and P(no) is read at
the reply's first token; the opening's score ``support`` is the mean over the samples.

Drafts: the pools of ``scripts/self_check_prompts.py`` (dev 105, test 158), whose sentences
were read there; which sentence of a wrong draft is wrong is labelled by hand in
``docs/results/trim_doubted_labels.jsonl`` (a right draft's sentences are all right).

Samples: for ``dev``, the first 3 of the 6 samples ``scripts/hra_own_drafts.py`` drew from each
draft's own prompt (``docs/results/hra_own_drafts.jsonl.gz``); for ``test`` (drafts written by
earlier versions of the gate, whose prompts are not kept), 3 samples drawn now from the gate's
current generator prompt for a general question, with the gate's sampling settings
(``careguard.hra_risk``: temperature, budget and seeds).

What is measured, fixed before any reading: the AUROC for a wrong opening of ``support``, of
``opening`` (the recorded self-check P(no) of the opening) and of ``both`` (their mean), per
pool and over both pools, with bootstrap intervals. This is a measurement, not a choice: no
threshold is fitted and nothing here is shipped.

Added after the AUROCs were read and before any hold-back was replayed: what holding back the
drafts whose ``support`` is above a cut would do beside the trim at its shipped cut (0.20),
with the cut set on dev alone as the 85th percentile of its drafts' ``support`` (so about 15%
of dev drafts are held back; dev has too few wrong openings to choose a cut by them). Reported
on test: drafts held back, and the wrong share of the rest after the trim, beside the trim
alone.

``--collect`` appends one gzipped JSON line per draft (resumable) to
``docs/results/opening_support_POOL.jsonl.gz`` (``--shard K/N``: every N-th draft from the K-th,
into ``opening_support_POOL_K.jsonl.gz``, so shards run side by side); ``--report`` writes
``docs/results/opening_support.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# Run as a file (python scripts/NAME.py), the repository root must be importable too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.self_check_prompts import MODEL, pool_drafts
from scripts.trim_doubted import readings, replay, wrong_sentences

from medgate.backends.pool import ModelPool
from medgate.careguard.categories import RiskCategory
from medgate.careguard.generator import generator_messages
from medgate.careguard.hra_fit import (
    append_item,
    auroc_with_ci,
    consistency_sampler,
    parse_shard,
    read_items,
)
from medgate.careguard.records import Triage
from medgate.careguard.self_check import read_support
from medgate.careguard.triage import instructions_for
from medgate.config import load_config
from medgate.records import Case

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
SAMPLES = 3
SCORES = ("support", "opening", "both")
#: The trim's shipped cut, and the share of dev drafts a hold-back on ``support`` keeps.
TRIM_CUT = 0.20
KEPT_SHARE = 0.85


def out_file(pool: str, shard: int | None = None) -> Path:
    """Where a pool's readings go; each shard of a collection writes its own file, so shards
    can run side by side."""
    tail = "" if shard is None else f"_{shard}"
    return RESULTS / f"opening_support_{pool}{tail}.jsonl.gz"


def read_pool(pool: str) -> list[dict[str, Any]]:
    """Every reading of ``pool``, from all its files."""
    files = sorted(RESULTS.glob(f"opening_support_{pool}*.jsonl.gz"))
    return [row for path in files for row in read_items(path)]


def recorded_samples() -> dict[str, list[str]]:
    return {r["key"]: r["samples"] for r in read_items(RESULTS / "hra_own_drafts.jsonl.gz")}


def collect(pool: str, shard: int, shards: int) -> None:
    config = load_config()
    models = ModelPool(config)
    model = models.white_box(MODEL, role="generator")
    sampler = consistency_sampler(model, config.careguard, SAMPLES)
    questions = {d["key"]: d["question"] for d in pool_drafts(pool)}
    kept = recorded_samples() if pool == "dev" else {}
    out = out_file(pool, shard if shards > 1 else None)
    done = {r["key"] for r in read_pool(pool)}
    drafts = readings(pool)[shard::shards]
    general = [RiskCategory.GENERAL]
    for n, draft in enumerate(drafts, 1):
        if draft["key"] in done:
            continue
        models.forget_prompts()
        t0 = time.perf_counter()
        question = questions[draft["key"]]
        if pool == "dev":
            samples, source = kept[draft["key"]][:SAMPLES], "hra_own_drafts"
        else:
            triage = Triage(
                category=general[0],
                categories=general,
                instructions=instructions_for(general, [], question),
            )
            messages = generator_messages(Case(question=question), triage, [])
            drawn = model.complete_batch(messages, sampler.sample_params(0))
            samples, source = [c.text.strip() for c in drawn], "drawn"
        opening = draft["statements"][0]["text"]
        row = {
            "key": draft["key"],
            "part": draft["part"],
            "id": draft["id"],
            "opening": opening,
            "samples": samples,
            "sample_source": source,
            "support_no": [round(read_support(model, s, opening).p_error, 6) for s in samples],
            "model": model.name,
            "model_sha256": model.fingerprint,
            "seconds": round(time.perf_counter() - t0, 2),
        }
        append_item(out, row)
        print(f"{n}/{len(drafts)} {pool} {draft['key']} {row['seconds']} s", flush=True)


def scored(pool: str, wrong: dict[str, set[int]]) -> list[dict[str, Any]]:
    """Each read draft of ``pool`` with its three scores and whether its opening is wrong."""
    support = {r["key"]: r for r in read_pool(pool)}
    rows = []
    for draft in readings(pool):
        s = support.get(draft["key"])
        if s is None:
            continue
        if draft["bad"] and not wrong.get(draft["key"]):
            raise SystemExit(f"no sentence label for wrong draft {draft['key']}")
        sup = sum(s["support_no"]) / len(s["support_no"])
        opening = draft["statements"][0]["correct"]
        rows.append(
            {
                "key": draft["key"],
                "wrong_opening": bool(draft["bad"]) and 0 in wrong[draft["key"]],
                "wrong_draft": bool(draft["bad"]),
                "support": sup,
                "opening": opening,
                "both": (sup + opening) / 2,
                "sentences": [st["correct"] for st in draft["statements"]],
            }
        )
    return rows


#: Scores of a whole draft from the readings the gate already makes when it releases a general
#: answer: the opening's ``support`` and the trim's P(no) of each sentence. Listed, with the rule
#: that picks one, on 2026-12-06 before any of them was read on test (``support`` alone had
#: been, above): the best dev AUROC for a wrong draft is the one reported on test.
DRAFT_SCORES: dict[str, Callable[[dict[str, Any]], float]] = {
    "support": lambda r: r["support"],
    "max sentence P(no)": lambda r: max(r["sentences"]),
    "mean sentence P(no)": lambda r: statistics.fmean(r["sentences"]),
    "mean of support and max sentence": lambda r: (r["support"] + max(r["sentences"])) / 2,
    "max of support and max sentence": lambda r: max(r["support"], *r["sentences"]),
}


def draft_scores(pools: dict[str, list[dict[str, Any]]], summary: dict[str, Any]) -> list[str]:
    """The draft-level candidates on dev, the one chosen there, and it alone on test."""
    dev = [r["wrong_draft"] for r in pools["dev"]]
    on_dev = {
        name: auroc_with_ci([score(r) for r in pools["dev"]], dev)
        for name, score in DRAFT_SCORES.items()
    }
    chosen = max(on_dev, key=lambda name: on_dev[name].value or 0.0)
    test_rows = pools["test"]
    on_test = auroc_with_ci(
        [DRAFT_SCORES[chosen](r) for r in test_rows], [r["wrong_draft"] for r in test_rows]
    )
    summary["draft_scores"] = {
        "dev": {name: f.model_dump() for name, f in on_dev.items()},
        "chosen": chosen,
        "test": on_test.model_dump(),
    }
    return [
        "",
        "Scores of a whole draft from the readings the gate makes anyway (the opening's "
        "`support`, the trim's P(no) of each sentence), listed with the rule before any was read "
        "on test: AUROC for a wrong draft on dev, and the dev-best alone on test.",
        "",
        "| score | dev | test |",
        "|---|---|---|",
        *(
            f"| {name}{' (chosen)' if name == chosen else ''} | {f.shown()} | "
            f"{on_test.shown() if name == chosen else ''} |"
            for name, f in on_dev.items()
        ),
    ]


def report() -> None:
    wrong = wrong_sentences()
    pools = {p: scored(p, wrong) for p in ("dev", "test")}
    pools["both pools"] = [*pools["dev"], *pools["test"]]
    summary: dict[str, Any] = {}
    lines = [
        "# The opening sentence against the generator's own samples",
        "",
        "Generated by `python scripts/opening_support.py --report` from "
        "opening_support_dev/test.jsonl.gz and the recorded self-check readings; what is read "
        "and why, in the script's docstring. AUROC for a wrong opening sentence, bootstrap 95% "
        "interval. A measurement, not a choice: nothing is fitted or shipped from it.",
        "",
        "| pool | drafts | wrong openings | " + " | ".join(SCORES) + " |",
        "|---|---|---|" + "---|" * len(SCORES),
    ]
    for name, rows in pools.items():
        positive = [r["wrong_opening"] for r in rows]
        figures = {s: auroc_with_ci([r[s] for r in rows], positive) for s in SCORES}
        summary[name] = {
            "drafts": len(rows),
            "wrong_openings": sum(positive),
            **{s: f.model_dump() for s, f in figures.items()},
        }
        cells = " | ".join(figures[s].shown() for s in SCORES)
        lines.append(f"| {name} | {len(rows)} | {sum(positive)} | {cells} |")
    # Added after the tables above were read: issue-style HRA figures are for a wrong draft (any
    # sentence wrong or degenerate), and the opening's support is one score per draft.
    lines += [
        "",
        "AUROC of `support` for a wrong draft (any sentence wrong or degenerate), the figure "
        "CareGuard's HRA target is stated in; added after the table above was read:",
        "",
        "| pool | drafts | wrong drafts | support |",
        "|---|---|---|---|",
    ]
    for name, rows in pools.items():
        positive = [r["wrong_draft"] for r in rows]
        figure = auroc_with_ci([r["support"] for r in rows], positive)
        summary[name]["wrong_drafts"] = sum(positive)
        summary[name]["support_wrong_draft"] = figure.model_dump()
        lines.append(f"| {name} | {len(rows)} | {sum(positive)} | {figure.shown()} |")
    lines += draft_scores(pools, summary)
    cut = float(np.quantile([r["support"] for r in pools["dev"]], KEPT_SHARE))
    by_key = {p: {r["key"]: r for r in pools[p]} for p in ("dev", "test")}
    lines += [
        "",
        f"Holding back drafts with `support` above {cut:.3f} (dev's {KEPT_SHARE:.0%} point), "
        f"beside the trim at {TRIM_CUT:.2f}:",
        "",
        "| pool | drafts | held back | wrong after the trim, trim alone | wrong after the trim, "
        "with the hold-back |",
        "|---|---|---|---|---|",
    ]
    for pool in ("dev", "test"):
        drafts = [d for d in readings(pool) if d["key"] in by_key[pool]]
        kept = [d for d in drafts if by_key[pool][d["key"]]["support"] <= cut]
        alone, held = replay(drafts, wrong, TRIM_CUT), replay(kept, wrong, TRIM_CUT)
        summary[f"hold_back_{pool}"] = {"cut": cut, "trim_alone": alone, "with_hold_back": held}
        lines.append(
            f"| {pool} | {len(drafts)} | {len(drafts) - len(kept)} | {alone['wrong_after']}/"
            f"{alone['released']} ({alone['wrong_share']:.3f}) | {held['wrong_after']}/"
            f"{held['released']} ({held['wrong_share']:.3f}) |"
        )
    seconds = {p: statistics.median(r["seconds"] for r in read_pool(p)) for p in ("dev", "test")}
    summary["median_seconds"] = seconds
    lines += [
        "",
        f"Seconds per draft, median (one thread, another job beside it): dev {seconds['dev']:.1f} "
        f"(3 reads), test {seconds['test']:.1f} (3 samples drawn and 3 reads).",
    ]
    (RESULTS / "opening_support.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (RESULTS / "opening_support.json").write_text(json.dumps(summary, indent=2) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collect", action="store_true")
    parser.add_argument("--pool", choices=("dev", "test"))
    parser.add_argument(
        "--shard",
        type=parse_shard,
        default=(0, 1),
        help="K/N: read every N-th draft from the K-th (default 0/1)",
    )
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args()
    if args.collect:
        if args.pool is None:
            parser.error("--collect needs --pool")
        collect(args.pool, *args.shard)
    if args.report:
        report()


if __name__ == "__main__":
    main()
