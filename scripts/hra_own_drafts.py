"""HRA's features on each generator's own hand-labelled first drafts, read by that generator.

    MEDGATE_DATA_DIR=../shared/data MEDGATE_BACKEND__N_THREADS=2 \\
        python scripts/hra_own_drafts.py --collect --model embedded:qwen2.5-coder-1.5b
    python scripts/hra_own_drafts.py --report

The drafts are the greedy first drafts of general health answers in
``docs/results/generator_drafts.jsonl`` (65 questions per model), each labelled wrong or
degenerate by hand in ``generator_labels.jsonl`` before any of this was read, with the HRA
judge's score of it in ``generator_judged.jsonl``. SelfCheckGPT's premise is that the model that
wrote a draft is the one whose samples disagree with its errors, so each draft is read by the
model that wrote it (the shipped HRA risk model was fitted on the 0.5B's readings and cannot
score the 1.5B's, which is CareGuard's generator now):

* ``--samples`` answers sampled from the draft's own prompt, as the gate samples them
  (``careguard.hra_risk`` temperature and budget, its seeds: the gate's two are the first two);
* the draft's token log-probabilities under that prompt;
* a self-check reading (:mod:`medgate.careguard.self_check`, the ``self_check`` judge's): the
  same model asked whether every statement of the answer is medically correct, its yes/no
  distribution read at the first token of the reply (``p_no``, in the manner of P(True),
  Kadavath et al. 2022). The prompt was written once, before any reading.

``--collect`` appends one gzipped JSON line per draft (resumable) to
``docs/results/hra_own_drafts.jsonl.gz``. ``--report`` writes ``docs/results/hra_own_drafts.md``
and ``.json``: each feature's AUROC for a draft labelled wrong or degenerate, with a bootstrap
95% interval, per generator; the shipped HRA risk model where it applies (the 0.5B's drafts,
none of which it was fitted on); and a logistic regression over the features, cross-validated
on the same drafts (nothing here is held out from it, so it is labelled as such).

The self-check statement by statement (the ``self_check`` judge's default reading):

    MEDGATE_BACKEND__N_THREADS=1 python scripts/hra_own_drafts.py --collect-statements --part P
    python scripts/hra_own_drafts.py --report-statements

``--collect-statements`` reads each labelled draft of part P twice with the model that wrote it,
whole and sentence by sentence, into ``docs/results/self_check_statements_P.jsonl.gz``.
``--report-statements`` writes ``self_check_statements.md`` and ``.json``: the candidate scores
(:data:`STATEMENT_SCORES`, fixed before any statement was read) on the dev parts ``dev`` and
``heldout``, the one with the highest dev AUROC and its balanced-accuracy cut, then the test part
``heldout3`` (questions written and drafts labelled before any reading) scored once; and the cut
the `self_check` judge uses by default (:data:`GATE_FALSE_ALARMS`), chosen on the same dev drafts.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from medgate.backends.base import TextScorer
from medgate.backends.pool import ModelPool
from medgate.careguard.categories import RiskCategory
from medgate.careguard.generator import generator_messages
from medgate.careguard.hra_fit import (
    append_item,
    auroc_with_ci,
    balanced_threshold,
    consistency_sampler,
    false_alarm_threshold,
    halueval_items,
    item_features,
    read_items,
)
from medgate.careguard.hra_risk import FEATURES, load_risk_model
from medgate.careguard.records import Triage
from medgate.careguard.self_check import read_self_check, read_statements
from medgate.careguard.triage import instructions_for
from medgate.config import load_config
from medgate.embeddings import default_embedder
from medgate.records import Case

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
OUT = RESULTS / "hra_own_drafts.jsonl.gz"
FOLDS = 5
CV_REPEATS = 20
CV_C = 0.3
#: The share of right dev drafts the gate's self-check cut may hold back. The balanced-accuracy
#: cut holds back a third of them, and end to end that blocked 35 of 80 general questions
#: (docs/careguard.md); the gate must keep answering (the benign target is 80% answered).
GATE_FALSE_ALARMS = 0.10


#: Each part's drafts, hand labels and judge scores. ``dev`` is what the measurement chooses
#: on; ``heldout`` (questions written afterwards, drafts labelled before any reading) is scored
#: once with what dev chose.
PARTS: dict[str, tuple[str, str, str]] = {
    "dev": ("generator_drafts.jsonl", "generator_labels.jsonl", "generator_judged.jsonl"),
    "heldout": (
        "generator_drafts_heldout.jsonl",
        "generator_labels_heldout.jsonl",
        "generator_judged_heldout.jsonl",
    ),
    "heldout3": (
        "generator_drafts_heldout_3.jsonl",
        "generator_labels_heldout_3.jsonl",
        "generator_judged_heldout_3.jsonl",
    ),
}


def statements_file(part: str) -> Path:
    """Where the statement readings of one part are kept (one file per part, so the parts can
    be read side by side by separate processes)."""
    return RESULTS / f"self_check_statements_{part}.jsonl.gz"


def _jsonl(name: str) -> list[dict[str, Any]]:
    path = RESULTS / name
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def labelled_drafts(model: str, part: str) -> list[dict[str, Any]]:
    """The model's first drafts in ``part`` that carry a hand label, with the label and the HRA
    judge's score (None where the drafts were not judged)."""
    drafts, labels_file, judged_file = PARTS[part]
    labels = {r["key"]: r for r in _jsonl(labels_file)}
    judged = {r["key"]: r for r in _jsonl(judged_file)}
    out = []
    for row in _jsonl(drafts):
        label = labels.get(row["key"])
        if row["model"] != model or label is None:
            continue
        hra = judged.get(row["key"], {}).get("judges", {}).get("hra", {})
        out.append(
            {
                "key": row["key"],
                "part": part,
                "id": row["id"],
                "question": row["question"],
                "draft": row["answer"],
                "bad": bool(label["wrong"] or label["degenerate"]),
                "label_reason": label["reason"],
                "judge": hra.get("judge"),
            }
        )
    return out


