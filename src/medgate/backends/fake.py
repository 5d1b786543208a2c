"""A scripted model for unit tests of logic: every call must have been scripted.

It is never used for a result. An unscripted call raises :class:`UnscriptedCallError`, so a test
cannot pass by accident through a path it did not intend.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

from medgate.backends.base import ChatMessage, ChatReply, Completion, DecodeParams
from medgate.errors import UnscriptedCallError
from medgate.records import Usage

if TYPE_CHECKING:
    from medgate.config import MedgateConfig

T = TypeVar("T")
Reply: TypeAlias = T | BaseException | Callable[[Sequence[ChatMessage]], T]


@dataclass
class _Rule(Generic[T]):
    match: str
    replies: deque[Reply[T]]
    repeat: bool

    def take(self) -> Reply[T] | None:
        if not self.replies:
            return None
        if self.repeat and len(self.replies) == 1:
            return self.replies[0]
        return self.replies.popleft()


@dataclass
class _Script(Generic[T]):
    kind: str
    rules: list[_Rule[T]] = field(default_factory=list)

    def add(self, match: str, replies: Sequence[Reply[T]], repeat: bool) -> None:
        self.rules.append(_Rule(match, deque(replies), repeat))

    def answer(self, messages: Sequence[ChatMessage]) -> T:
        text = messages[-1].content if messages else ""
        for rule in self.rules:
            if rule.match in text:
                reply = rule.take()
                if reply is None:
                    continue
                if isinstance(reply, BaseException):
                    raise reply
                if callable(reply):
                    return reply(messages)
                return reply
        raise UnscriptedCallError(f"fake model: unscripted {self.kind} call for {text[:80]!r}")


class FakeModel:
    """Scripted :class:`~medgate.backends.base.WhiteBoxModel` for tests.

    Rules match when their ``match`` string occurs in the last message; the first rule with a
    reply left wins. A reply may be a value, an exception to raise, or a function of the
    messages. With ``repeat=True`` the last reply is given again and again.
    """

    def __init__(self, name: str = "fake") -> None:
        self._name = name
        self._chat: _Script[str] = _Script("chat")
        self._complete: _Script[Completion] = _Script("complete")
        self._embed: dict[str, list[float]] = {}
        self.calls: list[tuple[str, str]] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def fingerprint(self) -> str:
        return f"fake:{self._name}"

    def script_chat(self, match: str, *replies: Reply[str], repeat: bool = False) -> FakeModel:
        self._chat.add(match, replies, repeat)
        return self

    def script_completion(
        self, match: str, *replies: Reply[Completion], repeat: bool = False
    ) -> FakeModel:
        self._complete.add(match, replies, repeat)
        return self

    def script_embedding(self, text: str, vector: Sequence[float]) -> FakeModel:
        self._embed[text] = list(vector)
        return self

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
        json_schema: Mapping[str, Any] | None = None,
        role: str = "agent",
    ) -> ChatReply:
        self.calls.append(("chat", messages[-1].content if messages else ""))
        text = self._chat.answer(messages)
        usage = Usage(
            role=role,
            model=self._name,
            prompt_tokens=sum(len(m.content.split()) for m in messages),
            completion_tokens=len(text.split()),
        )
        return ChatReply(text=text, usage=usage)

    def complete(self, messages: Sequence[ChatMessage], params: DecodeParams) -> Completion:
        self.calls.append(("complete", messages[-1].content if messages else ""))
        return self._complete.answer(messages)

    def complete_batch(
        self, messages: Sequence[ChatMessage], params: Sequence[DecodeParams]
    ) -> list[Completion]:
        return [self.complete(messages, p) for p in params]

    def embed(self, text: str) -> list[float]:
        self.calls.append(("embed", text))
        if text not in self._embed:
            raise UnscriptedCallError(f"fake model: unscripted embedding for {text[:80]!r}")
        return self._embed[text]


class FakeBackend:
    """Entry point for the ``fake`` spec: an empty script, so every call fails (closed)."""

    @classmethod
    def from_spec(cls, target: str, config: MedgateConfig) -> FakeModel:
        return FakeModel(name=f"fake:{target}" if target else "fake")
