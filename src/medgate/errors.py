"""Errors that tell the user what to do.

Every error medgate raises on purpose derives from :class:`MedgateError`. The CLI prints its
message on one line and exits non-zero; the HTTP layer maps :class:`InputError` to 4xx and the
rest to 5xx. A safety stage that catches one of these must fail closed (escalate or block).
"""

from __future__ import annotations


class MedgateError(Exception):
    """Base class for medgate's own errors."""


class InputError(MedgateError, ValueError):
    """The caller gave something medgate cannot accept (empty question, oversized context, ...)."""


class ConfigError(MedgateError):
    """The configuration is invalid or names something that does not exist."""


class PrerequisiteError(MedgateError):
    """An optional dependency or file is missing; the message names the command that fixes it."""


class RecordingError(MedgateError):
    """Some items of an evaluation run could not be recorded (every other item was stored);
    ``failed`` holds their ids. Running the command again retries only those."""

    def __init__(self, message: str, failed: list[str]) -> None:
        super().__init__(message)
        self.failed = failed


class ModelError(MedgateError):
    """A model call failed, timed out, or returned something unusable."""


class EmbeddingUnavailable(ModelError):
    """The model cannot embed text (a server without a usable embeddings endpoint)."""


class ContextOverflowError(ModelError):
    """A prompt is longer than the model's context window leaves room for."""

    def __init__(self, message: str, *, prompt_tokens: int, limit: int) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.limit = limit


class UnscriptedCallError(ModelError):
    """The fake backend was called with something its script does not cover."""
