"""Assembling a CareGuard gate from configuration: every role is a configured model."""

from __future__ import annotations

from medgate.backends.base import WhiteBoxModel
from medgate.backends.pool import ModelPool
from medgate.careguard.evaluators import JUDGES, CareGuardJudge, Evaluators, SwitchedOff
from medgate.careguard.gate import CareGuardGate
from medgate.careguard.generator import Generator
from medgate.careguard.records import Evaluator
from medgate.careguard.request_safety import build_request_screen, reply_screen
from medgate.careguard.stance import StanceReader
from medgate.careguard.triage import Controller
from medgate.careguard.trimming import SentenceTrimmer
from medgate.claims import build_claims_checker
from medgate.config import MedgateConfig
from medgate.errors import ConfigError


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
        repeat_penalty=cg.repeat_penalty,
        # HRA's risk model reads the first of these samples, the opening check all of them.
        samples=cg.hra_risk.samples if cg.use_hra and cg.hra_risk.enabled else 0,
        opening_samples=cg.trim.opening_samples
        if isinstance(generator_model, WhiteBoxModel)
        else 0,
        opening_draw=cg.trim.opening_draw,
        sample_temperature=cg.hra_risk.sample_temperature,
        sample_max_tokens=cg.hra_risk.sample_max_tokens,
    )

    # The ablations switch medgate's own judges off; a plugin's judge is left out of the list.
    off: dict[str, bool] = {Evaluator.SRA: not cg.use_sra, Evaluator.HRA: not cg.use_hra}
    judges: list[CareGuardJudge | SwitchedOff] = [
        SwitchedOff(name) if off.get(name) else JUDGES.load(name)(config, pool)
        for name in cg.judges
    ]
    evaluators = Evaluators(judges, timeout_s=cg.evaluator_timeout_s)
    stance = None
    if cg.read_stance:
        # A black-box stance model gives no distribution: every stance is then not read, which
        # only ever withholds an endorsement.
        stance_model = pool.get(cg.spec("stance", generator_spec), role="stance")
        stance = StanceReader(
            stance_model if isinstance(stance_model, WhiteBoxModel) else None,
            config.hrs,
            min_yes=cg.stance_min_yes,
            min_no=cg.stance_min_no,
            max_entropy=cg.stance_max_entropy,
        )
    # The claims check runs with the configured record store and detector, so an invented
    # citation in a draft is unresolvable rather than support.
    # The request screen is built here so that a missing encoder or artifact is an error at
    # assembly, with the fix named, not a refusal of every request later.
    screen = build_request_screen(config, pool)
    trimmer = None
    if cg.trim.enabled is not False:
        if isinstance(generator_model, WhiteBoxModel):
            trimmer = SentenceTrimmer(
                generator_model,
                cg.trim.threshold,
                cg.trim.opening_threshold if cg.trim.opening_samples else None,
            )
        elif cg.trim.enabled:
            raise ConfigError(
                f"careguard.trim reads the generator's token probabilities; "
                f"{generator_model.name} gives none: unset careguard.trim.enabled or use a "
                "white-box generator"
            )
    return CareGuardGate(
        controller,
        generator,
        evaluators,
        cg,
        build_claims_checker(config),
        stance=stance,
        screen=screen,
        reply_screen=reply_screen(config) if screen is not None else None,
        trimmer=trimmer,
    )
