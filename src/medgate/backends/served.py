"""The HRS answerer over an OpenAI-compatible server: a grey box.

A server (OpenAI, vLLM, TGI, Ollama, llama.cpp's server) does not hand out its logits, but a
chat completion with ``logprobs: true, top_logprobs: 20`` reports each generated token's
log-probability and the twenty most probable tokens at each position. :class:`ServedAnswerer`
reads the HRS inputs from that, behind the same operations as a white-box backend
(:class:`~medgate.backends.base.WhiteBoxModel`), so the HRS gate does not know the difference:

* **the answer slot** — the model writes its reasoning, then ends its turn or writes
  ``Answer: <label>``. As in-process, the reasoning kept before the stop word is followed by the
  cue in the same assistant turn: a ``POST /completions`` request sends the prompt rendered by
  the model's chat template (``backend.chat_template``; the server renders the same text for
  chat), the reasoning and the cue, and the label distribution is read from the top
  log-probabilities of its one generated token (:data:`SAME_TURN`). The server tokenises that
  text again, so where the reasoning's last token and the cue's first merge it reads one token
  fewer than in-process. Without a template, or on a server without ``/completions`` (some
  hosted APIs), the slot is read at the token after a cue the model wrote itself
  (:data:`CUE`), else by a second chat request with the reasoning and the cue as the
  assistant's message (:data:`FOLLOW_UP`; vLLM continues that message with
  ``continue_final_message``, llama.cpp's server and OpenAI open a new turn, a different
  reading); the run records how (``answer_read``) and why not in the same turn
  (``answer_note``).
* **labels outside the top tokens** — a label none of whose surface forms is among the visible
  tokens is listed in ``unseen_labels`` and given the most it can have for one surface form:
  the smallest visible probability, at most the mass no visible token took. It is never 0.
* **perplexity** from the reasoning tokens' log-probabilities, cut before the first stop word
  by the same rule as the in-process engine.
* **ambiguity** from seeded samples: one request with ``n`` where the server returns ``n``
  choices, separate seeded requests otherwise.
* **rarity** from ``POST /embeddings`` where the server has it; otherwise
  :class:`EmbeddingUnavailable`, which the probe reports as rarity not computed.

What HTTP cannot do: forbid the answer words before a minimum reasoning length (only the end
of turn, through ``min_tokens``, on servers that know it). Every failure is a
:class:`ModelError`, so the gate fails closed.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from medgate.backends.base import (
    ChatMessage,
    ChatReply,
    Completion,
    DecodeParams,
    renormalise,
)
from medgate.backends.chat_template import ChatTemplate
from medgate.backends.llamacpp import ANSWER_PREFIXES
from medgate.backends.openai import (
    MAX_TOP_LOGPROBS,
    EndpointMissing,
    OpenAIBackend,
    RequestRejected,
    labels_for_token,
)
from medgate.errors import EmbeddingUnavailable, ModelError
from medgate.injection import find_injections
from medgate.records import Record

#: Tokens allowed after the reasoning budget, so the cue and the label fit in the same reply.
CUE_ROOM = 16

#: Tokens the follow-up request may write; only the first is read.
FOLLOW_UP_TOKENS = 3

AnswerRead = Literal["same_turn", "cue", "follow_up"]
SAME_TURN: AnswerRead = "same_turn"
"""A ``/completions`` request read the token after the prompt, the reasoning and the cue in the
same assistant turn: the in-process answer slot."""
CUE: AnswerRead = "cue"
"""The model wrote the answer cue itself; the label was read at the token after it."""
FOLLOW_UP: AnswerRead = "follow_up"
"""A second chat request read the first token after the reasoning and the cue."""

#: Why the slot is not read in the same turn when no chat template is configured.
NO_TEMPLATE = (
    "no chat template for the served model (backend.chat_template), so the answer slot "
    "cannot be read in the same turn over /completions"
)


class TopToken(Record):
    token: str
    logprob: float


class Position(Record):
    """One generated token as the server reports it."""

    token: str
    logprob: float
    top: list[TopToken]


class LabelReading(Record):
    probs: dict[str, float]
    mass: float = Field(description="Visible probability of the labels' surface forms.")
    unseen: list[str]
    unseen_mass: float


def read_labels(top: Sequence[TopToken], labels: Sequence[str]) -> LabelReading:
    """The label distribution at one position from its visible top tokens.

    A token counts toward a label when it can begin it (:func:`labels_for_token`). A label with
    no visible token gets the smallest visible probability, capped by the mass no visible token
    took: the most any one of its surface forms can have. Setting it to 0 would make the model
    look surer than the server showed.
    """
    if not top:
        raise ModelError("the server returned no top_logprobs at the answer slot")
    probs = [math.exp(t.logprob) for t in top]
    weights = dict.fromkeys(labels, 0.0)
    seen: set[str] = set()
    for t, p in zip(top, probs, strict=True):
        label = labels_for_token(t.token, labels)
        if label is not None:
            weights[label] += p
            seen.add(label)
    unseen_mass = max(0.0, 1.0 - sum(probs))
    unseen = [label for label in labels if label not in seen]
    bound = min(min(probs), unseen_mass)
    mass = sum(weights.values())
    for label in unseen:
        weights[label] = bound
    return LabelReading(
        probs=renormalise(weights), mass=mass, unseen=unseen, unseen_mass=unseen_mass
    )


def reasoning_length(tokens: Sequence[str], stops: Sequence[str]) -> tuple[int, int]:
    """How many tokens are reasoning, and where the first stop word starts (-1: none).

    The same rule as the in-process engine: the tokens that end before the first stop word.
    """
    text = "".join(tokens)
    cut = min((i for s in stops if (i := text.find(s)) >= 0), default=-1)
    if cut < 0:
        return len(tokens), -1
    end = 0
    kept = 0
    for token in tokens:
        end += len(token)
        if end > cut:
            break
        kept += 1
    return kept, cut


def held_back(token: str, stops: Sequence[str]) -> bool:
    """Whether the in-process engine forbids ``token`` before ``min_tokens``: a special token
    (the end of turn, which a server reports as empty text) or a piece of three or more
    letters that begins, or is begun by, a stop word or the answer line (``Answer``)."""
    if not token:
        return True
    piece = token.strip().lower()
    starts = tuple(s.strip().lower() for s in stops if s.strip()) + ANSWER_PREFIXES
    return len(piece) >= 3 and any(s.startswith(piece) or piece.startswith(s) for s in starts)


def early_stop(
    tokens: Sequence[str], stops: Sequence[str], min_tokens: int, ended: bool
) -> int | None:
    """The first step before ``min_tokens`` where the reply did what in-process forbids there
    (ended its turn, or wrote a stop word or the answer line), or None."""
    for i, token in enumerate(tokens[:min_tokens]):
        # An empty piece inside a reply is part of a character split across tokens.
        if token and held_back(token, stops):
            return i
    kept, cut = reasoning_length(tokens, stops)
    if cut >= 0 and kept < min_tokens:
        return kept
    if ended and len(tokens) < min_tokens:
        return len(tokens)
    return None


def cue_slot(tokens: Sequence[str], cut: int, cue: str) -> int | None:
    """The index of the token right after the answer cue the model wrote at ``cut``, or None
    when the text there is not the cue or no token starts exactly where it ends."""
    text = "".join(tokens)
    written = cue.strip()
    if cut < 0 or text[cut : cut + len(written)].lower() != written.lower():
        return None
    end = cut + len(written)
    start = 0
    for i, token in enumerate(tokens):
        if start == end:
            return i
        if start > end:
            return None
        start += len(token)
    return None


class ServedAnswerer:
    """The HRS answerer on a model behind an OpenAI-compatible server (see the module)."""

    #: Sampling fields that make a llama.cpp or vLLM server decode as the in-process engine
    #: does (no repetition penalty, no top-k/min-p cut before sampling); servers that refuse
    #: them with 400 are asked again without them, and that is remembered.
    NEUTRAL_SAMPLING: Mapping[str, Any] = {"repeat_penalty": 1.0, "top_k": 0, "min_p": 0.0}

    def __init__(self, backend: OpenAIBackend, template: ChatTemplate | None = None) -> None:
        self.backend = backend
        self.template = template
        self._identity = f"{backend.api_base}|{backend.name}"
        self._extras_supported = True
        self._n_supported = True
        self._embedding_failure: str | None = None
        #: Why the answer slot is not read in the same turn (None: it is, where it can be).
        self._same_turn_failure: str | None = None if template is not None else NO_TEMPLATE

    @property
    def same_turn_failure(self) -> str | None:
        """Why this answerer cannot read the answer slot in the same turn, once it knows."""
        return self._same_turn_failure

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def fingerprint(self) -> str:
        """Identifies the endpoint and model name, not the weights (which a server hides):
        artifacts fitted for one served model are not applied to another, nor to the
        in-process model with the same weights, whose answer slot is read differently."""
        return "served-" + hashlib.sha256(self._identity.encode()).hexdigest()

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
        return self.backend.chat(
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            json_schema=json_schema,
            role=role,
        )

    # -- the white-box operations, over HTTP ------------------------------------------------

    def complete(self, messages: Sequence[ChatMessage], params: DecodeParams) -> Completion:
        return self.complete_batch(messages, [params])[0]

    def complete_batch(
        self, messages: Sequence[ChatMessage], params: Sequence[DecodeParams]
    ) -> list[Completion]:
        """One completion per entry of ``params``; sampled entries that differ only by seed go
        in one request with ``n`` where the server honours it."""
        out: dict[int, Completion] = {}
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(params):
            key = p.model_copy(update={"seed": None}).model_dump_json()
            groups.setdefault(key if p.temperature > 0 else f"greedy{i}", []).append(i)
        for indices in groups.values():
            for i, completion in zip(indices, self._run(messages, params, indices), strict=True):
                out[i] = completion
        return [out[i] for i in range(len(params))]

    def _run(
        self, messages: Sequence[ChatMessage], params: Sequence[DecodeParams], indices: list[int]
    ) -> list[Completion]:
        first = params[indices[0]]
        started = time.perf_counter()
        choices: list[tuple[dict[str, Any], int]] = []
        if len(indices) > 1 and self._n_supported:
            body = self._generate(messages, first, n=len(indices))
            got = self._choices(body)
            if len(got) < len(indices):
                # llama.cpp's server ignores n: ask for the rest one by one, with their seeds.
                self._n_supported = False
            choices = [(c, self._prompt_tokens(body)) for c in got[: len(indices)]]
        for i in indices[len(choices) :]:
            body = self._generate(messages, params[i], n=1)
            choices.append((self._choices(body)[0], self._prompt_tokens(body)))
        return [
            self._completion(messages, params[i], choice, prompt, started)
            for i, (choice, prompt) in zip(indices, choices, strict=True)
        ]

    def _generate(self, messages: Sequence[ChatMessage], p: DecodeParams, n: int) -> dict[str, Any]:
        budget = p.max_tokens + (CUE_ROOM if p.answer_slot is not None else 0)
        payload = self.backend.payload(messages, budget, p.temperature, p.seed)
        payload.update(logprobs=True, top_logprobs=MAX_TOP_LOGPROBS)
        if p.temperature > 0:
            payload["top_p"] = 1.0
        if n > 1:
            payload["n"] = n
        extras: dict[str, Any] = dict(self.NEUTRAL_SAMPLING)
        if p.min_tokens:
            # Forbids only the end of turn (llama.cpp, vLLM); the answer words cannot be
            # forbidden over HTTP, so a model may still answer before this many tokens.
            extras["min_tokens"] = p.min_tokens
        return self._post(payload, extras)

    def _post(
        self,
        payload: dict[str, Any],
        extras: Mapping[str, Any],
        path: str = "/chat/completions",
    ) -> dict[str, Any]:
        if self._extras_supported and extras:
            try:
                return self.backend.post({**payload, **extras}, path=path)
            except RequestRejected:
                # Only remembered when the plain request then works: the 400 was about them.
                body = self.backend.post(payload, path=path)
                self._extras_supported = False
                return body
        return self.backend.post(payload, path=path)

    def _choices(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ModelError(f"{self.name}: the reply has no choices")
        if not all(isinstance(c, dict) for c in choices):
            raise ModelError(f"{self.name}: malformed choices in the reply")
        return choices

    def _prompt_tokens(self, body: Mapping[str, Any]) -> int:
        usage = body.get("usage")
        value = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        return value if isinstance(value, int) and value >= 0 else 0

    def _positions(self, choice: Mapping[str, Any]) -> list[Position]:
        if choice.get("finish_reason") == "content_filter":
            raise ModelError(f"{self.name}: the reply was cut by the server's content filter")
        logprobs = choice.get("logprobs")
        content = logprobs.get("content") if isinstance(logprobs, dict) else None
        if not isinstance(content, list):
            raise ModelError(
                f"{self.name}: the server returned no logprobs; the HRS signals need a server "
                "that reports them (logprobs, top_logprobs) or a white-box backend"
            )
        out = []
        for entry in content:
            try:
                position = Position(
                    token=entry["token"],
                    logprob=entry["logprob"],
                    top=[
                        TopToken(token=t["token"], logprob=t["logprob"])
                        for t in entry["top_logprobs"]
                    ],
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise ModelError(f"{self.name}: malformed logprobs entry {entry!r:.160}") from exc
            numbers = [position.logprob, *(t.logprob for t in position.top)]
            if not all(math.isfinite(x) and x <= 0.0 for x in numbers):
                raise ModelError(f"{self.name}: a log-probability is not a finite number <= 0")
            out.append(position)
        return out

    def _completion(
        self,
        messages: Sequence[ChatMessage],
        p: DecodeParams,
        choice: Mapping[str, Any],
        prompt_tokens: int,
        started: float,
    ) -> Completion:
        positions = self._positions(choice)
        tokens = [pos.token for pos in positions]
        if p.min_tokens and self._same_turn_failure is None:
            ended = choice.get("finish_reason") == "stop"
            step = early_stop(tokens, p.stop, p.min_tokens, ended)
            if step is not None:
                positions = self._hold_min_tokens(messages, p, positions[:step])
                tokens = [pos.token for pos in positions]
                choice = {}  # the reply's text is no longer the reasoning
        kept, cut = reasoning_length(tokens, p.stop)
        # Past the budget the in-process engine stops and appends the cue: so does this.
        within = kept <= p.max_tokens
        kept = min(kept, p.max_tokens)
        reasoning = positions[:kept]
        text = "".join(tokens[:kept])
        message = choice.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if kept == len(tokens) and isinstance(content, str):
            # The whole reply: the server's own text, since per-token pieces can drop the
            # halves of a character split across tokens.
            text = content
        fields: dict[str, Any] = {}
        slot = p.answer_slot
        if slot is not None:
            top, how, note = self._answer_slot(
                messages, text, kept, prompt_tokens, slot.cue, tokens, cut, within, positions
            )
            reading = read_labels(top, slot.labels)
            fields.update(
                label_probs=reading.probs,
                label_mass=reading.mass,
                unseen_labels=reading.unseen,
                unseen_mass=reading.unseen_mass,
                answer_read=how,
                answer_note=note,
            )
            if positions:
                opening = read_labels(positions[0].top, slot.labels)
                fields.update(opening_label_probs=opening.probs, opening_label_mass=opening.mass)
        return Completion(
            text=text,
            token_logprobs=[pos.logprob for pos in reasoning],
            prompt_tokens=prompt_tokens,
            seconds=time.perf_counter() - started,
            **fields,
        )

    def _hold_min_tokens(
        self, messages: Sequence[ChatMessage], p: DecodeParams, prefix: Sequence[Position]
    ) -> list[Position]:
        """The reasoning as in-process writes it under ``min_tokens``, from ``prefix`` on.

        The server ended the turn or began the answer line before ``p.min_tokens`` tokens,
        which in-process forbids (``min_tokens`` over HTTP forbids one end token at most).
        Up to that length, one ``/completions`` token at a time: the most probable of the
        visible top tokens that in-process allows (sampled among them at the temperature,
        with the seed, for a sample), with its log-probability as the server reports it
        (before any ban, as in-process records it). Then one ``/completions`` continuation
        for the rest of the budget. Each request sends the text so far, which the server
        tokenises again.
        """
        assert self.template is not None
        prompt = self.template.render(messages)
        held = list(prefix)
        rng = np.random.default_rng(p.seed)
        while len(held) < p.min_tokens:
            choice = self._choices(self._complete_text(prompt, held, 1, 0.0, None))[0]
            if not self._generated(choice):
                # The end of turn was the most probable token, and a server reports nothing
                # for it: ask again with the end tokens forbidden. llama.cpp's server still
                # reports the log-probabilities before that ban, as in-process records them.
                choice = self._choices(self._complete_text(prompt, held, 1, 0.0, None, True))[0]
            visible = self._first_top(choice)
            allowed = [t for t in visible if not held_back(t.token, p.stop)]
            if not allowed:
                raise ModelError(
                    f"{self.name}: no visible token may continue the reasoning before "
                    f"hrs.min_reasoning_tokens ({p.min_tokens})"
                )
            if p.temperature > 0:
                z = np.array([t.logprob for t in allowed]) / p.temperature
                w = np.exp(z - z.max())
                pick = allowed[int(rng.choice(len(allowed), p=w / w.sum()))]
            else:
                pick = max(allowed, key=lambda t: t.logprob)
            held.append(Position(token=pick.token, logprob=pick.logprob, top=visible))
        budget = p.max_tokens - len(held) + (CUE_ROOM if p.answer_slot is not None else 0)
        if budget <= 0:
            return held
        body = self._complete_text(prompt, held, budget, p.temperature, p.seed)
        return held + self._legacy_positions(self._choices(body)[0])

    def _complete_text(
        self,
        prompt: str,
        held: Sequence[Position],
        max_tokens: int,
        temperature: float,
        seed: int | None,
        forbid_end: bool = False,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.backend.model,
            "prompt": prompt + "".join(t.token for t in held),
            "max_tokens": max_tokens,
            "temperature": temperature,
            "logprobs": MAX_TOP_LOGPROBS,
        }
        if forbid_end:
            assert self.template is not None
            # llama-cpp-python's server takes token texts (logit_bias_type "tokens"), and
            # reports the log-probabilities from before the bias. (It drops a logit_bias sent
            # together with min_tokens, so min_tokens is not sent.)
            ends = self.template.end_tokens
            payload.update(logit_bias=dict.fromkeys(ends, -100.0), logit_bias_type="tokens")
        if temperature > 0:
            payload["top_p"] = 1.0
            if seed is not None:
                payload["seed"] = seed
        return self._post(payload, self.NEUTRAL_SAMPLING, path="/completions")

    @staticmethod
    def _generated(choice: Mapping[str, Any]) -> bool:
        """Whether a ``/completions`` reply reports a generated token."""
        logprobs = choice.get("logprobs")
        if not isinstance(logprobs, dict):
            return True  # let the reading say what is wrong
        rows = logprobs.get("content", logprobs.get("top_logprobs"))
        return not isinstance(rows, list) or bool(rows)

    def _legacy_positions(self, choice: Mapping[str, Any]) -> list[Position]:
        """The generated tokens of a ``/completions`` reply (legacy ``logprobs`` object)."""
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
            return self._positions(choice)
        if choice.get("finish_reason") == "content_filter":
            raise ModelError(f"{self.name}: the reply was cut by the server's content filter")
        try:
            assert isinstance(logprobs, dict)
            rows = zip(
                logprobs["tokens"],
                logprobs["token_logprobs"],
                logprobs["top_logprobs"],
                strict=True,
            )
            out = [
                Position(
                    token=token,
                    logprob=logprob,
                    top=[TopToken(token=t, logprob=lp) for t, lp in top.items()],
                )
                for token, logprob, top in rows
            ]
        except (AssertionError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelError(f"{self.name}: malformed logprobs in the /completions reply") from exc
        for position in out:
            numbers = [position.logprob, *(t.logprob for t in position.top)]
            if not all(math.isfinite(x) and x <= 0.0 for x in numbers):
                raise ModelError(f"{self.name}: a log-probability is not a finite number <= 0")
        return out

    def _answer_slot(
        self,
        messages: Sequence[ChatMessage],
        reasoning: str,
        kept: int,
        prompt_tokens: int,
        cue: str,
        tokens: Sequence[str],
        cut: int,
        within: bool,
        positions: Sequence[Position],
    ) -> tuple[list[TopToken], AnswerRead, str | None]:
        """The top tokens at the answer slot, how they were read, and why not in the same turn.

        The same turn first, as in-process: the kept reasoning plus the cue, whether or not the
        model wrote the cue itself (in-process appends it to the kept tokens either way). Where
        that cannot be done, the token after the cue the model wrote, else a follow-up request;
        the reason goes with the reading.
        """
        note = self._same_turn_failure
        if note is None:
            try:
                return (
                    self._same_turn(messages, reasoning, kept, prompt_tokens, cue),
                    SAME_TURN,
                    None,
                )
            except _NotInSameTurn as exc:
                note = str(exc)
        at = cue_slot(tokens, cut, cue) if within else None
        if at is not None and at < len(positions):
            return positions[at].top, CUE, note
        return self._follow_up(messages, reasoning, cue), FOLLOW_UP, note

    def _same_turn(
        self,
        messages: Sequence[ChatMessage],
        reasoning: str,
        kept: int,
        prompt_tokens: int,
        cue: str,
    ) -> list[TopToken]:
        """The top tokens after the prompt, the reasoning and the cue in one assistant turn.

        ``POST /completions`` with the prompt rendered by the model's chat template (as the
        server renders it for chat), the reasoning and the cue, one greedy token and the top
        log-probabilities at it. The server tokenises that text again: where the reasoning's
        last token and the cue's first would merge (``.`` and ``\n`` into ``.\n`` on Qwen's
        tokenizer) it reads one token fewer than in-process, which appends the cue's tokens to
        the generated ones.

        Raises :class:`_NotInSameTurn` when the server has no such endpoint (remembered, and
        the slot is read another way) and :class:`ModelError` when the reading failed, or the
        prompt was not safe to send as text.
        """
        assert self.template is not None
        prompt = self.template.render(messages)
        # A text prompt is tokenised with special tokens honoured, so text imitating the
        # template's markup would become real turn markers: such a prompt is not sent (the
        # injection screen normally holds such a case back before any model reads it).
        texts = [m.content for m in messages] + [reasoning]
        markup = [t for t in (self.template.bos_token, self.template.eos_token) if t]
        controls = find_injections({str(i): t for i, t in enumerate(texts)})
        if any(f.kind == "chat-control token" for f in controls) or any(
            t in text for t in markup for text in texts
        ):
            raise ModelError(
                f"{self.name}: the prompt or reasoning holds chat-control-token text, which a "
                "text prompt over /completions would turn into turn markers"
            )
        payload: dict[str, Any] = {
            "model": self.backend.model,
            "prompt": prompt + reasoning + cue,
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": MAX_TOP_LOGPROBS,
        }
        try:
            body = self._post(payload, self.NEUTRAL_SAMPLING, path="/completions")
        except EndpointMissing as exc:
            self._same_turn_failure = f"the server has no /completions endpoint ({exc})"
            raise _NotInSameTurn(self._same_turn_failure) from exc
        read = self._prompt_tokens(body)
        if prompt_tokens and read and not 0 < read - prompt_tokens <= kept + len(cue):
            raise ModelError(
                f"{self.name}: the chat template from {self.template.source} does not render "
                f"the prompt the server rendered ({prompt_tokens} tokens for chat, {read} for "
                f"the same prompt plus {kept} reasoning tokens and the cue): set "
                "backend.chat_template to the served model's template, or unset it"
            )
        return self._first_top(self._choices(body)[0])

    def _first_top(self, choice: Mapping[str, Any]) -> list[TopToken]:
        """The top tokens of a ``/completions`` reply's first position: the legacy format
        (``top_logprobs``: one token-to-logprob object per position, vLLM and llama.cpp) or
        the chat format (``content``)."""
        if choice.get("finish_reason") == "content_filter":
            raise ModelError(f"{self.name}: the reply was cut by the server's content filter")
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
            positions = self._positions(choice)
            if not positions:
                raise ModelError(f"{self.name}: the server generated no token after the cue")
            return positions[0].top
        per_position = logprobs.get("top_logprobs") if isinstance(logprobs, dict) else None
        if not isinstance(per_position, list):
            raise ModelError(
                f"{self.name}: the /completions reply has no logprobs at the answer slot"
            )
        if not per_position or not isinstance(per_position[0], dict):
            raise ModelError(f"{self.name}: the server generated no token after the cue")
        top = []
        for token, logprob in per_position[0].items():
            if isinstance(logprob, bool) or not isinstance(logprob, int | float):
                raise ModelError(f"{self.name}: malformed top_logprobs entry {token!r:.60}")
            if not (math.isfinite(logprob) and logprob <= 0.0):
                raise ModelError(f"{self.name}: a log-probability is not a finite number <= 0")
            top.append(TopToken(token=token, logprob=float(logprob)))
        return top

    def _follow_up(
        self, messages: Sequence[ChatMessage], reasoning: str, cue: str
    ) -> list[TopToken]:
        """The top tokens right after the reasoning and the cue, asked for in a second request.

        The reasoning and the cue go in as the assistant's message. ``continue_final_message``
        asks servers that support it (vLLM) to continue that message, which is the in-process
        answer slot; others answer in a new assistant turn, which the docs call a different
        reading.
        """
        turn = ChatMessage(role="assistant", content=reasoning + cue)
        payload = self.backend.payload([*messages, turn], FOLLOW_UP_TOKENS, 0.0, None)
        payload.update(logprobs=True, top_logprobs=MAX_TOP_LOGPROBS)
        extras = {
            **self.NEUTRAL_SAMPLING,
            "continue_final_message": True,
            "add_generation_prompt": False,
        }
        body = self._post(payload, extras)
        positions = self._positions(self._choices(body)[0])
        if not positions:
            raise ModelError(f"{self.name}: the server generated no token after the answer cue")
        return positions[0].top

    def embed(self, text: str) -> list[float]:
        """The server's embedding of ``text`` (``POST /embeddings``).

        This is whatever the server computes, not necessarily the in-process mean of the last
        hidden state, so a rarity centroid must be fitted on the same server. A server without
        the endpoint is asked once; :class:`EmbeddingUnavailable` then says so at once.
        """
        if self._embedding_failure is not None:
            raise EmbeddingUnavailable(self._embedding_failure)
        try:
            body = self.backend.post(
                {"model": self.backend.model, "input": text}, path="/embeddings"
            )
            data = body.get("data")
            vector = data[0].get("embedding") if isinstance(data, list) and data else None
            if isinstance(vector, list) and vector and isinstance(vector[0], list):
                raise ModelError("the server returned one embedding per token, not one per text")
            if not isinstance(vector, list) or not vector:
                raise ModelError("the reply holds no embedding")
            out = [float(x) for x in vector]
            if not all(math.isfinite(x) for x in out):
                raise ModelError("the embedding holds a value that is not a finite number")
            return out
        except (ModelError, TypeError, ValueError, AttributeError) as exc:
            self._embedding_failure = f"{self.name}: no embedding from the server ({exc})"
            raise EmbeddingUnavailable(self._embedding_failure) from exc


class _NotInSameTurn(Exception):
    """The answer slot cannot be read in the same turn here; the message says why."""
