"""medgate: an inference-time safety gate for medical LLMs."""

from importlib.metadata import PackageNotFoundError, version

from medgate.config import MedgateConfig, load_config
from medgate.errors import InputError, MedgateError, ModelError, PrerequisiteError
from medgate.records import Case, LabelSet, Status, Trace, Verdict

try:
    # pyproject.toml is the one place the version is written.
    __version__ = version("medgate")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

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
