"""medgate: an inference-time safety gate for medical LLMs."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from medgate.config import MedgateConfig, load_config
from medgate.errors import InputError, MedgateError, ModelError, PrerequisiteError
from medgate.records import Case, LabelSet, Status

if TYPE_CHECKING:
    from medgate.verdict import Trace, Verdict

try:
    # pyproject.toml is the one place the version is written.
    __version__ = version("medgate")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str) -> Any:
    # The verdict's module loads every stage's records (the claims rules with their number
    # words among them): `import medgate` and `medgate --help` should not pay for that.
    if name in ("Trace", "Verdict"):
        from medgate import verdict

        return getattr(verdict, name)
    raise AttributeError(f"module 'medgate' has no attribute {name!r}")


__all__ = [
    "Case",
    "InputError",
    "LabelSet",
    "MedgateConfig",
    "MedgateError",
    "ModelError",
    "PrerequisiteError",
    "Status",
    "Trace",
    "Verdict",
    "__version__",
    "load_config",
]
