"""Fit HRA's risk model on the collected HaluEval readings and write the artifact and the report.

    MEDGATE_DATA_DIR=../shared/data python scripts/fit_hra.py \\
        --items docs/results/hra_halueval_items.jsonl.gz

Reads the per-item model readings (``scripts/collect_hra.py``) and the answers (from the data
directory, by id), computes every feature as the gate does (:mod:`medgate.careguard.hra_risk`),
fits on the train part, chooses C and the threshold on validation and scores the test part once
(:mod:`medgate.careguard.hra_fit`). Writes ``src/medgate/careguard/data/hra_risk.json`` (the
shipped artifact), ``docs/results/hra_risk.json`` and ``docs/results/hra_risk.md``. Needs
scikit-learn; with ``--report-only`` the shipped artifact is left as it is.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sys
from pathlib import Path

from medgate.careguard.hra_fit import (
    DATA_FILE,
    SPLIT_SEED,
    WRONG_SHARE,
    DraftsReport,
    HRAFitReport,
    drafts_report,
    fit_risk_model,
    halueval_items,
    item_features,
    read_items,
)
from medgate.careguard.hra_risk import FEATURES
from medgate.config import load_config
from medgate.embeddings import default_embedder

ROOT = Path(__file__).resolve().parent.parent
ARTIFACT = ROOT / "src" / "medgate" / "careguard" / "data" / "hra_risk.json"
RESULTS = ROOT / "docs" / "results"


def _fmt(a: object) -> str:
    v = getattr(a, "value", None)
    ci = getattr(a, "ci", None)
    if v is None:
        return "n/a"
    return f"{v:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{v:.3f}"


def drafts_markdown(d: DraftsReport | None) -> str:
    if d is None:
        return ""
    rows = "\n".join(f"| {name} | {_fmt(a)} |" for name, a in d.features.items())
    return f"""
## CareGuard's own drafts, labelled by hand

{d.drafts} patient-question answers CareGuard released in the runs of docs/results/careguard.md
and a maintainer labelled (`careguard_labels.jsonl`; {d.bad} wrong or degenerate: {d.wrong}
wrong, {d.degenerate} degenerate), read again by `python scripts/collect_hra_drafts.py`: the
draft under its first-round generator prompt, samples from that prompt, and the HRA judge score
the run recorded. Nothing was fitted or chosen on them.

**Risk model (fitted on HaluEval above): AUROC {_fmt(d.model)}** for a wrong or degenerate
draft; at its threshold it would hold back {d.held_back["bad"]} of {d.bad} bad drafts and
{d.held_back["good"]} of {d.drafts - d.bad} good ones.

| feature alone | AUROC, wrong or degenerate (95% CI) |
|---|---|
{rows}
"""


def markdown(
    report: HRAFitReport, meta: dict[str, object], drafts: DraftsReport | None = None
) -> str:
    rows = "\n".join(
        f"| {name} | {_fmt(a)} | {report.coefficients.get(name, 0.0):+.3f} |"
        for name, a in report.test_features.items()
    )
    t = report.test_at_threshold
    return f"""# HRA risk model on HaluEval 2.0 biomedical

