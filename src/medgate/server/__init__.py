"""medgate's HTTP service: the app factory, the streamed checks and the clinician queue."""

from medgate.server.app import create_app
from medgate.server.runner import GateOutcome, GateRunner, failed_closed

__all__ = ["GateOutcome", "GateRunner", "create_app", "failed_closed"]