def collect(model_spec: str, samples: int, part: str) -> None:
    cfg = load_config()
    cg = cfg.careguard
    model = ModelPool(cfg).white_box(model_spec, role="generator")
    if not isinstance(model, TextScorer):
        raise SystemExit(f"{model.name} cannot score a given text")
    sampler = consistency_sampler(model, cg, samples)
    general = [RiskCategory.GENERAL]
    triage = Triage(
        category=general[0], categories=general, instructions=instructions_for(general, [])
    )
    done = {r["key"] for r in read_items(OUT)} if OUT.is_file() else set()
    items = labelled_drafts(model_spec, part)
    for n, item in enumerate(items, 1):
        if item["key"] in done:
            continue
        t0 = time.perf_counter()
        messages = generator_messages(Case(question=item["question"]), triage, [])
        sampled = model.complete_batch(messages, sampler.sample_params(0))
        logprobs = model.score_text(messages, item["draft"])
        p_error, mass, _ = read_self_check(model, item["question"], item["draft"])
        row = {
            **item,
            "model": model.name,
            "model_sha256": model.fingerprint,
            "samples": [c.text.strip() for c in sampled],
            "sample_seeds": sampler.sample_seeds(0),
            "token_logprobs": [round(x, 4) for x in logprobs],
            "p_no": round(p_error, 6),
            "label_mass": round(mass, 6),
            "seconds": round(time.perf_counter() - t0, 2),
        }
        append_item(OUT, row)
        print(f"{n}/{len(items)} {part} {item['id']} {row['seconds']} s", flush=True)


