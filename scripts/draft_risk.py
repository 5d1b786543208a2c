"""The whole-draft hallucination score on drafts the gate itself read while it ran.

    python scripts/draft_risk.py            # the fixed score on sets 9-11 (report.md)
    python scripts/draft_risk.py --fit      # the combined score, fitted on sets 9-11
    python scripts/draft_risk.py --read-v16 # both, read once on set 12 (report_v16.md)

The score ``max(support, max sentence P(no))`` (the opening's support against the generator's
samples, the trim's P(no) of each sentence) was chosen on the dev pool of
``scripts/opening_support.py`` and read once on its offline test pool. Here it is read again,
unchanged, on a second test pool: every draft of the end-to-end runs with the opening check on
general-questions-heldout-9/-10 (docs/results/careguard_runs_v12, ``with_opening_check``) and
-11 (docs/results/careguard_runs_v15, ``main``) whose trace holds both readings, as the gate
recorded them. The rule, written before the pool was scored: docs/results/draft_risk/NOTES.md.

Labels: a draft whose text was released unchanged carries the hand label of that released text
(``docs/results/careguard*/careguard_labels.jsonl``, wrong or degenerate); every other draft is
labelled by hand in ``docs/results/draft_risk/labels.jsonl``. A draft with no label, or with
labels that disagree, stops the report.

Writes docs/results/draft_risk/report.md and report.json.

``--fit``: the combined score of docs/results/careguard_runs_v16/NOTES.md, a logistic
regression over the standardised ``support``, highest sentence P(no) and HRA judge score of
every draft of the pool above, C chosen by 5-fold cross-validated AUROC; written to
docs/results/draft_risk/combined.json. ``--read-v16``: the first drafts of the v16 run on
general-questions-heldout-12 (careguard_runs_v16), scored once by the fitted combined score and
beside it by the fixed one and each reading; writes report_v16.md and report_v16.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

# Run as a file (python scripts/NAME.py), the repository root must be importable too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.opening_support import DRAFT_SCORES, scored
from scripts.trim_doubted import wrong_sentences

from medgate.careguard.hra_fit import FeatureAUROC, auroc, auroc_with_ci
from medgate.eval.care_labels import LABELS_FILE, HandLabel, shown_sha256

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
OUT = RESULTS / "draft_risk"
RUNS = (
    RESULTS / "careguard_runs_v12" / "general-questions-heldout-9-all-with_opening_check.jsonl",
    RESULTS / "careguard_runs_v12" / "general-questions-heldout-10-all-with_opening_check.jsonl",
    RESULTS / "careguard_runs_v15" / "general-questions-heldout-11-all-main.jsonl",
)
V16_RUN = RESULTS / "careguard_runs_v16" / "general-questions-heldout-12-all-main.jsonl"
COMBINED = OUT / "combined.json"
#: The combined score's readings, in this order, and the grid its C is chosen from.
READINGS = ("support", "max_sentence", "hra_judge")
C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
FOLDS = 5
SEED = 13
#: The score chosen on dev in scripts/opening_support.py; read here, never chosen again.
CHOSEN = "max of support and max sentence"
TARGET = 0.75


def draft_labels() -> dict[tuple[str, str], bool]:
    """Whether each labelled text is wrong or degenerate, by question id and the text's sha256
    (one text can answer two questions); a text labelled both ways stops the report."""
    verdicts: dict[tuple[str, str], set[bool]] = {}
    for path in [*sorted(RESULTS.glob(f"careguard*/{LABELS_FILE}")), RESULTS / LABELS_FILE]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                label = HandLabel.model_validate_json(line)
                verdicts.setdefault((label.id, label.shown_sha256), set()).add(
                    label.wrong or label.degenerate
                )
    for line in (OUT / "labels.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            key = (row["id"], row["draft_sha256"])
            verdicts.setdefault(key, set()).add(row["wrong"] or row["degenerate"])
    conflicting = [key for key, v in verdicts.items() if len(v) > 1]
    if conflicting:
        raise SystemExit(f"texts labelled both ways: {conflicting}")
    return {key: v.pop() for key, v in verdicts.items()}


def pool(runs: tuple[Path, ...] = RUNS, *, first_only: bool = False) -> list[dict[str, Any]]:
    """Every draft (or every first draft) whose round recorded the trim's sentence readings and
    the opening's support."""
    labels = draft_labels()
    rows = []
    for path in runs:
        for line in path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            careguard = item["record"]["verdict"]["trace"]["stages"]["careguard"]
            for round_ in careguard["rounds"]:
                trim = round_.get("trimming") or {}
                if first_only and round_["iteration"] != 0:
                    continue
                if not trim.get("opening_support") or not trim.get("sentences"):
                    continue
                sha = shown_sha256(round_["draft"]["text"])
                if (item["id"], sha) not in labels:
                    raise SystemExit(f"no label for {item['id']} round {round_['iteration']}")
                row = {
                    "id": item["id"],
                    "iteration": round_["iteration"],
                    "draft_sha256": sha,
                    "wrong": labels[item["id"], sha],
                    "support": statistics.fmean(trim["opening_support"]),
                    "sentences": [s["p_error"] for s in trim["sentences"]],
                    "hra_judge": round_["assessments"]["hra"]["score"],
                }
                row["max_sentence"] = max(row["sentences"])
                row["score"] = DRAFT_SCORES[CHOSEN](row)
                rows.append(row)
    return rows


