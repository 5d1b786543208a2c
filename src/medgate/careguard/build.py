"""Assembling a CareGuard gate from configuration: every role is a configured model."""

from __future__ import annotations

from medgate.backends.pool import ModelPool
from medgate.careguard.evaluators import Evaluators, Judge
from medgate.careguard.gate import CareGuardGate
from medgate.careguard.generator import Generator
from medgate.careguard.records import Evaluator
from medgate.careguard.triage import Controller
from medgate.claims import build_claims_checker
from medgate.config import MedgateConfig


def build_careguard(
    config: MedgateConfig, pool: ModelPool, *, require_signals: bool = False
) -> CareGuardGate:
    """The gate ``config.careguard`` describes; roles with the same spec share one model.

    ``require_signals`` insists on a white-box generator so that HRA always has the HRS-style
    signals of the answer (the ``full`` profile).
    """
    cg = config.careguard
    controller = None
    if cg.use_controller:
        model = (
            pool.get(cg.spec("controller", config.model), role="controller")
            if cg.model_triage
            else None
        )
        controller = Controller(
            model,
            max_tokens=cg.triage_max_tokens,
            seed=cg.seed,
            model_short_circuit=cg.model_short_circuit,
        )
    generator_spec = cg.spec("generator", config.model)
    generator_model = (
        pool.white_box(generator_spec, role="generator")
        if require_signals
        else pool.get(generator_spec, role="generator")
    )
    generator = Generator(
        generator_model,
        max_tokens=cg.answer_max_tokens,
        seed=cg.seed,
        refine_temperature=cg.refine_temperature,
    )

    def judge(kind: Evaluator, on: bool) -> Judge | None:
        if not on:
            return None
        model = pool.get(cg.spec(kind.value, config.model), role=kind.value)
        return Judge(kind, model, max_tokens=cg.judge_max_tokens, seed=cg.seed)

    evaluators = Evaluators(
        judge(Evaluator.SRA, cg.use_sra),
        judge(Evaluator.HRA, cg.use_hra),
        judge_weight=cg.judge_weight,
        timeout_s=cg.evaluator_timeout_s,
        hra_threshold=cg.hra_threshold,
    )
    # The claims check runs with the configured record store and detector, so an invented
    # citation in a draft is unresolvable rather than support.
    return CareGuardGate(controller, generator, evaluators, cg, build_claims_checker(config))


def build_full(config: MedgateConfig, pool: ModelPool) -> CareGuardGate:
    """CareGuard with the HRS-style signals of a white-box generator and the claim flags."""
    return build_careguard(config, pool, require_signals=True)
