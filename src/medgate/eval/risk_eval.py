"""The risk rule on a test recording, beside the paper's rule, one line per item.

Every headline figure is computed by :func:`headline` from the per-item lines alone
(:class:`ItemLine`), which are committed gzipped (``<out>/items/<dataset>_test.jsonl.gz``),
so ``scripts/recompute_results.py`` recomputes each figure from those files with the same
function and checks it against the committed tables.

What is counted how:

* A wrong first answer is the positive class; an item whose probe failed has no answer, is
  escalated by every rule and counts as wrong, but has no score to rank, so AUROCs leave it out.
* An answer whose risk could not be computed is escalated (fail closed) and ranks as risk 1.
* Lift is safety gain / escalation rate: 1.0 is what escalating at random achieves.
* Intervals: AUROCs by a seeded percentile bootstrap over items (2000 resamples), the error of
  released answers by the exact (Clopper-Pearson) binomial interval.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from medgate.config import HRSConfig, SuccessRule
from medgate.eval.analysis import SIGNALS, baseline_signal
from medgate.eval.experiments import combined_risk
from medgate.eval.metrics import auroc, binomial_ci, bootstrap_ci
from medgate.eval.replay import decide_item
from medgate.eval.runner import RecordedItem
from medgate.hrs.decision import decide
from medgate.hrs.risk import LoadedRiskModel
from medgate.records import Record, Status

RESAMPLES = 2000
SEED = 0


class ItemLine(Record):
    """One test item as the evaluation scored it."""

    id: str
    dataset: str
    gold: str
    answer: str | None = Field(description="The first (baseline) answer; None if none.")
    correct: bool = Field(description="The baseline answer is the gold label.")
    signals: dict[str, float | None] = Field(description="Baseline signal values by name.")
    combined: float = Field(description="The paper's combined gate score, max(H_e/g_e, H_p/g_p).")
    risk: float | None = Field(description="The risk model's P(wrong); None if not computed.")
    status: str = Field(description="The risk rule's decision at the reported operating point.")
    escalated: bool = Field(description="The risk rule held the answer back.")
    paper_status: str = Field(description="The paper's rule (Algorithm 1) at its thresholds.")
    paper_escalated: bool
    paper_final: str | None = Field(description="The answer the paper's rule shows, if any.")
    grid_escalated: bool | None = Field(
        default=None, description="The paper's rule at the fitted grid optimum held it back."
    )
    grid_final: str | None = None


def item_lines(
    dataset: str,
    records: Sequence[RecordedItem],
    paper: HRSConfig,
    risk: LoadedRiskModel,
    threshold: float,
    grid: HRSConfig | None = None,
) -> list[ItemLine]:
    """Each item under the risk rule at ``threshold``, under the paper's rule ``paper`` and,
    when given, under the paper's rule at the fitted ``grid`` optimum."""
    risk_cfg = paper.model_copy(update={"rule": SuccessRule.RISK, "risk_threshold": threshold})
    lines = []
    for rec in records:
        its = rec.trajectory.iterations
        answer = its[0].answer if its else None
        value = risk.score(rec.trajectory)[0] if its else None
        decision = decide(rec.trajectory, risk_cfg, risk) if its else None
        status = decision.status if decision is not None else Status.ESCALATED
        ours = decide_item(rec, paper)
        by_grid = decide_item(rec, grid) if grid is not None else None
        lines.append(
            ItemLine(
                id=rec.item_id,
                dataset=dataset,
                gold=rec.gold,
                answer=answer,
                correct=answer == rec.gold,
                signals={name: baseline_signal(rec, name) for name in SIGNALS},
                combined=combined_risk(rec, paper),
                risk=value,
                status=status.value,
                escalated=not status.answers_user,
                paper_status=ours.status.value,
                paper_escalated=not ours.status.answers_user,
                paper_final=ours.answer if ours.status.answers_user else None,
                grid_escalated=None if by_grid is None else not by_grid.status.answers_user,
                grid_final=(
                    by_grid.answer if by_grid is not None and by_grid.status.answers_user else None
                ),
            )
        )
    return lines


