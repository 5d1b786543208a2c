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
from medgate.gates.full import FullPipeline
from medgate.gates.routing import RoutingGate
from medgate.hrs.build import build_hrs_gate
from medgate.hrs.rarity import rarity_artifact_path
from medgate.plugins import Registry

__all__ = [
    "PROFILES",
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


def build_routing_gate(config: MedgateConfig, pool: ModelPool) -> RoutingGate:
    """Closed research questions to the HRS gate, patient questions to CareGuard (triage
    first); see :mod:`medgate.routing`. Both share the pool's models."""
    return RoutingGate(research=build_hrs_gate(config, pool), patient=build_careguard(config, pool))


def build_full_pipeline(config: MedgateConfig, pool: ModelPool) -> FullPipeline:
    """Every stage: HRS, and CareGuard with a white-box generator (the HRS-style signals of each
    draft) and HRS's check of a patient's yes/no question."""
    return FullPipeline(
        hrs=build_hrs_gate(config, pool),
        careguard=build_careguard(config, pool, require_signals=True),
    )


def build_gate(config: MedgateConfig, pool: ModelPool | None = None) -> Gate:
    """The gate ``config.profile`` names, with its models loaded."""
    return PROFILES.load(config.profile)(config, pool or ModelPool(config))
