"""Installing a plugin for a test: a distribution's metadata with its entry points, in a directory
that is then put on ``sys.path`` (or ``PYTHONPATH``), exactly as pip would leave it."""

from __future__ import annotations

from pathlib import Path


def install_plugin(root: Path, name: str, entry_points: dict[str, dict[str, str]]) -> Path:
    """Write ``name``'s dist-info under ``root``, registering ``entry_points`` (group -> name ->
    'module:attribute'); returns ``root`` for ``sys.path``."""
    dist = root / f"{name.replace('-', '_')}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = []
    for group, entries in entry_points.items():
        lines.append(f"[{group}]")
        lines.extend(f"{key} = {target}" for key, target in entries.items())
        lines.append("")
    (dist / "entry_points.txt").write_text("\n".join(lines))
    return root
