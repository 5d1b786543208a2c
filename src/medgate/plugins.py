"""Finding medgate's components by name: one entry-point group per kind of component.

Model backends, HRS signals, orchestrators, CareGuard judges, evaluation datasets and gate
profiles are each listed under an entry-point group (``medgate.backends``, ``medgate.signals``,
...). medgate lists its own in its ``pyproject.toml`` exactly as a plugin package lists its
own, so a built-in component and a plugin are found the same way, and there is no hand-kept
table of classes, no registering decorator and no import string (see docs/extending.md).

Nothing is imported until a component is asked for by name, so ``medgate --help`` and a gate
that does not use a backend never import that backend's heavy dependencies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

from medgate.errors import ConfigError, PrerequisiteError

T = TypeVar("T")


def _install_the_provider(name: str, group: str) -> str:
    return f"install the package that provides it (entry point {name!r} in {group!r})"


class Registry(Generic[T]):
    """The components of one kind, by name."""

    def __init__(
        self,
        group: str,
        kind: str,
        *,
        install_hint: Callable[[str, str], str] = _install_the_provider,
    ) -> None:
        self.group = group
        self.kind = kind
        self._install_hint = install_hint

    def _entries(self) -> dict[str, EntryPoint]:
        return {ep.name: ep for ep in entry_points(group=self.group)}

    def names(self) -> list[str]:
        """Every registered name, sorted (nothing is imported)."""
        return sorted(self._entries())

    def targets(self) -> dict[str, str]:
        """Each name and the import path that provides it (nothing is imported)."""
        return {name: ep.value for name, ep in sorted(self._entries().items())}

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def get(self, name: str) -> T | None:
        """The component registered as ``name``, or None when there is none."""
        return self.load(name) if name in self else None

    def load(self, name: str) -> T:
        """The component registered as ``name``; a clear error when there is none."""
        entry = self._entries().get(name)
        if entry is None:
            known = ", ".join(self.names()) or (
                "none (is medgate installed? reinstall it: pip install -e . or make setup)"
            )
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {known}")
        try:
            found: T = entry.load()
        except ImportError as exc:
            raise PrerequisiteError(
                f"the {name!r} {self.kind} could not be imported ({exc}); "
                f"{self._install_hint(name, self.group)}"
            ) from exc
        return found

    def load_all(self) -> dict[str, T]:
        """Every registered component, imported (for listing what each one declares)."""
        return {name: self.load(name) for name in self.names()}