def write_report(stem: str, lines: list[str], summary: dict[str, Any]) -> None:
    """``OUT/stem.md`` and ``.json``, and the Markdown printed."""
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{stem}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (OUT / f"{stem}.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print("\n".join(lines))


def figures(rows: list[dict[str, Any]]) -> dict[str, FeatureAUROC]:
    wrong = [r["wrong"] for r in rows]
    return {
        name: auroc_with_ci([r[name] for r in rows], wrong)
        for name in ("score", "support", "max_sentence", "hra_judge")
    }


def fit() -> None:
    """The combined score on every draft of sets 9-11; C by cross-validated AUROC."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    rows = pool()
    x = np.asarray([[r[k] for k in READINGS] for r in rows], dtype=np.float64)
    y = np.asarray([r["wrong"] for r in rows], dtype=bool)
    mean, std = x.mean(axis=0), x.std(axis=0)
    z = (x - mean) / std
    folds = list(StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(z, y))
    cv: dict[float, float] = {}
    for c in C_GRID:
        scores = np.zeros(len(y))
        for train, held in folds:
            model = LogisticRegression(C=c, max_iter=1000).fit(z[train], y[train])
            scores[held] = model.predict_proba(z[held])[:, 1]
        cv[c] = auroc(scores.tolist(), y.tolist()) or 0.0
    best = max(C_GRID, key=lambda c: cv[c])
    model = LogisticRegression(C=best, max_iter=1000).fit(z, y)
    labels = (OUT / "labels.jsonl").read_bytes()
    artifact = {
        "readings": list(READINGS),
        "mean": mean.tolist(),
        "std": std.tolist(),
        "coef": model.coef_[0].tolist(),
        "intercept": float(model.intercept_[0]),
        "c": best,
        "cv_auroc": {str(c): round(v, 4) for c, v in cv.items()},
        "drafts": len(rows),
        "wrong": int(y.sum()),
        "fitted_on": [str(p.relative_to(RESULTS)) for p in RUNS],
        "labels_sha256": hashlib.sha256(labels).hexdigest(),
        "command": "python scripts/draft_risk.py --fit",
    }
    COMBINED.write_text(json.dumps(artifact, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(artifact, indent=2))


def combined_score(row: dict[str, Any], artifact: dict[str, Any]) -> float:
    """P(wrong) of a draft under the fitted combined score."""
    z = [
        (row[k] - m) / s
        for k, m, s in zip(artifact["readings"], artifact["mean"], artifact["std"], strict=True)
    ]
    logit = artifact["intercept"] + sum(c * v for c, v in zip(artifact["coef"], z, strict=True))
    return float(1.0 / (1.0 + np.exp(-logit)))


def read_v16() -> None:
    """Set 12's first drafts, scored once."""
    artifact = json.loads(COMBINED.read_text(encoding="utf-8"))
    first = pool((V16_RUN,), first_only=True)
    for r in first:
        r["combined"] = combined_score(r, artifact)
    wrong = [r["wrong"] for r in first]
    names = {
        "combined": "combined score (the candidate)",
        "score": "max(support, max sentence P(no))",
        "support": "support",
        "max_sentence": "max sentence P(no)",
        "hra_judge": "HRA judge (1-5)",
    }
    results = {k: auroc_with_ci([r[k] for r in first], wrong) for k in names}
    met = (results["combined"].value or 0.0) >= TARGET
    lines = [
        "# HRA's combined score read once on general-questions-heldout-12",
        "",
        "Generated by `python scripts/draft_risk.py --read-v16` from "
        "careguard_runs_v16/general-questions-heldout-12-all-main.jsonl, the hand labels and "
        "combined.json (fitted on sets 9-11 before this run was read; the rule in "
        "careguard_runs_v16/NOTES.md). AUROC for a wrong first draft, bootstrap 95% interval.",
        "",
        f"First drafts with both readings: {len(first)}, {sum(wrong)} wrong.",
        "",
        "| score | AUROC |",
        "|---|---|",
        *(f"| {label} | {results[k].shown()} |" for k, label in names.items()),
        "",
        f"Target (combined score AUROC >= {TARGET}): {'met' if met else 'not met'}.",
    ]
    summary = {
        "drafts": len(first),
        "wrong": sum(wrong),
        **{k: f.model_dump() for k, f in results.items()},
        "target": {"auroc": TARGET, "met": met},
        "items": [
            {k: r[k] for k in ("id", "draft_sha256", "wrong", "combined", "score", *READINGS)}
            for r in first
        ],
    }
    write_report("report_v16", lines, summary)


def report() -> None:
    rows = pool()
    first = [r for r in rows if r["iteration"] == 0]
    offline = scored("test", wrong_sentences())
    offline_rows = [{"wrong": r["wrong_draft"], "score": DRAFT_SCORES[CHOSEN](r)} for r in offline]
    pooled_rows = first + offline_rows
    pooled = auroc_with_ci([r["score"] for r in pooled_rows], [r["wrong"] for r in pooled_rows])
    parts = {"first drafts (primary)": first, "every draft": rows}
    table = {name: figures(part) for name, part in parts.items()}
    summary: dict[str, Any] = {
        name: {
            "drafts": len(part),
            "wrong": sum(r["wrong"] for r in part),
            **{k: f.model_dump() for k, f in table[name].items()},
        }
        for name, part in parts.items()
    }
    primary = table["first drafts (primary)"]["score"]
    met = primary.value is not None and primary.value >= TARGET
    summary["pooled_with_offline_test"] = {
        "drafts": len(pooled_rows),
        "wrong": sum(r["wrong"] for r in pooled_rows),
        **pooled.model_dump(),
    }
    summary["target"] = {"auroc": TARGET, "met": met}
    lines = [
        "# The whole-draft hallucination score on the gate's own recorded drafts",
        "",
        "Generated by `python scripts/draft_risk.py` from the run logs of "
        "careguard_runs_v12 (`with_opening_check`, sets 9 and 10) and careguard_runs_v15 "
        "(`main`, set 11) and the hand labels; the rule was written first (NOTES.md here). "
        "AUROC for a wrong draft (any sentence with a factual error or degenerate repetition), "
        "bootstrap 95% interval.",
        "",
        "| drafts | n | wrong | max(support, max sentence P(no)) | support | max sentence "
        "P(no) | HRA judge (1-5) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, part in parts.items():
        f = table[name]
        lines.append(
            f"| {name} | {len(part)} | {sum(r['wrong'] for r in part)} | {f['score'].shown()} | "
            f"{f['support'].shown()} | {f['max_sentence'].shown()} | {f['hra_judge'].shown()} |"
        )
    lines += [
        "",
        f"The same score over the primary pool and the {len(offline_rows)} offline test drafts "
        f"of scripts/opening_support.py ({sum(r['wrong'] for r in offline_rows)} wrong): "
        f"{pooled.shown()}, {len(pooled_rows)} drafts.",
        "",
        f"Target (AUROC >= {TARGET} on the primary pool): {'met' if met else 'not met'}.",
    ]
    write_report("report", lines, summary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--read-v16", action="store_true")
    args = parser.parse_args()
    if args.fit:
        fit()
    elif args.read_v16:
        read_v16()
    else:
        report()


if __name__ == "__main__":
    main()
