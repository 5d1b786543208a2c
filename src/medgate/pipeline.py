"""One way to assemble a gate: ``build_gate`` builds the profile the configuration names.

A profile is a gate builder registered under the ``medgate.profiles`` entry-point group, the
same way for medgate's own profiles and for a plugin's (docs/extending.md). Which profile serves
which kind of question is in docs/architecture.md:

* ``route`` (the default): closed research questions to HRS, patient questions to CareGuard;
* ``hrs``: the HRS gate alone; ``careguard``: CareGuard alone;
* ``full``: every stage, with HRS's check of a patient's yes/no question
  (:mod:`medgate.gates.full`).

Models come from a :class:`~medgate.backends.pool.ModelPool`, so roles configured with the same
spec share one loaded model and a case's record can name the model behind each role. Every entry
point that decides cases (``ask``, ``care``, ``serve``, ``eval gate``) builds its gate here; the
HRS experiments record the HRS gate's trajectories for replay instead (:mod:`medgate.eval`).
"""

from __future__ import annotations

from typing import Protocol

from medgate.backends.pool import ModelPool
from medgate.careguard.build import build_careguard
from medgate.config import MedgateConfig
from medgate.events import Gate
from medgate.gates.deferred import DeferredGate
from medgate.gates.full import FullPipeline
from medgate.gates.routing import RoutingGate
from medgate.hrs.build import build_hrs_gate
from medgate.hrs.rarity import rarity_artifact_path
from medgate.plugins import Registry
from medgate.records import Case
from medgate.routing import choose_route

__all__ = [
    "PROFILES",
    "DeferredGate",
    "GateBuilder",
    "ModelPool",
    "RoutingGate",
    "build_full_pipeline",
    "build_gate",
    "build_hrs_gate",
    "build_routing_gate",
    "rarity_artifact_path",
]


class GateBuilder(Protocol):
    """What an entry point in ``medgate.profiles`` resolves to."""

    def __call__(self, config: MedgateConfig, pool: ModelPool) -> Gate: ...


PROFILES: Registry[GateBuilder] = Registry("medgate.profiles", "profile")
"""The gate profiles, by name."""


def build_routing_gate(
    config: MedgateConfig, pool: ModelPool, *, defer: bool = False
) -> RoutingGate:
    """Closed research questions to the HRS gate, patient questions to CareGuard (triage
    first); see :mod:`medgate.routing`. Both share the pool's models. With ``defer`` each route's
    gate is assembled when the first case reaches it (:class:`DeferredGate`)."""
    if defer:
        return RoutingGate(
            research=DeferredGate(lambda: build_hrs_gate(config, pool)),
            patient=DeferredGate(lambda: build_careguard(config, pool)),
        )
    return RoutingGate(research=build_hrs_gate(config, pool), patient=build_careguard(config, pool))


def build_full_pipeline(config: MedgateConfig, pool: ModelPool) -> FullPipeline:
    """Every stage: HRS, and CareGuard with a white-box generator (the HRS-style signals of each
    draft) and HRS's check of a patient's yes/no question."""
    return FullPipeline(
        hrs=build_hrs_gate(config, pool),
        careguard=build_careguard(config, pool, require_signals=True),
    )


def build_gate(
    config: MedgateConfig, pool: ModelPool | None = None, *, first_case: Case | None = None
) -> Gate:
    """The gate ``config.profile`` names, with its models loaded.

    ``first_case`` is for an entry point that decides one case (``ask``, ``care``): the
    ``route`` profile then assembles the route that case takes now and the other only if a case
    ever reaches it, so a research question does not load CareGuard's models. A configuration
    error in the route the case takes still stops the entry point before the case is decided.
    Other profiles, and entry points that decide many cases, assemble everything now.
    """
    builder = PROFILES.load(config.profile)
    pool = pool or ModelPool(config)
    if first_case is None or builder is not build_routing_gate:
        return builder(config, pool)
    gate = build_routing_gate(config, pool, defer=True)
    route = gate.gates[choose_route(first_case).route]
    if isinstance(route, DeferredGate):
        route.gate()
    return gate