Command: `{meta["command"]}` ({meta["date"]}); model readings of {meta["limit"]} answers
(`{meta["items_file"]}`, collected by `python scripts/collect_hra.py`; the ids of each part are
in the artifact's provenance) on {meta["model"]} (sha256 {meta["model_sha256"]}).

Items: {report.items} (wrong drafts: {report.wrong}); a draft is *wrong* when at least
{WRONG_SHARE:.0%} of its labelled facts are false; split by a seeded hash of the id
(`{SPLIT_SEED}`). Consistency compares each answer with {meta["samples"]} answers sampled from
CareGuard's generator prompt for the question.

Chosen on validation: C = {report.c} (validation AUROC by C: {report.validation_auroc}),
threshold P(wrong) >= {report.threshold:.3f}.

## Test part, scored once

**Risk model: AUROC {_fmt(report.test)}** (bootstrap 95% interval, {report.test.n} drafts).
At the threshold it holds back {t["wrong_caught"]} of {t["wrong"]} wrong drafts and
{t["right_held_back"]} of {t["right"]} right ones.

| feature alone | test AUROC (95% CI) | model coefficient (standardised) |
|---|---|---|
{rows}

Cross-validated over all {sum(report.items.values())} items (5 folds, C as chosen, not
independent of that choice; a second reading because the test part is small): AUROC
{_fmt(report.cross_validated)}.

A feature's AUROC below 0.5 means it ranks right drafts as riskier; it is reported as measured,
not flipped.
{drafts_markdown(drafts)}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=Path, required=True)
    parser.add_argument("--samples", type=int, default=None, help="default: careguard.hra_risk")
    parser.add_argument("--drafts", type=Path, default=None, help="hand-labelled drafts' readings")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    cfg = load_config()
    samples = args.samples or cfg.careguard.hra_risk.samples
    answers = {i.id: i for i in halueval_items(cfg.data_dir)}
    rows = read_items(args.items)
    embedder = default_embedder()
    features, wrong, splits = [], [], []
    for row in rows:
        item = answers[row["id"]]
        features.append(item_features(row, item.answer, samples, embedder))
        wrong.append(item.wrong)
        splits.append(item.split)
    data_path = cfg.data_dir / DATA_FILE
    command = "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    provenance = {
        "data": str(DATA_FILE),
        "data_sha256": hashlib.sha256(data_path.read_bytes()).hexdigest(),
        "items_file": args.items.name,
        "items_sha256": hashlib.sha256(args.items.read_bytes()).hexdigest(),
        "items": len(rows),
        "ids": {
            s: sorted(r["id"] for r, p in zip(rows, splits, strict=True) if p == s)
            for s in ("train", "validation", "test")
        },
        "label": f"wrong when >= {WRONG_SHARE} of the labelled facts are false",
        "split_seed": SPLIT_SEED,
        "model": rows[0]["model"],
        "model_sha256": rows[0]["model_sha256"],
        "judge_model": rows[0]["judge_model"],
        "encoder": embedder.name,
        "encoder_sha256": embedder.fingerprint,
        "sample_temperature": cfg.careguard.hra_risk.sample_temperature,
        "sample_max_tokens": cfg.careguard.hra_risk.sample_max_tokens,
        "repeat_penalty": cfg.careguard.repeat_penalty,
        "command": command,
        "date": date,
    }
    artifact, report = fit_risk_model(
        features, wrong, splits, samples=samples, provenance=provenance, names=FEATURES
    )
    drafts = (
        drafts_report(read_items(args.drafts), samples, embedder, artifact) if args.drafts else None
    )
    if not args.report_only:
        ARTIFACT.write_text(artifact.model_dump_json(indent=1) + "\n", encoding="utf-8")
    meta = {**provenance, "limit": len(rows), "samples": samples}
    (RESULTS / "hra_risk.json").write_text(
        json.dumps(
            {
                "command": command,
                "date": date,
                **report.model_dump(mode="json"),
                "drafts": drafts.model_dump(mode="json") if drafts else None,
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    (RESULTS / "hra_risk.md").write_text(markdown(report, meta, drafts), encoding="utf-8")
    print(f"test AUROC {_fmt(report.test)}; threshold {report.threshold:.3f}; C {report.c}")
    print(f"cross-validated AUROC {_fmt(report.cross_validated)}")
    for name, a in report.test_features.items():
        print(f"  {name}: {_fmt(a)}")
    if drafts is not None:
        print(f"own drafts ({drafts.drafts}, {drafts.bad} bad): model {_fmt(drafts.model)}")
        for name, a in drafts.features.items():
            print(f"  {name}: {_fmt(a)}")


if __name__ == "__main__":
    main()
