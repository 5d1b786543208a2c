"""CareGuard: triage with screening, safety-conditioned generation, parallel SRA/HRA
evaluation, bounded refinement and safe refusal, for open patient-facing questions.

    from medgate.config import load_config
    from medgate.pipeline import build_gate
    gate = build_gate(load_config(profile="careguard"))
    verdict = gate.check(Case(question="Can I take ibuprofen while pregnant?"))

The room's records and parts are here; the gate is :class:`medgate.careguard.gate.CareGuardGate`
(assembled by :mod:`medgate.careguard.build`), which sits above them and above
:mod:`medgate.verdict`.
"""

from medgate.careguard.categories import Evidence, RiskCategory, match_rules
from medgate.careguard.evaluators import (
    JUDGES,
    CareGuardJudge,
    Evaluators,
    HallucinationJudge,
    JudgeReply,
    SafetyJudge,
    SwitchedOff,
)
from medgate.careguard.generator import Generator
from medgate.careguard.records import (
    Assessment,
    CareGuardReport,
    Draft,
    Evaluator,
    Outcome,
    RequestSafety,
    Round,
    Triage,
)
from medgate.careguard.screening import ContextField, Option, ScreeningQuestion
from medgate.careguard.triage import Controller

__all__ = [
    "JUDGES",
    "Assessment",
    "CareGuardJudge",
    "CareGuardReport",
    "ContextField",
    "Controller",
    "Draft",
    "Evaluator",
    "Evaluators",
    "Evidence",
    "Generator",
    "HallucinationJudge",
    "JudgeReply",
    "Option",
    "Outcome",
    "RequestSafety",
    "RiskCategory",
    "Round",
    "SafetyJudge",
    "ScreeningQuestion",
    "SwitchedOff",
    "Triage",
    "match_rules",
]
