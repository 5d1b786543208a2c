"""Model backends behind one protocol; see :mod:`medgate.backends.base`."""

from medgate.backends.base import (
    AnswerSlot,
    ChatMessage,
    ChatReply,
    Completion,
    DecodeParams,
    LanguageModel,
    WhiteBoxModel,
)
from medgate.backends.fake import FakeModel
from medgate.backends.registry import available_backends, create_model, split_spec

__all__ = [
    "AnswerSlot",
    "ChatMessage",
    "ChatReply",
    "Completion",
    "DecodeParams",
    "FakeModel",
    "LanguageModel",
    "WhiteBoxModel",
    "available_backends",
    "create_model",
    "split_spec",
]
