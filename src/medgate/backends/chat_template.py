"""Tokenising a chat prompt so that only the template's own markup can be special tokens.

Chat templates mark turns with special tokens (``<|im_start|>system`` ...). If the whole rendered
prompt is tokenised with special tokens enabled, the same characters typed into a question, a
context, a patient field or an injected fact become real turn markers: a user could open a
``system`` turn of their own. :func:`encode_prompt` prevents that: when any message's text holds
control-token text, the prompt is tokenised in pieces, the template's markup with its special
tokens and every message's text as plain text.

A prompt whose messages hold no such text is tokenised whole, exactly as before: tokenising in
pieces would otherwise change ordinary prompts on tokenizers that mark the start of every
encoded text (sentencepiece's leading space), and with it every signal and verdict.

The pieces are found by rendering the template with a unique marker in place of each message's
text and splitting at the markers; the text itself is never passed through the template.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from medgate.backends.base import ChatMessage
from medgate.errors import ModelError

#: Renders chat turns (``{"role": ..., "content": ...}``) to the prompt text.
TemplateRenderer = Callable[[list[dict[str, str]]], str]

#: Tokenises a text; the flag says whether control-token text in it becomes special tokens.
Encoder = Callable[[str, bool], list[int]]


@dataclass(frozen=True)
class PromptPiece:
    """A stretch of the rendered prompt."""

    text: str
    markup: bool
    """True for the template's own text, whose special tokens are honoured; False for message
    text, which is always plain text."""


def prompt_pieces(render: TemplateRenderer, messages: Sequence[ChatMessage]) -> list[PromptPiece]:
    """The prompt ``render`` makes of ``messages``, as markup and message-text pieces in order.

    Raises :class:`ModelError` when the template does not place each message's text exactly
    once: the prompt could not then be split safely, and a gate must not guess.
    """
    nonce = secrets.token_hex(8)
    markers = [f"\x00medgate-{nonce}-{i}\x00" for i in range(len(messages))]
    rendered = render(
        [{"role": m.role, "content": marker} for m, marker in zip(messages, markers, strict=True)]
    )
    located: list[tuple[int, str, str]] = []
    for message, marker in zip(messages, markers, strict=True):
        at = rendered.find(marker)
        if at < 0 or rendered.find(marker, at + 1) >= 0:
            raise ModelError(
                f"the chat template does not place the {message.role} message's text exactly "
                "once, so its special tokens cannot be kept apart from the text"
            )
        located.append((at, marker, message.content))
    pieces: list[PromptPiece] = []
    pos = 0
    for at, marker, content in sorted(located):
        if at > pos:
            pieces.append(PromptPiece(rendered[pos:at], markup=True))
        if content:
            pieces.append(PromptPiece(content, markup=False))
        pos = at + len(marker)
    if pos < len(rendered):
        pieces.append(PromptPiece(rendered[pos:], markup=True))
    return pieces


def encode_prompt(
    render: TemplateRenderer,
    messages: Sequence[ChatMessage],
    encode: Encoder,
    *,
    whole: Callable[[str], list[int]] | None = None,
    split_prefix: Sequence[int] = (),
) -> list[int]:
    """The prompt's tokens, no message's text ever becoming a special token.

    ``whole`` tokenises the whole rendered prompt when that is safe (default: ``encode`` with
    special tokens); ``split_prefix`` goes before the pieces otherwise (a backend's BOS, which a
    whole encoding would have added itself).
    """
    if any(encode(m.content, True) != encode(m.content, False) for m in messages):
        pieces = prompt_pieces(render, messages)
        return [*split_prefix, *(t for p in pieces for t in encode(p.text, p.markup))]
    text = render([{"role": m.role, "content": m.content} for m in messages])
    return whole(text) if whole is not None else encode(text, True)


@dataclass(frozen=True)
class ChatTemplate:
    """A model's chat template with the token texts it is rendered with.

    Rendering goes through llama-cpp-python's ``Jinja2ChatFormatter``, the renderer of the
    in-process engine and of llama-cpp-python's server: a prompt rendered here is the text
    those render from the same messages.
    """

    template: str
    bos_token: str = ""
    eos_token: str = ""
    source: str = ""
    """Where the template was read from, for messages."""
    end_tokens: tuple[str, ...] = ()
    """Texts of the tokens that end generation (a GGUF's end-of-generation tokens; else the
    EOS and BOS texts), which a served answerer forbids before the minimum reasoning."""

    @functools.cached_property
    def formatter(self) -> Any:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        return Jinja2ChatFormatter(
            template=self.template, eos_token=self.eos_token, bos_token=self.bos_token
        )

    def render_turns(self, turns: list[dict[str, str]]) -> str:
        """The prompt text of ``turns``, ending with the assistant turn's opening."""
        try:
            return str(self.formatter(messages=turns).prompt)
        except Exception as exc:  # jinja2's errors: a template that does not fit the turns
            raise ModelError(f"the chat template from {self.source} failed: {exc}") from exc

    def render(self, messages: Sequence[ChatMessage]) -> str:
        return self.render_turns([m.model_dump() for m in messages])
