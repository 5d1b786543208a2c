"""Model readings of HaluEval 2.0 biomedical answers, for fitting and measuring HRA's risk model.

    MEDGATE_DATA_DIR=../shared/data MEDGATE_BACKEND__N_THREADS=1 \\
        python scripts/collect_hra.py --out docs/results/hra_halueval_items.jsonl.gz --limit 100

For each labelled answer (in the seeded order of :func:`medgate.careguard.hra_fit.halueval_items`,
so a limit takes an even draw of the three parts), on the configured model (default the embedded
0.5B): the HRA judge's reply to the answer as a draft, ``--samples`` answers sampled from
CareGuard's generator prompt for the question (as the gate samples them), and the answer's
token log-probabilities read under that prompt (teacher forcing). One gzipped JSON line per
item, appended, so a run resumes where it stopped. The answers themselves are not copied: the
fit reads them from the data directory by id (``python scripts/fit_hra.py``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from medgate.backends.base import TextScorer
from medgate.backends.pool import ModelPool
from medgate.careguard.categories import RiskCategory
from medgate.careguard.evaluators import HallucinationJudge
from medgate.careguard.generator import generator_messages
from medgate.careguard.hra_fit import append_item, consistency_sampler, halueval_items, read_items
from medgate.careguard.records import Draft, Evaluator, Triage
from medgate.careguard.triage import instructions_for
from medgate.config import load_config
from medgate.records import Case


def general_triage() -> Triage:
    category = RiskCategory.GENERAL
    return Triage(
        category=category,
        categories=[category],
        instructions=instructions_for([category], []),
    )


def collect(out: Path, limit: int, samples: int, start: int = 0) -> None:
    cfg = load_config()
    cg = cfg.careguard
    pool = ModelPool(cfg)
    generator_model = pool.white_box(cg.spec("generator", cfg.model), role="generator")
    if not isinstance(generator_model, TextScorer):
        raise SystemExit(f"{generator_model.name} cannot score a given text")
    judge = HallucinationJudge(
        pool.get(cg.spec(Evaluator.HRA, cfg.model), role=Evaluator.HRA),
        max_tokens=cg.judge_max_tokens,
        seed=cg.seed,
    )
    # The gate's own sample settings, drawing ``samples`` of them.
    sampler = consistency_sampler(generator_model, cg, samples)
    done = {row["id"] for row in read_items(out)} if out.is_file() else set()
    triage = general_triage()
    items = halueval_items(cfg.data_dir)[:limit]
    for n, item in enumerate(items[start:], start + 1):
        if item.id in done:
            continue
        t0 = time.perf_counter()
        case = Case(question=item.question)
        messages = generator_messages(case, triage, [])
        row: dict[str, object] = {
            "id": item.id,
            "split": item.split,
            "wrong": item.wrong,
            "false_share": item.false_share,
            "facts": item.facts,
            "model": generator_model.name,
            "model_sha256": generator_model.fingerprint,
            "judge_model": judge.model_name,
        }
        try:
            reply, _ = judge.ask(case, triage, Draft(text=item.answer))
            row["judge"], row["judge_justification"] = reply.score, reply.justification
        except Exception as exc:  # recorded: the fit counts a failed judge as 5, as the gate does
            row["judge"], row["judge_error"] = None, f"{type(exc).__name__}: {exc}"
        sampled = generator_model.complete_batch(messages, sampler.sample_params(0))
        row["samples"] = [c.text.strip() for c in sampled]
        logprobs = generator_model.score_text(messages, item.answer)
        row["token_logprobs"] = [round(lp, 4) for lp in logprobs]
        row["seconds"] = round(time.perf_counter() - t0, 2)
        append_item(out, row)
        print(
            f"{n}/{len(items)} {item.id} wrong={item.wrong} judge={row['judge']} "
            f"{row['seconds']} s",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--start", type=int, default=0, help="skip the first START items")
    args = parser.parse_args()
    collect(args.out, args.limit, args.samples, args.start)


if __name__ == "__main__":
    main()
