"""White-box models through Hugging Face transformers, on a GPU when there is one.

This is the backend for the HRS paper's setting (BioMistral-7B on a GPU). It implements
:class:`~medgate.backends.base.WhiteBoxModel`: chat through the tokenizer's chat template,
continuation with per-token log-probabilities, the answer slot, and a mean-pooled embedding.

torch and transformers are imported only when a model is loaded, so the rest of medgate works
without them; a missing install raises :class:`PrerequisiteError` with the command that fixes it.
Weights are read from a local directory or the local Hugging Face cache, never downloaded.

Efficiency: the prompt is run once and its key/value cache kept; every call with the same prompt
starts from a copy of that cache, so the greedy answer and the ambiguity samples each pay only
for their own tokens.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medgate.backends.base import (
    AnswerSlot,
    ChatMessage,
    ChatReply,
    Completion,
    DecodeParams,
    label_surface_forms,
    renormalise,
)
from medgate.backends.chat_template import encode_prompt
from medgate.errors import (
    ConfigError,
    ContextOverflowError,
    InputError,
    MedgateError,
    ModelError,
    PrerequisiteError,
)
from medgate.records import Usage

if TYPE_CHECKING:
    import torch

    from medgate.config import MedgateConfig

INSTALL_HINT = "pip install 'medgate[transformers]'"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")


def _require_torch() -> tuple[Any, Any]:
    """Import torch and transformers, or say how to install them."""
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise PrerequisiteError(
            f"the transformers backend needs torch and transformers ({exc.name} is missing); "
            f"install them with: {INSTALL_HINT}"
        ) from exc
    return torch, transformers


@dataclass
class _PromptState:
    """A prompt already run through the model: its cache and next-token logits."""

    ids: tuple[int, ...]
    cache: Any
    logits: torch.Tensor


@dataclass
class _Generation:
    ids: list[int]
    logprobs: list[float]
    text: str
    cache: Any
    fed: int
    """How many of ``ids`` the cache has seen."""
    logits: torch.Tensor
    """Next-token logits after the prompt and ``ids[:fed]``."""


class TransformersBackend:
    """A causal language model and its tokenizer, loaded with transformers."""

    def __init__(
        self,
        target: str,
        model: Any,
        tokenizer: Any,
        *,
        device: str,
        n_ctx: int = 2048,
        source: Path | None = None,
    ) -> None:
        self._target = target
        self._model = model
        self._tokenizer = tokenizer
        self._device = device
        self._n_ctx = n_ctx
        self._source = source
        self._lock = threading.Lock()
        self._prompt: _PromptState | None = None
        self._label_ids: dict[tuple[tuple[str, ...], str], dict[str, list[int]]] = {}
        self._pieces: list[str] | None = None
        self._fingerprint: str | None = None
        params = inspect.signature(model.forward).parameters
        # transformers 5 renamed ``past_key_values`` to ``cache``.
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._keep_last = "logits_to_keep" in params
        self._eos_ids = self._end_token_ids()

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def from_spec(cls, target: str, config: MedgateConfig) -> TransformersBackend:
        return cls.load(target, n_ctx=config.backend.n_ctx, n_threads=config.backend.n_threads)

    @classmethod
    def load(
        cls,
        target: str,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        device: str | None = None,
    ) -> TransformersBackend:
        """Load ``target``: a model directory, or a model id already in the local HF cache."""
        target = target.strip()
        if not target:
            raise ConfigError("the transformers backend needs a model, e.g. hf:/models/biomistral")
        torch, transformers = _require_torch()
        transformers.utils.logging.disable_progress_bar()
        path = Path(target).expanduser()
        looks_like_path = target.startswith(("/", ".", "~")) or path.exists()
        if looks_like_path and not path.is_dir():
            raise PrerequisiteError(f"no model directory at {path}")
        ref = str(path) if looks_like_path else target
        if n_threads:
            torch.set_num_threads(n_threads)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if device.startswith("cuda"):
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        else:
            dtype = torch.float32
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(ref, local_files_only=True)
            model = transformers.AutoModelForCausalLM.from_pretrained(
                ref, local_files_only=True, dtype=dtype
            )
        except (ValueError, KeyError) as exc:
            # e.g. an architecture this transformers release does not know
            raise ConfigError(f"cannot load {target} with transformers: {exc}") from exc
        except OSError as exc:
            if looks_like_path:
                raise PrerequisiteError(f"cannot load a model from {path}: {exc}") from exc
            raise PrerequisiteError(
                f"{target} is not in the local Hugging Face cache and medgate never downloads "
                f"weights at run time; fetch it once with: hf download {target}"
            ) from exc
        model.to(device)
        model.eval()
        return cls(
            target,
            model,
            tokenizer,
            device=device,
            n_ctx=n_ctx,
            source=path if looks_like_path else None,
        )

    # -- identity --------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return f"hf:{self._target}"

    @property
    def device(self) -> str:
        return self._device

    @property
    def fingerprint(self) -> str:
        """sha256 over the weight files and config (computed once, on first use)."""
        if self._fingerprint is None:
            self._fingerprint = self._hash_weights()
        return self._fingerprint

    def _hash_weights(self) -> str:
        folder = self._source or self._cached_snapshot()
        digest = hashlib.sha256()
        files = (
            sorted(
                p
                for p in folder.iterdir()
                if p.is_file() and (p.suffix in _WEIGHT_SUFFIXES or p.name == "config.json")
            )
            if folder is not None
            else []
        )
        if not any(p.suffix in _WEIGHT_SUFFIXES for p in files):
            # No files to read (unusual): identify by name and configuration only.
            config = json.dumps(self._model.config.to_dict(), sort_keys=True, default=str)
            return "config-sha256:" + hashlib.sha256(config.encode()).hexdigest()
        for file in files:
            digest.update(file.name.encode() + b"\0")
            with file.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        return "sha256:" + digest.hexdigest()

    def _cached_snapshot(self) -> Path | None:
        try:
            from huggingface_hub import snapshot_download

            return Path(snapshot_download(self._target, local_files_only=True))
        except Exception:  # no snapshot on disk: fall back to the configuration
            return None

    # -- the WhiteBoxModel protocol --------------------------------------------------------

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
        """Reply through the chat template. With ``json_schema`` the schema is stated in a
        system message; decoding is not constrained, so callers validate the JSON."""
        if json_schema is not None:
            instruction = ChatMessage(
                role="system",
                content="Reply with one JSON object only, matching this JSON schema:\n"
                + json.dumps(json_schema, sort_keys=True),
            )
            messages = [instruction, *messages]
        params = DecodeParams(max_tokens=max_tokens, temperature=temperature, seed=seed)
        started = time.perf_counter()
        with self._lock, self._errors_as_model_errors():
            prompt = self._prompt_ids(messages, params)
            generation = self._generate(self._prompt_state(prompt), params)
        usage = Usage(
            role=role,
            model=self.name,
            prompt_tokens=len(prompt),
            completion_tokens=len(generation.ids),
            seconds=time.perf_counter() - started,
        )
        return ChatReply(text=generation.text, usage=usage)

    def complete_batch(
        self, messages: Sequence[ChatMessage], params: Sequence[DecodeParams]
    ) -> list[Completion]:
        # Sequential: each call reuses the cached prompt state, so only new tokens are computed.
        return [self.complete(messages, p) for p in params]

    def complete(self, messages: Sequence[ChatMessage], params: DecodeParams) -> Completion:
        started = time.perf_counter()
        with self._lock, self._errors_as_model_errors():
            prompt = self._prompt_ids(messages, params)
            state = self._prompt_state(prompt)
            generation = self._generate(state, params)
            label_probs: dict[str, float] | None = None
            label_mass: float | None = None
            if params.answer_slot is not None:
                label_probs, label_mass = self._read_slot(state, generation, params.answer_slot)
        return Completion(
            text=generation.text,
            token_logprobs=generation.logprobs,
            label_probs=label_probs,
            label_mass=label_mass,
            prompt_tokens=len(prompt),
            seconds=time.perf_counter() - started,
        )

    def embed(self, text: str) -> list[float]:
        """Mean over positions of the last layer's hidden state (truncated to ``n_ctx``)."""
        import torch

        if not text.strip():
            raise InputError("cannot embed an empty text")
        with self._lock, self._errors_as_model_errors():
            ids = self._tokenizer.encode(text, add_special_tokens=True)[: self._n_ctx]
            with torch.no_grad():
                out = self._model(
                    input_ids=torch.tensor([ids], device=self._device), output_hidden_states=True
                )
                vector = out.hidden_states[-1][0].float().mean(dim=0)
            return [float(x) for x in vector.cpu().tolist()]

    # -- prompt ----------------------------------------------------------------------------

    def _prompt_ids(self, messages: Sequence[ChatMessage], params: DecodeParams) -> list[int]:
        if not messages:
            raise ModelError(f"{self.name}: no messages to continue")
        ids = self._encode_chat(messages)
        budget = len(ids) + params.max_tokens
        if params.answer_slot is not None:
            budget += len(self._encode(params.answer_slot.cue))
        if budget > self._n_ctx:
            raise ContextOverflowError(
                f"{self.name}: prompt of {len(ids)} tokens plus {params.max_tokens} to generate "
                f"exceeds the context of {self._n_ctx} (backend.n_ctx)",
                prompt_tokens=len(ids),
                limit=self._n_ctx - (budget - len(ids)),
            )
        return ids

    def _encode_chat(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The prompt's tokens; a message's text never becomes a special token (see
        :mod:`medgate.backends.chat_template`)."""
        if getattr(self._tokenizer, "chat_template", None):
            return encode_prompt(self._render_template, messages, self._encode_text)
        # A base model without a template: a plain transcript ending where the reply starts.
        bos = self._tokenizer.bos_token_id
        return encode_prompt(
            _transcript,
            messages,
            self._encode_text,
            whole=lambda text: list(self._tokenizer.encode(text, add_special_tokens=True)),
            split_prefix=[bos] if bos is not None else [],
        )

    def _render_template(self, turns: list[dict[str, str]]) -> str:
        try:
            text = self._tokenizer.apply_chat_template(
                turns, tokenize=False, add_generation_prompt=True
            )
        except Exception:
            # Some templates (Mistral's) refuse a system turn: fold it into the first user turn.
            text = self._tokenizer.apply_chat_template(
                _fold_system(turns), tokenize=False, add_generation_prompt=True
            )
        return str(text)

    def _encode_text(self, text: str, special: bool) -> list[int]:
        return list(
            self._tokenizer.encode(text, add_special_tokens=False, split_special_tokens=not special)
        )

    def _encode(self, text: str) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=False))

    def _prompt_state(self, ids: list[int]) -> _PromptState:
        """The prompt's cache, computed once and kept while calls repeat the same prompt."""
        key = tuple(ids)
        if self._prompt is None or self._prompt.ids != key:
            self._prompt = None  # free the old cache before building the new one
            import torch

            with torch.no_grad():
                out = self._model(
                    input_ids=torch.tensor([ids], device=self._device),
                    use_cache=True,
                    **({"logits_to_keep": 1} if self._keep_last else {}),
                )
            cache = out["cache"] if "cache" in out else out["past_key_values"]
            self._prompt = _PromptState(ids=key, cache=cache, logits=out.logits[0, -1])
        return self._prompt

    def _feed(self, ids: Sequence[int], cache: Any) -> torch.Tensor:
        """Run ``ids`` on top of ``cache`` (extended in place); the next-token logits."""
        import torch

        with torch.no_grad():
            out = self._model(
                input_ids=torch.tensor([list(ids)], device=self._device),
                use_cache=True,
                **{self._cache_kw: cache},
                **({"logits_to_keep": 1} if self._keep_last else {}),
            )
        logits: torch.Tensor = out.logits[0, -1]
        return logits

    # -- decoding --------------------------------------------------------------------------

    def _generate(self, state: _PromptState, params: DecodeParams) -> _Generation:
        import torch

        with torch.no_grad():
            cache = copy.deepcopy(state.cache)
        logits = state.logits
        generator: torch.Generator | None = None
        if params.temperature > 0 and params.seed is not None:
            generator = torch.Generator(device=self._device).manual_seed(params.seed)
        banned = self._banned_before(params) if params.min_tokens else []
        ids: list[int] = []
        logprobs: list[float] = []
        fed = 0
        text = ""
        stopped_at: int | None = None
        boundary = 0  # stop strings inside the first min_tokens do not end the reasoning
        for step in range(params.max_tokens):
            scores = logits.float()
            token_logprobs = torch.log_softmax(scores, dim=-1)
            if params.repeat_penalty != 1.0 and ids:
                window = sorted(set(ids[-params.repeat_last_n :]))
                recent = torch.tensor(window, device=scores.device)
                values = scores[recent]
                scores = scores.clone()
                scores[recent] = torch.where(
                    values > 0, values / params.repeat_penalty, values * params.repeat_penalty
                )
            if step < params.min_tokens and banned:
                scores = scores.clone()
                scores[banned] = float("-inf")
            if params.temperature == 0:
                token = int(torch.argmax(scores))
            else:
                probs = torch.softmax(scores / params.temperature, dim=-1)
                token = int(torch.multinomial(probs, 1, generator=generator))
            if token in self._eos_ids:
                break
            ids.append(token)
            logprobs.append(float(token_logprobs[token]))
            if params.stop and len(ids) >= params.min_tokens:
                text = self._decode(ids)
                if params.min_tokens and len(ids) == params.min_tokens:
                    boundary = len(text)
                found = [i for s in params.stop if s and (i := text.find(s, boundary)) >= 0]
                if found:
                    stopped_at = min(found)
                    break
            if step + 1 < params.max_tokens:
                logits = self._feed([token], cache)
                fed += 1
        if stopped_at is not None:
            keep = len(ids)
            while keep > 0 and len(self._decode(ids[:keep])) > stopped_at:
                keep -= 1
            ids, logprobs, text = ids[:keep], logprobs[:keep], text[:stopped_at]
        else:
            text = self._decode(ids)
        return _Generation(ids, logprobs, text, cache, fed, logits)

    def _decode(self, ids: Sequence[int]) -> str:
        return str(self._tokenizer.decode(list(ids), skip_special_tokens=True))

    def _end_token_ids(self) -> set[int]:
        ends: set[int] = set()
        for source in (getattr(self._model, "generation_config", None), self._tokenizer):
            value = getattr(source, "eos_token_id", None)
            if isinstance(value, int):
                ends.add(value)
            elif isinstance(value, list | tuple):
                ends.update(int(v) for v in value)
        return ends

    def _banned_before(self, params: DecodeParams) -> list[int]:
        """Tokens forbidden before ``min_tokens``: end of turn, and any token that holds a
        whole stop string."""
        banned = set(self._eos_ids)
        stops = [s for s in params.stop if s]
        if stops:
            if self._pieces is None:
                vocab = len(self._tokenizer)
                self._pieces = [self._tokenizer.decode([i]) for i in range(vocab)]
            banned.update(
                i for i, piece in enumerate(self._pieces) if any(s in piece for s in stops)
            )
        vocab_size = int(self._model.get_output_embeddings().weight.shape[0])
        return sorted(i for i in banned if 0 <= i < vocab_size)

    # -- the answer slot -------------------------------------------------------------------

    def _read_slot(
        self, state: _PromptState, generation: _Generation, slot: AnswerSlot
    ) -> tuple[dict[str, float], float]:
        """Append the cue after the generated text and read the labels' next-token mass."""
        import torch

        cue = self._encode(slot.cue)
        cache, fed, logits = generation.cache, generation.fed, generation.logits
        if fed > len(generation.ids):
            # A stop string cut tokens the cache has already seen: restart from the prompt.
            with torch.no_grad():
                cache = copy.deepcopy(state.cache)
            fed, logits = 0, state.logits
        pending = [*generation.ids[fed:], *cue]
        if pending:
            logits = self._feed(pending, cache)
        probs = torch.softmax(logits.float(), dim=-1)
        weights = {
            label: float(probs[ids].sum()) if ids else 0.0
            for label, ids in self._slot_token_ids(slot).items()
        }
        return renormalise(weights), sum(weights.values())

    def _slot_token_ids(self, slot: AnswerSlot) -> dict[str, list[int]]:
        """For each label, the first tokens of its surface forms when they follow the cue.

        The form is tokenised after the cue (``"Answer: yes"``) rather than alone, because many
        tokenizers encode a word differently at the start of a text. A token that begins forms
        of two labels belongs to neither.
        """
        key = (slot.labels, slot.cue)
        if key in self._label_ids:
            return self._label_ids[key]
        anchor = self._encode(slot.cue)
        special = set(getattr(self._tokenizer, "all_special_ids", []) or [])
        owners: dict[int, set[str]] = {}
        for label in slot.labels:
            for form in label_surface_forms(label):
                first = self._first_token_after(anchor, self._encode(slot.cue + form), form)
                if first is not None and first not in special:
                    owners.setdefault(first, set()).add(label)
        table: dict[str, list[int]] = {label: [] for label in slot.labels}
        for token, labels in sorted(owners.items()):
            if len(labels) == 1:
                table[next(iter(labels))].append(token)
        missing = [label for label, ids in table.items() if not ids]
        if missing:
            raise ModelError(
                f"{self.name}: the tokenizer cannot tell the label(s) {missing} apart at the "
                "answer slot"
            )
        self._label_ids[key] = table
        return table

    def _first_token_after(self, anchor: list[int], full: list[int], form: str) -> int | None:
        common = 0
        while common < min(len(anchor), len(full)) and anchor[common] == full[common]:
            common += 1
        if common == len(anchor) and common < len(full):
            return full[common]
        # The form merged into the cue's last token: fall back to the form on its own.
        alone = self._encode(form)
        return alone[0] if alone else None

    # -- errors ----------------------------------------------------------------------------

    @contextmanager
    def _errors_as_model_errors(self) -> Iterator[None]:
        """Anything that goes wrong inside torch (out of memory, a bad template, ...) becomes a
        ModelError, which the gate turns into an escalation."""
        try:
            yield
        except MedgateError:
            raise
        except Exception as exc:
            raise ModelError(f"{self.name}: {type(exc).__name__}: {exc}") from exc


def _transcript(turns: list[dict[str, str]]) -> str:
    lines = [f"{t['role'].capitalize()}: {t['content']}" for t in turns]
    return "\n\n".join([*lines, "Assistant:"])


def _fold_system(turns: list[dict[str, str]]) -> list[dict[str, str]]:
    system = "\n\n".join(t["content"] for t in turns if t["role"] == "system")
    rest = [dict(t) for t in turns if t["role"] != "system"]
    if system:
        if rest and rest[0]["role"] == "user":
            rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
        else:
            rest.insert(0, {"role": "user", "content": system})
    return rest
