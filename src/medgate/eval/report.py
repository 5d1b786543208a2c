"""Writing experiment outputs (JSON + Markdown + PNG) and assembling the report."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Figure = Callable[[Path], None]


def fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def write_outputs(
    out_dir: Path,
    name: str,
    data: dict[str, Any],
    markdown: str,
    figures: dict[str, Figure] | None = None,
) -> list[Path]:
    """``NAME.json``, ``NAME.md`` and ``NAME_<fig>.png`` in ``out_dir``; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.json", out_dir / f"{name}.md"]
    paths[0].write_text(json.dumps(data, indent=2, default=str) + "\n")
    figs = figures or {}
    md = markdown.rstrip() + "\n"
    for fig_name, draw in figs.items():
        png = out_dir / f"{name}_{fig_name}.png"
        draw(png)
        paths.append(png)
        md += f"\n![{fig_name}]({png.name})\n"
    paths[1].write_text(md)
    return paths


def pyplot() -> Any:
    """matplotlib's pyplot on the non-interactive backend (imported only when plotting)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: Order and titles of the sections in the assembled report.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("README", "How these results were produced"),
    ("table2_", "Table 2: threshold sensitivity"),
    ("selective_", "Selective prediction: AUROC, risk-coverage, accuracy at coverage"),
    ("table3_", "Table 3: orchestrator comparison"),
    ("table4_", "Table 4: Mann-Whitney U per signal"),
    ("table5_", "Table 5: multi-seed robustness"),
    ("table6_", "Table 6: leave-one-signal-out"),
    ("table7_", "Table 7: dataset complexity (six classifiers)"),
    ("table8_", "Table 8: classifiers on escalated cases"),
    ("calibration_", "Calibration: conformal risk control"),
    ("eval_hrs_", "Single runs"),
)


def assemble(results_dir: Path, out: Path) -> Path:
    """One Markdown report from the committed ``*.md`` results, in :data:`SECTIONS` order."""
    files = sorted(p for p in results_dir.glob("*.md") if p.resolve() != out.resolve())
    parts = ["# medgate HRS evaluation report", ""]
    parts.append(
        "Assembled by `medgate eval report` from the result files in this folder; every table "
        "below names the command that produced it."
    )
    used: set[Path] = set()
    for prefix, title in SECTIONS:
        chosen = [p for p in files if p.name.startswith(prefix) and p not in used]
        if prefix == "README":
            chosen = [p for p in files if p.stem == "README" and p not in used]
        if not chosen:
            continue
        parts += ["", f"## {title}", ""]
        for p in chosen:
            used.add(p)
            body = p.read_text().strip()
            body = _demote(body)
            parts += [body, ""]
    out.write_text("\n".join(parts).rstrip() + "\n")
    return out


def _demote(body: str) -> str:
    """Shift headings so the file's top heading becomes level 3, under its section."""
    levels = [
        len(line) - len(line.lstrip("#")) for line in body.split("\n") if line.startswith("#")
    ]
    shift = 3 - min(levels) if levels else 0
    if shift <= 0:
        return body
    return "\n".join(
        "#" * shift + line if line.startswith("#") else line for line in body.split("\n")
    )
