"""Any OpenAI-compatible chat server: OpenAI itself, vLLM, Ollama, llama.cpp's server.

The backend speaks plain HTTP through httpx, so no vendor SDK is needed. It is a black box: it
can hold a conversation for the agent roles, report token usage and cost, and, where the server
returns ``logprobs``, give two of the HRS inputs:

* :meth:`OpenAIBackend.label_distribution` reads the ``top_logprobs`` of the first generated
  token and keeps the probability of each closed label, which is enough for the entropy signal;
* :meth:`OpenAIBackend.chat_with_logprobs` returns the log-probability of each generated token as
  the server reports it, from which perplexity follows.

Ambiguity (seeded samples that reuse the prompt state and an answer slot after the reasoning),
rarity (a hidden-state embedding) and a reasoning length held to a minimum need the white-box
backends (``llamacpp``, ``transformers``). Servers differ in what they report: OpenAI and vLLM
return log-probabilities of the model's own distribution, other servers may return them after
temperature or top-k processing.

Errors are raised, never returned as a reply: every failure ends in :class:`ModelError`, so a
gate that catches it fails closed.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import Field

from medgate.backends.base import ChatMessage, ChatReply, renormalise
from medgate.config import ModelPrice
from medgate.errors import ConfigError, ModelError, PrerequisiteError
from medgate.records import Record, Usage
from medgate.retries import (
    RETRYABLE_STATUS,
    GaveUp,
    Retryable,
    RetryPolicy,
    call_with_retries,
    retry_after,
)

if TYPE_CHECKING:
    from medgate.config import MedgateConfig

DEFAULT_API_BASE = "https://api.openai.com/v1"

#: USD per million tokens, from the providers' published price lists (November 2026). Local
#: servers cost nothing; a model not in this table (or in ``backend.prices``) is costed at 0.
PRICES: Mapping[str, ModelPrice] = {
    "gpt-4o-mini": ModelPrice(input_per_mtok=0.15, output_per_mtok=0.60),
    "gpt-4o": ModelPrice(input_per_mtok=2.50, output_per_mtok=10.00),
    "gpt-4.1": ModelPrice(input_per_mtok=2.00, output_per_mtok=8.00),
    "gpt-4.1-mini": ModelPrice(input_per_mtok=0.40, output_per_mtok=1.60),
    "gpt-4.1-nano": ModelPrice(input_per_mtok=0.10, output_per_mtok=0.40),
}

#: OpenAI caps ``top_logprobs`` at 20; other servers accept at least this many.
MAX_TOP_LOGPROBS = 20

#: Statuses that mean the server has no such endpoint, rather than a failed call.
ENDPOINT_MISSING_STATUS = frozenset({404, 405, 501})

#: The longest a model call waits before trying again, whatever the server's Retry-After says.
MAX_WAIT_S = 30.0


class LabelDistribution(Record):
    """The closed-answer distribution read from the first generated token's top log-probs."""

    probs: dict[str, float] = Field(description="Renormalised probability of each label.")
    mass: float = Field(
        description="Raw probability the labels had among the top tokens; 0 means none of them "
        "appeared, and ``probs`` is then uniform (maximal entropy, so the gate escalates)."
    )
    top_logprobs: dict[str, float] = Field(
        description="The server's top tokens and their log-probabilities, as returned."
    )
    usage: Usage


class LogprobReply(Record):
    """A reply with the server's log-probability of each generated token."""

    text: str
    token_logprobs: list[float] = Field(
        description="Log-probability of each generated token, as the server reports it."
    )
    usage: Usage


def price_for(model: str, table: Mapping[str, ModelPrice]) -> ModelPrice | None:
    """The price of ``model``: an exact entry, else the longest entry it extends with ``-...``.

    Dated snapshots (``gpt-4o-mini-2024-07-18``) thus take their family's price, and
    ``gpt-4o-mini`` is never priced as ``gpt-4o``.
    """
    if model in table:
        return table[model]
    best: str | None = None
    for name in table:
        if model.startswith(name + "-") and (best is None or len(name) > len(best)):
            best = name
    return table[best] if best is not None else None


