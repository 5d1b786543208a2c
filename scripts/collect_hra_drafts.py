"""Model readings of CareGuard's own released drafts that were labelled by hand, for measuring
HRA's features where SelfCheckGPT applies them: on the generator's own text.

    MEDGATE_DATA_DIR=../shared/data MEDGATE_BACKEND__N_THREADS=1 \\
        python scripts/collect_hra_drafts.py --out docs/results/hra_care_drafts.jsonl.gz

Every patient-question answer in ``docs/results/careguard_labels.jsonl`` (labelled harmful,
wrong or degenerate by a maintainer) is found in its run log by the sha256 of what was shown;
its draft (the shown text without the disclaimer) is read under the generator's first-round
prompt for the question (its category's instructions, the default screening answers when it was
asked for context), and ``--samples`` answers are sampled from that prompt as the gate samples
them. The judge's HRA score is the one the run recorded for the released round. Appends one
gzipped JSON line per draft (resumable).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

from medgate.backends.base import TextScorer
from medgate.backends.pool import ModelPool
from medgate.careguard.categories import RiskCategory
from medgate.careguard.evaluation import DEFAULT_ANSWERS
from medgate.careguard.generator import generator_messages
from medgate.careguard.hra_fit import append_item, consistency_sampler, read_items
from medgate.careguard.records import Triage
from medgate.careguard.triage import instructions_for
from medgate.claims import MEDICAL_DISCLAIMER
from medgate.config import load_config
from medgate.records import Case

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"


def labelled_drafts() -> list[dict[str, object]]:
    labels = [json.loads(x) for x in (RESULTS / "careguard_labels.jsonl").open()]
    out = []
    for label in labels:
        if not str(label["run"]).startswith("patient-questions"):
            continue
        log = RESULTS / "careguard_runs" / f"{label['run']}.jsonl"
        for line in log.open():
            row = json.loads(line)
            shown = row.get("shown") or ""
            if hashlib.sha256(shown.encode()).hexdigest() != label["shown_sha256"]:
                continue
            draft = shown.split("\n\n---")[0].replace(MEDICAL_DISCLAIMER, "").strip()
            passed = [r for r in row["rounds"] if r.get("passed")]
            out.append(
                {
                    "key": f"{label['run']}/{label['id']}",
                    "question": row["question"],
                    "categories": row["triage_categories"],
                    "asked": bool(row.get("asked")),
                    "draft": draft,
                    "judge": passed[-1]["hra_judge"] if passed else None,
                    "wrong": bool(label["wrong"]),
                    "degenerate": bool(label["degenerate"]),
                    "harmful": bool(label["harmful"]),
                }
            )
            break
    return out


def collect(out: Path, samples: int) -> None:
    cfg = load_config()
    cg = cfg.careguard
    model = ModelPool(cfg).white_box(cg.spec("generator", cfg.model), role="generator")
    if not isinstance(model, TextScorer):
        raise SystemExit(f"{model.name} cannot score a given text")
    sampler = consistency_sampler(model, cg, samples)
    done = {row["key"] for row in read_items(out)} if out.is_file() else set()
    items = labelled_drafts()
    for n, item in enumerate(items, 1):
        if item["key"] in done:
            continue
        t0 = time.perf_counter()
        # A run without the controller recorded no category: its prompt was the general one.
        names = list(item["categories"]) or ["general_information"]  # type: ignore[call-overload]
        categories = [RiskCategory(c) for c in names]
        triage = Triage(
            category=categories[0],
            categories=categories,
            instructions=instructions_for(categories, []),
        )
        case = Case(
            question=str(item["question"]), patient=DEFAULT_ANSWERS if item["asked"] else {}
        )
        messages = generator_messages(case, triage, [])
        sampled = model.complete_batch(messages, sampler.sample_params(0))
        row = {
            **item,
            "samples": [c.text.strip() for c in sampled],
            "token_logprobs": [round(x, 4) for x in model.score_text(messages, str(item["draft"]))],
            "model": model.name,
            "model_sha256": model.fingerprint,
            "seconds": round(time.perf_counter() - t0, 2),
        }
        append_item(out, row)
        print(f"{n}/{len(items)} {item['key']} {row['seconds']} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--samples", type=int, default=3)
    args = parser.parse_args()
    collect(args.out, args.samples)


if __name__ == "__main__":
    main()
