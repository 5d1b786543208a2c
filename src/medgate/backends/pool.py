"""The models one assembled gate uses, each loaded once, and which role each one serves.

Roles configured with the same spec (say the answerer and the orchestrator on the embedded model)
share one loaded model. The pool remembers which role asked for which spec, so that a case's
record can say exactly which model (and which weights) played each part.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from medgate.backends.base import LanguageModel, WhiteBoxModel
from medgate.backends.openai import OpenAIBackend
from medgate.backends.registry import create_model
from medgate.backends.served import ServedAnswerer
from medgate.config import MedgateConfig
from medgate.errors import ConfigError
from medgate.records import Record


def forget_prompts(models: Iterable[object]) -> None:
    """Make each model that keeps prompt state (llama.cpp) read its next prompt from scratch.

    llama.cpp reuses the prefix a prompt shares with the one before it and decodes the rest in
    batches placed differently from a fresh read, so a prompt's numbers (and, through a greedy
    token that flips, a whole draft) would depend on what the process was asked before. Called
    before each case, a case decides the same way whether it is the first of a run, comes after
    a resume, or follows any other case. The price is re-reading what a case's first prompt
    shares with the one before (a few dozen tokens of instructions), small beside a case's
    generation.
    """
    for model in models:
        forget = getattr(model, "forget_prompt", None)
        if callable(forget):
            forget()


class ModelInfo(Record):
    """One model as a case record names it."""

    spec: str = Field(
        description="The model spec as configured (e.g. 'embedded:qwen2.5-coder-0.5b')."
    )
    name: str = Field(description="The loaded model's own name.")
    fingerprint: str | None = Field(
        default=None,
        description="The exact weights (a sha256) where medgate can see them; None for a model "
        "behind a server.",
    )


class ModelPool:
    """Creates each configured model once and hands the same instance to every role using it."""

    def __init__(self, config: MedgateConfig) -> None:
        self.config = config
        self._models: dict[str, LanguageModel] = {}
        self._served: dict[str, WhiteBoxModel] = {}
        self._roles: dict[str, str] = {}

    def get(self, spec: str, *, role: str | None = None) -> LanguageModel:
        """The model ``spec`` names, loaded on first use; ``role`` says what it is used for."""
        if spec not in self._models:
            self._models[spec] = create_model(spec, self.config)
        if role is not None:
            self._roles[role] = spec
        return self._models[spec]

    def white_box(self, spec: str, *, role: str | None = None) -> WhiteBoxModel:
        """The model ``spec`` names, which must let medgate read its probabilities.

        A model behind an OpenAI-compatible server (``openai:``) is read as a grey box
        (:class:`~medgate.backends.served.ServedAnswerer`), sharing the role's HTTP client,
        with the chat template ``backend.chat_template`` names (if any).
        """
        model = self.get(spec, role=role)
        if isinstance(model, WhiteBoxModel):
            return model
        if isinstance(model, OpenAIBackend):
            if spec not in self._served:
                from medgate.backends.llamacpp import load_chat_template

                source = self.config.backend.chat_template
                template = load_chat_template(source, self.config.cache_dir) if source else None
                self._served[spec] = ServedAnswerer(model, template)
            return self._served[spec]
        raise ConfigError(
            f"{spec} cannot be the {role or 'answerer'}: the HRS signals need a white-box "
            "backend (llamacpp, embedded, transformers) or an OpenAI-compatible server (openai:)"
        )

    def forget_prompts(self) -> None:
        """Every loaded model reads its next prompt from scratch (:func:`forget_prompts`)."""
        forget_prompts([*self._models.values(), *self._served.values()])

    def roles(self) -> dict[str, ModelInfo]:
        """Each role asked for so far, and the model serving it."""
        return {role: self.info(spec) for role, spec in self._roles.items()}

    def info(self, spec: str) -> ModelInfo:
        model = self._models[spec]
        fingerprint = model.fingerprint if isinstance(model, WhiteBoxModel) else None
        return ModelInfo(spec=spec, name=model.name, fingerprint=fingerprint)