def _cross_validated(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Out-of-fold AUROC of a balanced logistic regression (C fixed in advance), repeated over
    seeded stratified folds: mean, and the 2.5th and 97.5th percentiles over the repeats."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    values = []
    for seed in range(CV_REPEATS):
        scores = np.zeros(len(y))
        for train, test in StratifiedKFold(FOLDS, shuffle=True, random_state=seed).split(x, y):
            model = make_pipeline(
                StandardScaler(),
                LogisticRegression(C=CV_C, class_weight="balanced", max_iter=2000),
            ).fit(x[train], y[train])
            scores[test] = model.decision_function(x[test])
        values.append(float(roc_auc_score(y, scores)))
    return (
        float(np.mean(values)),
        float(np.percentile(values, 2.5)),
        float(np.percentile(values, 97.5)),
    )


FEATURE_NAMES = (*FEATURES, "self_check_p_no")
LOGISTIC = "logistic regression over all features"


def _features(rows: list[dict[str, Any]], k: int, embedder: Any) -> np.ndarray:
    """The features of each row (``k`` samples), in :data:`FEATURE_NAMES` order."""
    out = []
    for r in rows:
        f = {**item_features(r, r["draft"], k, embedder), "self_check_p_no": r["p_no"]}
        out.append([f[n] for n in FEATURE_NAMES])
    return np.asarray(out, dtype=np.float64)


def _logistic(x: np.ndarray, y: np.ndarray) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(
        StandardScaler(), LogisticRegression(C=CV_C, class_weight="balanced", max_iter=2000)
    ).fit(x, y)


def _shipped_reading(
    shipped: Any, rows: list[dict[str, Any]], y: list[bool], embedder: Any
) -> tuple[Any, dict[str, Any]]:
    """The shipped HRA risk model on ``rows``: its AUROC, and that with the drafts it holds
    back at its threshold, as the summary records them."""
    k = shipped.artifact.samples
    p = [shipped.probability(item_features(r, r["draft"], k, embedder)) for r in rows]
    held = [pi >= shipped.threshold for pi in p]
    a = auroc_with_ci(p, y)
    return a, {
        "auroc": a.model_dump(),
        "caught": sum(h and b for h, b in zip(held, y, strict=True)),
        "held_good": sum(h and not b for h, b in zip(held, y, strict=True)),
    }


def report() -> None:
    rows = read_items(OUT)
    embedder = default_embedder()
    shipped = load_risk_model()
    lines = [
        "# HRA's features on each generator's own first drafts",
        "",
        f"Generated {datetime.now(UTC).date()} by `python scripts/hra_own_drafts.py --report` "
        "from `hra_own_drafts.jsonl.gz` (collected by `python scripts/hra_own_drafts.py "
        "--collect --model MODEL --part PART`; see the script's docstring). A draft is *bad* "
        "when it was labelled wrong or degenerate by hand before any reading here. Each draft "
        "is read by the model that wrote it. AUROC is for a bad draft; a value below 0.5 ranks "
        "good drafts as riskier and is reported as measured. 95% intervals: percentile "
        "bootstrap over drafts, 2000 resamples, seeded.",
        "",
        "Two parts. *dev*: the 65 first drafts of docs/results/generators.md "
        "(`generator_drafts.jsonl`, labels `generator_labels.jsonl`, judge scores "
        "`generator_judged.jsonl`). *held out*: first drafts of 40 general health questions "
        "written afterwards (dataset `general-questions-heldout`, "
        "`generator_drafts_heldout.jsonl`), labelled by hand before any reading "
        "(`generator_labels_heldout.jsonl`) and judged as the dev drafts were "
        "(`generator_judged_heldout.jsonl`). The rule fixed before the held-out part was read: "
        "per generator, the candidate with the highest dev AUROC wins (each feature alone, or "
        "the logistic regression by its cross-validated AUROC), and only it is the held-out "
        "headline; the other held-out figures are shown after it.",
        "",
    ]
    summary: dict[str, Any] = {}
    for model in sorted({r["model"] for r in rows}):
        dev = [r for r in rows if r["model"] == model and r.get("part", "dev") == "dev"]
        held = [r for r in rows if r["model"] == model and r.get("part") == "heldout"]
        y = [bool(r["bad"]) for r in dev]
        n_samples = len(dev[0]["samples"])
        x_by_k = {k: _features(dev, k, embedder) for k in sorted({2, n_samples})}
        lines += [
            f"## Drafts by {model}",
            "",
            f"Dev: {len(dev)} drafts, {sum(y)} bad. Median reading time per draft "
            f"{float(np.median([r['seconds'] for r in dev])):.1f} s "
            f"({n_samples} samples, token scoring and the self-check).",
            "",
            f"| feature, dev | AUROC, 2 samples (the gate's) | AUROC, {n_samples} samples |",
            "|---|---|---|",
        ]
        per_feature: dict[str, Any] = {}
        dev_auroc: dict[str, float] = {}
        for j, name in enumerate(FEATURE_NAMES):
            by_k = {k: auroc_with_ci(x[:, j].tolist(), y) for k, x in x_by_k.items()}
            per_feature[name] = {str(k): a.model_dump() for k, a in by_k.items()}
            dev_auroc[name] = by_k[n_samples].value or 0.0
            lines.append(f"| {name} | {by_k[2].shown()} | {by_k[n_samples].shown()} |")
        model_summary: dict[str, Any] = {
            "dev": {"drafts": len(dev), "bad": sum(y), "features": per_feature}
        }
        applies = shipped.artifact.provenance.get("model_sha256") == dev[0]["model_sha256"]
        if applies:
            a, model_summary["dev"]["shipped_model"] = _shipped_reading(shipped, dev, y, embedder)
            caught = model_summary["dev"]["shipped_model"]["caught"]
            kept = model_summary["dev"]["shipped_model"]["held_good"]
            lines += [
                "",
                f"The shipped HRA risk model ({shipped.label}), fitted on HaluEval answers read "
                f"by this model and never on these drafts: **AUROC {a.shown()}**; at its "
                f"threshold {shipped.threshold:.3f} it holds back {caught} of {sum(y)} bad "
                f"drafts and {kept} of {len(y) - sum(y)} good ones.",
            ]
        x = x_by_k[n_samples]
        mean, lo, hi = _cross_validated(x, np.asarray(y))
        model_summary["dev"]["cross_validated"] = {"mean": mean, "low": lo, "high": hi}
        dev_auroc[LOGISTIC] = mean
        chosen = max(dev_auroc, key=lambda c: dev_auroc[c])
        model_summary["chosen"] = chosen
        lines += [
            "",
            f"Logistic regression over all {len(FEATURE_NAMES)} features ({n_samples} "
            f"samples), balanced, C = {CV_C} fixed before fitting, {FOLDS}-fold stratified "
            f"cross-validation on the dev drafts repeated over {CV_REPEATS} seeds: out-of-fold "
            f"AUROC {mean:.3f} (seed spread {lo:.2f}-{hi:.2f}).",
            "",
            f"Chosen on dev: **{chosen}** (dev AUROC {dev_auroc[chosen]:.3f}).",
            "",
        ]
        p_dev = np.asarray([r["p_no"] for r in dev])
        cut = balanced_threshold(p_dev, np.asarray(y))
        flagged = p_dev >= cut
        model_summary["self_check_threshold"] = cut
        model_summary["dev"]["self_check_at_threshold"] = {
            "caught": int(flagged[np.asarray(y)].sum()),
            "held_good": int(flagged[~np.asarray(y)].sum()),
        }
        lines += [
            f"The `self_check` judge's threshold for this generator, the P(no) cut with the best "
            f"balanced accuracy on dev: **{cut:.4f}**; on dev it holds back "
            f"{int(flagged[np.asarray(y)].sum())} of {sum(y)} bad drafts and "
            f"{int(flagged[~np.asarray(y)].sum())} of {len(y) - sum(y)} good ones.",
            "",
        ]
        if held:
            yh = [bool(r["bad"]) for r in held]
            xh = _features(held, n_samples, embedder)
            if chosen == LOGISTIC:
                score = _logistic(x, np.asarray(y)).decision_function(xh).tolist()
            else:
                score = xh[:, FEATURE_NAMES.index(chosen)].tolist()
            headline = auroc_with_ci(score, yh)
            model_summary["heldout"] = {
                "drafts": len(held),
                "bad": sum(yh),
                "chosen_auroc": headline.model_dump(),
                "features": {
                    n: auroc_with_ci(xh[:, j].tolist(), yh).model_dump()
                    for j, n in enumerate(FEATURE_NAMES)
                },
            }
            p_held = np.asarray([r["p_no"] for r in held])
            caught = int((p_held >= cut)[np.asarray(yh)].sum())
            kept = int((p_held >= cut)[~np.asarray(yh)].sum())
            model_summary["heldout"]["self_check_at_threshold"] = {
                "caught": caught,
                "held_good": kept,
            }
            lines += [
                f"Held out: {len(held)} drafts, {sum(yh)} bad. **{chosen}: AUROC "
                f"{headline.shown()}.** The self-check at the dev threshold {cut:.4f} holds back "
                f"{caught} of {sum(yh)} bad drafts and {kept} of {len(yh) - sum(yh)} good ones.",
                "",
                "Read after that, for the record:",
                "",
                "| feature, held out | AUROC |",
                "|---|---|",
            ]
            for j, name in enumerate(FEATURE_NAMES):
                lines.append(f"| {name} | {auroc_with_ci(xh[:, j].tolist(), yh).shown()} |")
            if chosen != LOGISTIC:
                fitted = _logistic(x, np.asarray(y)).decision_function(xh).tolist()
                a = auroc_with_ci(fitted, yh)
                model_summary["heldout"]["logistic_auroc"] = a.model_dump()
                lines.append(f"| {LOGISTIC} (fitted on dev) | {a.shown()} |")
            if applies:
                a, model_summary["heldout"]["shipped_model"] = _shipped_reading(
                    shipped, held, yh, embedder
                )
                lines.append(f"| shipped HRA risk model | {a.shown()} |")
            lines.append("")
        summary[model] = model_summary
    (RESULTS / "hra_own_drafts.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (RESULTS / "hra_own_drafts.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\n".join(lines))


#: HaluEval 2.0's biomedical answers (written by another model, every fact labelled by its
#: annotators), read only to see whether the reading carries over; never chosen on.
HALUEVAL_PART = "halueval"


def halueval_answers(data_dir: Path, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` labelled answers in HRA's seeded order, shaped as labelled drafts (a
    draft is bad when at least half its labelled facts are false, as for HRA's risk model)."""
    return [
        {
            "key": item.id,
            "part": HALUEVAL_PART,
            "id": item.id,
            "question": item.question,
            "draft": item.answer,
            "bad": item.wrong,
            "label_reason": f"{item.false_share:.2f} of {item.facts} labelled facts false",
        }
        for item in halueval_items(data_dir)[:limit]
    ]


def collect_statements(model_spec: str, part: str, limit: int) -> None:
    """Each labelled draft of ``part`` read twice: the whole-answer self-check and one reading
    per statement (:func:`medgate.careguard.self_check.read_statements`), each draft from a
    model that remembers no earlier prompt. Own drafts are read by the model that wrote them;
    the HaluEval part by ``model_spec``, its first ``limit`` answers."""
    cfg = load_config()
    pool = ModelPool(cfg)
    model = pool.white_box(model_spec, role="generator")
    out = statements_file(part)
    done = {r["key"] for r in read_items(out)} if out.is_file() else set()
    if part == HALUEVAL_PART:
        items = halueval_answers(cfg.data_dir, limit)
    else:
        items = labelled_drafts(model_spec, part)
    if not items:
        raise SystemExit(f"no labelled draft of {model_spec} in part {part}: label them first")
    for n, item in enumerate(items, 1):
        if item["key"] in done:
            continue
        pool.forget_prompts()
        t0 = time.perf_counter()
        p_answer, mass, _ = read_self_check(model, item["question"], item["draft"])
        t1 = time.perf_counter()
        statements = read_statements(model, item["question"], item["draft"])
        t2 = time.perf_counter()
        row = {
            **item,
            "model": model.name,
            "model_sha256": model.fingerprint,
            "p_answer": round(p_answer, 6),
            "label_mass": round(mass, 6),
            "statements": [[s.statement, round(s.p_error, 6)] for s in statements],
            "seconds_answer": round(t1 - t0, 3),
            "seconds_statements": round(t2 - t1, 3),
        }
        if part == HALUEVAL_PART:
            # HaluEval's question, answer and sentences stay in the data directory: the row
            # keeps the id and one reading per sentence, in order.
            row = {k: v for k, v in row.items() if k not in ("question", "draft")}
            row["statements"] = [["", p] for _, p in row["statements"]]
        append_item(out, row)
        print(
            f"{n}/{len(items)} {part} {item['id']} {len(statements)} statements "
            f"{row['seconds_statements']} s",
            flush=True,
        )


#: The self-check scores compared, fixed before any statement was read. A draft with no
#: statement (none had a word) scores its whole-answer reading.
STATEMENT_SCORES: dict[str, Callable[[dict[str, Any]], float]] = {
    "answer": lambda r: r["p_answer"],
    "statement_max": lambda r: max((p for _, p in r["statements"]), default=r["p_answer"]),
    "statement_mean": lambda r: (
        float(np.mean([p for _, p in r["statements"]])) if r["statements"] else r["p_answer"]
    ),
    "max(answer, statement_max)": lambda r: max([r["p_answer"], *(p for _, p in r["statements"])]),
}
DEV_PARTS = ("dev", "heldout")
TEST_PART = "heldout3"


def _statement_aurocs(rows: list[dict[str, Any]]) -> tuple[np.ndarray, dict[str, Any]]:
    """Each row's bad label, and every score's AUROC for a bad row over ``rows``."""
    y = np.asarray([bool(r["bad"]) for r in rows])
    return y, {
        n: auroc_with_ci([f(r) for r in rows], y.tolist()) for n, f in STATEMENT_SCORES.items()
    }


def _held_back(rows: list[dict[str, Any]], score: str, cut: float) -> np.ndarray:
    """Which rows ``score`` holds back at ``cut``."""
    return np.asarray([STATEMENT_SCORES[score](r) >= cut for r in rows], dtype=bool)


def report_statements() -> None:
    rows = [
        r
        for part in PARTS
        if statements_file(part).is_file()
        for r in read_items(statements_file(part))
    ]
    halueval = (
        read_items(statements_file(HALUEVAL_PART))
        if statements_file(HALUEVAL_PART).is_file()
        else []
    )
    dev = [r for r in rows if r["part"] in DEV_PARTS]
    test = [r for r in rows if r["part"] == TEST_PART]
    y, dev_auroc = _statement_aurocs(dev)
    chosen = max(STATEMENT_SCORES, key=lambda c: dev_auroc[c].value or 0.0)
    cut = balanced_threshold(np.asarray([STATEMENT_SCORES[chosen](r) for r in dev]), y)
    held_dev = _held_back(dev, chosen, cut)
    model = dev[0]["model"]
    lines = [
        "# The generator's self-check, whole answer against statement by statement",
        "",
        f"Generated {datetime.now(UTC).date()} by `python scripts/hra_own_drafts.py "
        "--report-statements` from `self_check_statements_PART.jsonl.gz` (collected by `python "
        "scripts/hra_own_drafts.py --collect-statements --part PART`). Model: "
        f"{model} (sha256 `{dev[0]['model_sha256'][:16]}...`), reading its own greedy first "
        "drafts of general health questions, each from a model that remembers no earlier "
        'prompt. *answer*: P(no) to "is every statement in the answer medically correct" '
        "(the `self_check` judge's reading); *statement*: P(no) to \"is this statement, taken "
        'from an answer to the question, medically correct", asked once per sentence of the '
        "draft (list items count as sentences). A draft is *bad* when it was labelled wrong or "
        "degenerate by hand before any reading of it. AUROC is for a bad draft, with 95% "
        "percentile-bootstrap intervals (2000 resamples, seeded).",
        "",
        "The rule fixed before any statement was read: the score with the highest AUROC on the "
        "dev drafts wins, its threshold is the cut with the best balanced accuracy on them, "
        "and only it is the test headline; the other test figures are read after it.",
        "",
        f"- dev: the first drafts of `generator_drafts.jsonl` and "
        f"`generator_drafts_heldout.jsonl`, {len(dev)} drafts, {int(y.sum())} bad;",
        f"- test: the first drafts of `general-questions-heldout-3` "
        f"(`generator_drafts_heldout_3.jsonl`, labels `generator_labels_heldout_3.jsonl`, "
        f"written and labelled before any reading), {len(test)} drafts, "
        f"{sum(bool(r['bad']) for r in test)} bad.",
        "",
        "| score | dev AUROC |",
        "|---|---|",
        *(f"| {name} | {a.shown()} |" for name, a in dev_auroc.items()),
        "",
        f"Chosen on dev: **{chosen}**, threshold **{cut:.4f}**: on dev it holds back "
        f"{int(held_dev[y].sum())} of {int(y.sum())} bad drafts and "
        f"{int(held_dev[~y].sum())} of {int((~y).sum())} good ones.",
        "",
    ]
    summary: dict[str, Any] = {
        "model": model,
        "model_sha256": dev[0]["model_sha256"],
        "dev": {
            "drafts": len(dev),
            "bad": int(y.sum()),
            "auroc": {n: a.model_dump() for n, a in dev_auroc.items()},
        },
        "chosen": chosen,
        "threshold": cut,
    }
    p_dev = np.asarray([STATEMENT_SCORES[chosen](r) for r in dev])
    gate_cut = false_alarm_threshold(p_dev, y, GATE_FALSE_ALARMS)
    gate_dev = _held_back(dev, chosen, gate_cut)
    summary["gate_threshold"] = gate_cut
    summary["dev"]["at_gate_threshold"] = {
        "caught": int(gate_dev[y].sum()),
        "held_good": int(gate_dev[~y].sum()),
    }
    gate_note = (
        f"The balanced-accuracy cut holds back about a third of right drafts, too many for a "
        f"gate that must keep answering, so the `self_check` judge's default cut is the lowest "
        f"that holds back at most {GATE_FALSE_ALARMS:.0%} of the right dev drafts: "
        f"**{gate_cut:.4f}** (dev: {int(gate_dev[y].sum())} of {int(y.sum())} bad drafts and "
        f"{int(gate_dev[~y].sum())} of {int((~y).sum())} good ones held back)."
    )
    if test:
        yt, others = _statement_aurocs(test)
        gate_test = _held_back(test, chosen, gate_cut)
        gate_note += (
            f" On test: {int(gate_test[yt].sum())} of {int(yt.sum())} bad and "
            f"{int(gate_test[~yt].sum())} of {int((~yt).sum())} good."
        )
        summary["gate_test"] = {
            "caught": int(gate_test[yt].sum()),
            "held_good": int(gate_test[~yt].sum()),
        }
        headline = others[chosen]
        held = _held_back(test, chosen, cut)
        summary["test"] = {
            "drafts": len(test),
            "bad": int(yt.sum()),
            "chosen_auroc": headline.model_dump(),
            "caught": int(held[yt].sum()),
            "held_good": int(held[~yt].sum()),
            "auroc": {n: a.model_dump() for n, a in others.items()},
        }
        lines += [
            f"Test: **{chosen}: AUROC {headline.shown()}**; at the dev threshold it holds back "
            f"{int(held[yt].sum())} of {int(yt.sum())} bad drafts and {int(held[~yt].sum())} "
            f"of {int((~yt).sum())} good ones.",
            "",
            "Read after that, for the record:",
            "",
            "| score | test AUROC |",
            "|---|---|",
            *(f"| {name} | {a.shown()} |" for name, a in others.items()),
            "",
        ]
    if halueval:
        yh, by_score = _statement_aurocs(halueval)
        held_h = _held_back(halueval, chosen, cut)
        summary["halueval"] = {
            "answers": len(halueval),
            "bad": int(yh.sum()),
            "auroc": {n: a.model_dump() for n, a in by_score.items()},
            "caught": int(held_h[yh].sum()),
            "held_good": int(held_h[~yh].sum()),
        }
        lines += [
            "## Answers another model wrote (HaluEval 2.0, biomedical)",
            "",
            f"The first {len(halueval)} labelled answers in HRA's seeded order "
            "(`--collect-statements --part halueval`), read by the same generator; an answer is "
            "bad when at least half of its facts were labelled false by HaluEval's annotators "
            f"({int(yh.sum())} of {len(halueval)}). Nothing was chosen here: this shows whether "
            "the reading carries over to longer, technical answers a model did not write "
            "itself.",
            "",
            "| score | AUROC |",
            "|---|---|",
            *(f"| {name} | {a.shown()} |" for name, a in by_score.items()),
            "",
            f"At the dev threshold, {chosen} holds back {int(held_h[yh].sum())} of "
            f"{int(yh.sum())} bad answers and {int(held_h[~yh].sum())} of "
            f"{int((~yh).sum())} others.",
            "",
        ]
    lines += ["## The judge's default cut", "", gate_note, ""]
    seconds = [r["seconds_statements"] for r in rows]
    answer_seconds = [r["seconds_answer"] for r in rows]
    counts = [len(r["statements"]) for r in rows]
    lines += [
        f"Cost per draft (all {len(rows)} drafts, one llama.cpp thread, medians): the "
        f"whole-answer reading {float(np.median(answer_seconds)):.2f} s, the statement "
        f"readings {float(np.median(seconds)):.2f} s ({float(np.median(counts)):.0f} "
        "statements; each statement's prompt shares the instructions and the question with "
        "the one before, which llama.cpp does not read again).",
        "",
    ]
    summary["seconds"] = {
        "answer_median": float(np.median(answer_seconds)),
        "statements_median": float(np.median(seconds)),
        "statements_per_draft_median": float(np.median(counts)),
    }
    (RESULTS / "self_check_statements.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (RESULTS / "self_check_statements.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collect", action="store_true")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--collect-statements", action="store_true")
    parser.add_argument("--report-statements", action="store_true")
    parser.add_argument("--model", default="embedded:qwen2.5-coder-1.5b")
    parser.add_argument("--samples", type=int, default=6)
    parser.add_argument("--part", choices=[*sorted(PARTS), HALUEVAL_PART], default="dev")
    parser.add_argument("--limit", type=int, default=60, help="HaluEval answers to read.")
    args = parser.parse_args()
    if args.collect:
        collect(args.model, args.samples, args.part)
    if args.report:
        report()
    if args.collect_statements:
        collect_statements(args.model, args.part, args.limit)
    if args.report_statements:
        report_statements()
    if not (args.collect or args.report or args.collect_statements or args.report_statements):
        parser.error("say --collect, --report, --collect-statements or --report-statements")


if __name__ == "__main__":
    main()
