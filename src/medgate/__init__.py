"""medgate: an inference-time safety gate for medical LLMs."""

from medgate.config import MedgateConfig, load_config
from medgate.errors import InputError, MedgateError, ModelError, PrerequisiteError
from medgate.records import Case, LabelSet, Status
from medgate.verdict import Trace, Verdict

__version__ = "0.1.0"

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
