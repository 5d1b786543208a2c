"""Evaluation of the HRS gate on labelled datasets: the paper's experiments and more.

Recording (model calls, cached and resumable) is separate from scoring (pure replays of the
recorded trajectories), so a threshold sweep costs no model calls.
"""

from medgate.eval.data import DATASETS, EvalItem, dataset_split, load_dataset, load_jsonl
from medgate.eval.metrics import (
    GateMetrics,
    ItemOutcome,
    accuracy_at_coverage,
    auroc,
    gate_metrics,
    risk_coverage,
)

__all__ = [
    "DATASETS",
    "EvalItem",
    "GateMetrics",
    "ItemOutcome",
    "accuracy_at_coverage",
    "auroc",
    "dataset_split",
    "gate_metrics",
    "load_dataset",
    "load_jsonl",
    "risk_coverage",
]