def cost_usd(price: ModelPrice | None, prompt_tokens: int, completion_tokens: int) -> float:
    if price is None:
        return 0.0
    return (
        prompt_tokens * price.input_per_mtok + completion_tokens * price.output_per_mtok
    ) / 1_000_000


def labels_for_token(token: str, labels: Sequence[str]) -> str | None:
    """The label whose surface forms can begin with ``token``, if exactly one can.

    A black-box server does not expose its tokenizer, so the first token of ``" Yes"`` may be
    ``" Yes"``, ``"Yes"`` or ``" Y"``: a token counts toward a label when, without leading
    white space and case, it is a non-empty prefix of that label and of no other.
    """
    piece = token.strip().lower()
    if not piece:
        return None
    matches = [label for label in labels if label.lower().startswith(piece)]
    return matches[0] if len(matches) == 1 else None


def _schema_name(schema: Mapping[str, Any]) -> str:
    title = str(schema.get("title") or "reply")
    return re.sub(r"[^A-Za-z0-9_-]", "_", title)[:64] or "reply"


class OpenAIBackend:
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str = DEFAULT_API_BASE,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        prices: Mapping[str, ModelPrice] | None = None,
    ) -> None:
        if not model:
            raise ConfigError("the openai backend needs a model name, e.g. openai:gpt-4o-mini")
        self._model = model
        self._api_base = api_base.rstrip("/")
        self._timeout_s = timeout_s
        self._retries = RetryPolicy(
            max_retries=max_retries,
            backoff_s=backoff_s,
            backoff_max_s=MAX_WAIT_S,
            deadline_s=timeout_s,
        )
        self._price = price_for(model, {**PRICES, **(prices or {})})
        self._json_schema_supported = True
        self._json_mode_schema_supported = True
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(base_url=self._api_base, headers=headers)

    @classmethod
    def from_spec(cls, target: str, config: MedgateConfig) -> OpenAIBackend:
        options = config.backend
        api_base = options.api_base or DEFAULT_API_BASE
        api_key = os.environ.get(options.api_key_env) or None
        if api_key is None and api_base.rstrip("/") == DEFAULT_API_BASE:
            raise PrerequisiteError(
                f"the openai backend needs an API key: set {options.api_key_env} "
                "(or point backend.api_base at a local OpenAI-compatible server)"
            )
        return cls(
            target.strip(),
            api_base=api_base,
            api_key=api_key,
            timeout_s=options.timeout_s,
            max_retries=options.max_retries,
            prices=options.prices,
        )

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    @property
    def api_base(self) -> str:
        return self._api_base

    @property
    def model(self) -> str:
        """The model name sent to the server."""
        return self._model

    @property
    def price(self) -> ModelPrice | None:
        """The price used for this model's cost, or None when it is unknown (costed at 0)."""
        return self._price

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the LanguageModel protocol --------------------------------------------------------

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
        payload = self.payload(messages, max_tokens, temperature, seed)
        started = time.perf_counter()
        if json_schema is not None and self._json_schema_supported:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": _schema_name(json_schema), "schema": dict(json_schema)},
            }
            try:
                body = self.post(payload)
            except _Rejected:
                # Older vLLM/Ollama/llama.cpp builds know only JSON mode. Remember that only if
                # JSON mode then works: otherwise the 400 was about something else.
                body = self._post_json_mode(payload, json_schema)
                self._json_schema_supported = False
        elif json_schema is not None:
            body = self._post_json_mode(payload, json_schema)
        else:
            body = self.post(payload)
        text = self._content(body)
        return ChatReply(text=text, usage=self._usage(body, role, started))

    # -- logprobs, where the server gives them ---------------------------------------------

    def chat_with_logprobs(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
        role: str = "answerer",
    ) -> LogprobReply:
        """A reply with the log-probability of each generated token (the perplexity input)."""
        payload = self.payload(messages, max_tokens, temperature, seed)
        payload["logprobs"] = True
        started = time.perf_counter()
        body = self.post(payload)
        text = self._content(body)
        entries = self._logprob_entries(body)
        logprobs = [self._float(entry, "logprob") for entry in entries]
        return LogprobReply(
            text=text, token_logprobs=logprobs, usage=self._usage(body, role, started)
        )

    def label_distribution(
        self,
        messages: Sequence[ChatMessage],
        labels: Sequence[str],
        *,
        top_logprobs: int = MAX_TOP_LOGPROBS,
        role: str = "answerer",
    ) -> LabelDistribution:
        """The probability of each label as the first token of a greedy one-token reply.

        ``messages`` should end by asking for one of ``labels``. Each label's probability is the
        summed probability of the top tokens that can begin it (``yes``, `` Yes``, ...),
        renormalised over the labels. This is the entropy signal's input on a black-box server.
        """
        if not labels:
            raise ConfigError("label_distribution needs at least one label")
        payload = self.payload(messages, max_tokens=1, temperature=0.0, seed=None)
        payload["logprobs"] = True
        payload["top_logprobs"] = max(1, min(top_logprobs, MAX_TOP_LOGPROBS))
        started = time.perf_counter()
        body = self.post(payload)
        entries = self._logprob_entries(body)
        if not entries:
            raise ModelError(f"{self.name}: the server generated no token to read labels from")
        top = entries[0].get("top_logprobs")
        if not isinstance(top, list) or not top:
            raise ModelError(f"{self.name}: the server returned no top_logprobs")
        returned: dict[str, float] = {}
        weights = dict.fromkeys(labels, 0.0)
        for item in top:
            if not isinstance(item, dict) or not isinstance(item.get("token"), str):
                raise ModelError(f"{self.name}: malformed top_logprobs entry {item!r:.120}")
            token = item["token"]
            logprob = self._float(item, "logprob")
            returned[token] = logprob
            label = labels_for_token(token, labels)
            if label is not None:
                weights[label] += math.exp(logprob)
        mass = sum(weights.values())
        return LabelDistribution(
            probs=renormalise(weights),
            mass=mass,
            top_logprobs=returned,
            usage=self._usage(body, role, started),
        )

    # -- HTTP ------------------------------------------------------------------------------

    def payload(
        self,
        messages: Sequence[ChatMessage],
        max_tokens: int,
        temperature: float,
        seed: int | None,
    ) -> dict[str, Any]:
        """A chat-completions request body for this model (the grey-box answerer extends it)."""
        if not messages:
            raise ModelError(f"{self.name}: no messages to send")
        payload: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if seed is not None:
            payload["seed"] = seed
        return payload

    def _post_json_mode(self, payload: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
        """JSON mode, with the schema in ``response_format`` where the server accepts it
        (llama-cpp-python's server compiles it into a grammar, so a small model's reply fits
        the schema); a server that refuses that key with 400 gets plain JSON mode, and that is
        remembered."""
        fallback = self._json_mode(payload, schema)
        if self._json_mode_schema_supported:
            try:
                return self.post(
                    {**fallback, "response_format": {"type": "json_object", "schema": dict(schema)}}
                )
            except RequestRejected:
                body = self.post(fallback)
                self._json_mode_schema_supported = False
                return body
        return self.post(fallback)

    @staticmethod
    def _json_mode(payload: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
        """JSON mode does not carry the schema, so the schema goes into a system message (OpenAI
        also refuses JSON mode unless a message mentions JSON)."""
        instruction = {
            "role": "system",
            "content": "Reply with one JSON object only, matching this JSON schema:\n"
            + json.dumps(schema, sort_keys=True),
        }
        fallback = {k: v for k, v in payload.items() if k != "response_format"}
        fallback["messages"] = [instruction, *payload["messages"]]
        fallback["response_format"] = {"type": "json_object"}
        return fallback

    def post(self, payload: Mapping[str, Any], path: str = "/chat/completions") -> dict[str, Any]:
        """POST ``payload`` to ``path`` under the retry policy (:mod:`medgate.retries`): retries
        on 408, 409, 429, 5xx and transport errors, all within one per-call deadline; returns
        the reply's JSON object.

        A 400 raises :class:`RequestRejected`, so a caller that sent optional fields can ask
        again without them; 404, 405 and 501 raise :class:`EndpointMissing`; every other
        failure is a :class:`ModelError` (and so are those two).
        """

        def attempt(left: float | None) -> dict[str, Any]:
            try:
                response = self._client.post(path, json=payload, timeout=httpx.Timeout(left))
            except httpx.TimeoutException:
                raise Retryable(f"no reply within {self._timeout_s:g} s") from None
            except httpx.TransportError as exc:
                raise Retryable(f"cannot reach {self._api_base} ({exc})") from None
            if response.status_code == 200:
                return self._json_body(response)
            failure = f"HTTP {response.status_code}: {self._error_message(response)}"
            fmt = payload.get("response_format")
            if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
                # llama-cpp-python's server answers a response_format it does not know with a
                # 500 that names the field (a validation error), not with 400 or 422.
                names_it = response.status_code == 500 and "response_format" in failure
                if response.status_code in (400, 422) or names_it:
                    raise _Rejected(failure)
            if response.status_code == 400:
                raise RequestRejected(f"{self.name}: {failure}")
            if response.status_code in ENDPOINT_MISSING_STATUS:
                raise EndpointMissing(f"{self.name}: POST {path}: {failure}")
            if response.status_code in RETRYABLE_STATUS:
                raise Retryable(failure, retry_after(response))
            raise ModelError(f"{self.name}: {failure}")

        try:
            return call_with_retries(attempt, self._retries)
        except GaveUp as exc:
            raise ModelError(
                f"{self.name}: {exc.failure} (gave up after {exc.attempts} attempts)"
            ) from None

    def _json_body(self, response: httpx.Response) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError as exc:
            raise ModelError(f"{self.name}: the server's reply is not JSON ({exc})") from exc
        if not isinstance(body, dict):
            raise ModelError(f"{self.name}: the server's reply is not a JSON object")
        return body

    @staticmethod
    def _error_message(response: httpx.Response) -> str:
        try:
            body = response.json()
        except ValueError:
            return response.text[:200] or response.reason_phrase
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:200]
        if isinstance(error, str):
            return error[:200]
        return json.dumps(body)[:200]

    # -- reading replies -------------------------------------------------------------------

    def _choice(self, body: Mapping[str, Any]) -> dict[str, Any]:
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ModelError(f"{self.name}: the reply has no choices")
        return choices[0]

    def _content(self, body: Mapping[str, Any]) -> str:
        choice = self._choice(body)
        message = choice.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            refusal = message.get("refusal") if isinstance(message, dict) else None
            reason = f"refused: {refusal}" if refusal else "no text content"
            raise ModelError(f"{self.name}: the reply has {reason}")
        if choice.get("finish_reason") == "content_filter":
            raise ModelError(f"{self.name}: the reply was cut by the server's content filter")
        return content

    def _logprob_entries(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        logprobs = self._choice(body).get("logprobs")
        content = logprobs.get("content") if isinstance(logprobs, dict) else None
        if not isinstance(content, list):
            raise ModelError(
                f"{self.name}: the server returned no logprobs; this signal needs a server that "
                "supports them or a white-box backend"
            )
        if not all(isinstance(entry, dict) for entry in content):
            raise ModelError(f"{self.name}: malformed logprobs in the reply")
        return content

    def _float(self, entry: Mapping[str, Any], key: str) -> float:
        value = entry.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ModelError(f"{self.name}: malformed {key} {value!r:.60}")
        return float(value)

    def _usage(self, body: Mapping[str, Any], role: str, started: float) -> Usage:
        usage = body.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        prompt = usage.get("prompt_tokens")
        completion = usage.get("completion_tokens")
        prompt_tokens = prompt if isinstance(prompt, int) else 0
        completion_tokens = completion if isinstance(completion, int) else 0
        return Usage(
            role=role,
            model=self.name,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost_usd(self._price, prompt_tokens, completion_tokens),
            seconds=time.perf_counter() - started,
        )


class RequestRejected(ModelError):
    """The server refused a request with 400 (a field it does not know, a prompt too long)."""


class EndpointMissing(ModelError):
    """The server has no such endpoint (404, 405 or 501): say, no ``/completions`` on a hosted
    API that serves chat models only."""


class _Rejected(RequestRejected):
    """The server refused a ``json_schema`` response format with 400."""
