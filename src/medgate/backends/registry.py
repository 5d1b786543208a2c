"""Finding a backend for a model spec.

A spec is ``BACKEND:TARGET`` (``llamacpp:/models/x.gguf``, ``hf:BioMistral/BioMistral-7B``,
``openai:gpt-4o-mini``, ``embedded:qwen2.5-coder-0.5b``) or a bare path to a ``.gguf`` file.
Backends are found through the ``medgate.backends`` entry-point group, the same way for the
built-in ones and for third-party plugins.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Protocol

from medgate.errors import ConfigError
from medgate.plugins import Registry

if TYPE_CHECKING:
    from medgate.backends.base import LanguageModel
    from medgate.config import MedgateConfig

ENTRY_POINT_GROUP = "medgate.backends"


class BackendFactory(Protocol):
    """What an entry point in ``medgate.backends`` must resolve to."""

    @classmethod
    def from_spec(cls, target: str, config: MedgateConfig) -> LanguageModel: ...


def _install_extra(backend: str, group: str) -> str:
    return f"install it with: pip install 'medgate[{backend}]'"


BACKENDS: Registry[BackendFactory] = Registry(
    ENTRY_POINT_GROUP, "model backend", install_hint=_install_extra
)


@cache
def available_backends() -> dict[str, str]:
    """Backend names and the import paths that provide them (nothing is imported)."""
    return BACKENDS.targets()


def split_spec(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o"`` -> ``("openai", "gpt-4o")``; a bare ``.gguf`` path -> llamacpp."""
    spec = spec.strip()
    if not spec:
        raise ConfigError("the model spec is empty")
    if spec.lower().endswith(".gguf") and not spec.startswith("llamacpp:"):
        return "llamacpp", spec
    backend, sep, target = spec.partition(":")
    return backend, target if sep else ""


def load_factory(backend: str) -> BackendFactory:
    """Import the factory for ``backend``, explaining what to install when it is missing."""
    return BACKENDS.load(backend)


def create_model(spec: str, config: MedgateConfig) -> LanguageModel:
    """Build the model a spec names."""
    backend, target = split_spec(spec)
    return load_factory(backend).from_spec(target, config)
