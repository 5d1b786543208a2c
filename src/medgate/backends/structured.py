"""Structured replies: ask a model for JSON of a pydantic model's shape, get that model back.

Every role whose reply must be JSON (the HRS orchestrator, the CareGuard controller and judges,
the citation support judge) goes through :func:`chat_json`, so there is one path from model text
to a typed value:

1. The JSON schema is derived from the reply model (:func:`reply_schema`) and handed to the
   backend, which constrains decoding to it where it can (llama.cpp grammars, OpenAI
   ``response_format``) or states it in the prompt.
2. One tolerant extractor (:func:`extract_object`) finds the object in what came back: small
   models wrap JSON in code fences or prose, and write raw line breaks inside strings.
3. Strict validation (:func:`parse_reply`): types are not coerced (a score of ``true``, ``"1"``
   or ``1.0`` is not the integer 1), a duplicated key is an error, ``NaN`` is not a number.

Anything unusable raises :class:`ReplyFormatError`, a :class:`~medgate.errors.ModelError`, so
every caller's existing fail-closed path treats it as the failed call it is.

A reply model may carry hints meant for generation only, in ``json_schema_extra``: a judge is
asked for a justification of at most 160 characters (so that a small model reaches the score
within its token budget) while a longer one from an unconstrained backend is still valid.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from medgate.backends.base import ChatMessage, LanguageModel
from medgate.errors import ModelError
from medgate.records import Usage

T = TypeVar("T", bound=BaseModel)

#: Schema keys that document rather than constrain; left out so that the schema a backend sees
#: (and a grammar compiles) holds only what shapes the reply.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples"})


class ReplyFormatError(ModelError):
    """A reply that had to be JSON of a given shape is not; ``text`` is what the model wrote."""

    def __init__(self, problem: str, text: str) -> None:
        super().__init__(f"{problem}: {text[:160]!r}")
        self.problem = problem
        self.text = text


@dataclass(frozen=True)
class StructuredReply(Generic[T]):
    """A validated reply with the call's usage and the raw text it was read from."""

    value: T
    usage: Usage
    text: str


def reply_schema(reply_model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema a backend is given for ``reply_model``.

    References are inlined (grammar compilers and some servers do not follow ``$ref``), and
    every property is required: a constrained model then always writes every field, while
    validation still accepts a reply from an unconstrained backend that left a defaulted one out.
    """
    return copy.deepcopy(_derived_schema(reply_model))


@cache
def _derived_schema(reply_model: type[BaseModel]) -> dict[str, Any]:
    raw = reply_model.model_json_schema()
    defs: dict[str, Any] = raw.pop("$defs", {})
    schema: dict[str, Any] = _inline(raw, defs)
    return schema


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return _inline({**target, **siblings}, defs)
    out = {k: _inline(v, defs) for k, v in node.items() if k not in _ANNOTATIONS}
    if isinstance(node.get("properties"), dict):
        # Property names are data, not keywords: a field may well be called "title".
        out["properties"] = {k: _inline(v, defs) for k, v in node["properties"].items()}
        out["required"] = list(out["properties"])
    return out


class _DuplicateKeyError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(f"the key {key!r} appears twice")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# strict=False lets raw control characters (a line break) stand inside strings.
_DECODER = json.JSONDecoder(
    strict=False, object_pairs_hook=_unique_keys, parse_constant=_no_constant
)


def extract_object(text: str) -> dict[str, Any]:
    """The JSON object that starts at the first ``{`` of ``text``.

    Text before it (prose, a code fence) and after it is ignored. Only the first ``{`` is tried:
    a later one may lie inside a broken object, and reading it would accept a fragment.
    """
    start = text.find("{")
    if start < 0:
        raise ReplyFormatError("no JSON object in the reply", text)
    try:
        value, _ = _DECODER.raw_decode(text, start)
    except _DuplicateKeyError as exc:
        raise ReplyFormatError(f"ambiguous JSON ({exc})", text) from exc
    except ValueError as exc:
        raise ReplyFormatError(f"malformed JSON ({exc})", text) from exc
    if not isinstance(value, dict):  # pragma: no cover - raw_decode at "{" yields an object
        raise ReplyFormatError("the reply is not a JSON object", text)
    return value


def parse_reply(text: str, reply_model: type[T]) -> T:
    """``reply_model`` read strictly from the JSON object in ``text``."""
    found = extract_object(text)
    try:
        # Validated as JSON text, in strict mode: enums from their string values, but no
        # coercion between numbers, booleans and strings.
        return reply_model.model_validate_json(json.dumps(found), strict=True)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()
        )
        raise ReplyFormatError(
            f"the reply does not fit {reply_model.__name__} ({problems})", text
        ) from exc


def chat_json(
    model: LanguageModel,
    messages: Sequence[ChatMessage],
    reply_model: type[T],
    *,
    max_tokens: int = 256,
    temperature: float = 0.0,
    seed: int | None = None,
    role: str = "agent",
) -> StructuredReply[T]:
    """Ask ``model`` for a reply of ``reply_model``'s shape; raises :class:`ReplyFormatError`
    (or the backend's :class:`~medgate.errors.ModelError`) when there is none to be had."""
    reply = model.chat(
        messages,
        max_tokens=max_tokens,
        temperature=temperature,
        seed=seed,
        json_schema=reply_schema(reply_model),
        role=role,
    )
    return StructuredReply(
        value=parse_reply(reply.text, reply_model), usage=reply.usage, text=reply.text
    )