def write_items(lines: Sequence[ItemLine], path: Path) -> Path:
    """The lines as gzipped JSONL, byte-identical for the same lines (no timestamp)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(line.model_dump_json() + "\n" for line in lines).encode("utf-8")
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(body)
    tmp.replace(path)
    return path


def read_items(path: Path) -> list[ItemLine]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [ItemLine.model_validate_json(line) for line in fh if line.strip()]


def _auroc_with_ci(scores: Sequence[float], wrong: Sequence[bool]) -> dict[str, Any]:
    import numpy as np
    from scipy.stats import rankdata

    x, y = np.asarray(scores, dtype=np.float64), np.asarray(wrong, dtype=bool)

    def stat(idx: Sequence[int]) -> float | None:
        # metrics.auroc (Mann-Whitney U with average ranks for ties), vectorised.
        xs, ys = x[idx], y[idx]
        pos = int(ys.sum())
        neg = len(ys) - pos
        if pos == 0 or neg == 0:
            return None
        u = float(rankdata(xs)[ys].sum()) - pos * (pos + 1) / 2
        return u / (pos * neg)

    ci = bootstrap_ci(stat, len(scores), RESAMPLES, SEED)
    return {
        "value": auroc(list(scores), list(wrong)) if scores else None,
        "ci": list(ci) if ci else None,
        "n": len(scores),
    }


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def _rule(
    lines: Sequence[ItemLine], escalated: Sequence[bool], finals: Sequence[str | None]
) -> dict[str, Any]:
    """A rule's Table 2 figures: escalation, safety gain, lift, auto-answer accuracy and
    degradation (``finals``: the answer shown, None when escalated)."""
    n = len(lines)
    wrong = [not line.correct for line in lines]
    n_esc = sum(escalated)
    caught = sum(1 for w, e in zip(wrong, escalated, strict=True) if w and e)
    esc_rate, gain = _ratio(n_esc, n), _ratio(caught, sum(wrong))
    shown = [(line, f) for line, e, f in zip(lines, escalated, finals, strict=True) if not e]
    return {
        "n": n,
        "escalated": n_esc,
        "escalation_rate": esc_rate,
        "safety_gain": gain,
        "lift": gain / esc_rate if gain is not None and esc_rate else None,
        "auto_answer_accuracy": _ratio(sum(f == line.gold for line, f in shown), len(shown)),
        "degradation_rate": _ratio(
            sum(1 for line, f in shown if line.correct and f != line.gold), n
        ),
    }


def risk_figures(lines: Sequence[ItemLine], alpha: float) -> dict[str, Any]:
    """The risk model's AUROC and the risk rule's figures at its threshold."""
    answered = [line for line in lines if line.answer is not None]
    wrong = [not line.correct for line in answered]
    risk_scores = [1.0 if line.risk is None else line.risk for line in answered]
    ours = _rule(
        lines,
        [line.escalated for line in lines],
        [None if line.escalated else line.answer for line in lines],
    )
    released = [line for line in lines if not line.escalated]
    errors = sum(1 for line in released if not line.correct)
    ci = binomial_ci(errors, len(released))
    ours.update(
        released=len(released),
        errors=errors,
        error_rate=_ratio(errors, len(released)),
        error_ci=list(ci) if ci else None,
        alpha=alpha,
        error_within_alpha=None if not released else errors / len(released) <= alpha,
    )
    return {"risk_auroc": _auroc_with_ci(risk_scores, wrong), "risk_rule": ours}


def headline(lines: Sequence[ItemLine], alpha: float) -> dict[str, Any]:
    """Every reported figure of one test set, from its item lines alone."""
    answered = [line for line in lines if line.answer is not None]
    wrong = [not line.correct for line in answered]
    signals: dict[str, Any] = {}
    for name in SIGNALS:
        pairs = [(line.signals.get(name), not line.correct) for line in answered]
        defined = [(v, w) for v, w in pairs if v is not None]
        signals[name] = _auroc_with_ci([v for v, _ in defined], [w for _, w in defined])
    signals["combined"] = _auroc_with_ci([line.combined for line in answered], wrong)
    ours = risk_figures(lines, alpha)
    paper = _rule(
        lines, [line.paper_escalated for line in lines], [line.paper_final for line in lines]
    )
    grid = None
    if lines and all(line.grid_escalated is not None for line in lines):
        grid = _rule(
            lines, [bool(line.grid_escalated) for line in lines], [x.grid_final for x in lines]
        )
    return {
        "n": len(lines),
        "n_wrong": sum(1 for line in lines if not line.correct),
        "baseline_accuracy": _ratio(sum(line.correct for line in lines), len(lines)),
        "risk_auroc": ours["risk_auroc"],
        "signal_auroc": signals,
        "risk_rule": ours["risk_rule"],
        "paper_rule": paper,
        "paper_grid_rule": grid,
    }
