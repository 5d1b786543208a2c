"""Hallucination Risk Scoring: five white-box signals, a decision layer and a knowledge loop.

The room's records and parts are here; the gate that uses them is :class:`medgate.hrs.gate.HRSGate`,
which builds a :class:`medgate.verdict.Verdict` from these records and so sits above them.
"""

from medgate.hrs.decision import (
    Decision,
    HRSReport,
    Iteration,
    Outcome,
    StopReason,
    Trajectory,
    decide,
)
from medgate.hrs.knowledge import Fact
from medgate.hrs.orchestrator import (
    Action,
    ModelOrchestrator,
    Orchestrator,
    OrchestratorStep,
    RetrievalOrchestrator,
)
from medgate.hrs.rarity import RarityCentroid, fit_centroid, load_centroid, save_centroid
from medgate.hrs.retrieval import BM25Index, Document
from medgate.hrs.signals import SIGNALS, ModelRun, Need, Signal, SignalValue

__all__ = [
    "SIGNALS",
    "Action",
    "BM25Index",
    "Decision",
    "Document",
    "Fact",
    "HRSReport",
    "Iteration",
    "ModelOrchestrator",
    "ModelRun",
    "Need",
    "Orchestrator",
    "OrchestratorStep",
    "Outcome",
    "RarityCentroid",
    "RetrievalOrchestrator",
    "Signal",
    "SignalValue",
    "StopReason",
    "Trajectory",
    "decide",
    "fit_centroid",
    "load_centroid",
    "save_centroid",
]
