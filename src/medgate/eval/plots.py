"""PNG figures for the experiment reports (matplotlib, non-interactive)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from medgate.eval.report import pyplot


def tradeoff(result: dict[str, Any]) -> Callable[[Path], None]:
    """Safety gain against escalation rate over the threshold grid, with the ceiling."""

    def draw(path: Path) -> None:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5.5, 4))
        pts = [
            (r["metrics"]["escalation_rate"], r["metrics"]["safety_gain"], r)
            for r in result["rows"]
            if r["metrics"]["safety_gain"] is not None
        ]
        grid = [(x, y) for x, y, r in pts if r["kind"] == "grid"]
        paper = [(x, y, r) for x, y, r in pts if r["kind"] == "paper"]
        if grid:
            ax.scatter(*zip(*grid, strict=True), s=12, alpha=0.5, label="grid")
        for x, y, r in paper:
            ax.scatter([x], [y], s=40, marker="s")
            ax.annotate(f"{r['tau_e']}/{r['tau_p']}", (x, y), fontsize=7)
        err = 1 - (result["rows"][0]["metrics"]["baseline_accuracy"] or 0)
        if err > 0:
            xs = [i / 100 for i in range(101)]
            ax.plot(xs, [min(1, x / err) for x in xs], "k--", lw=0.8, label="ceiling")
            # A gate escalating at random catches wrong answers at its escalation rate.
            ax.plot(xs, xs, ":", color="grey", lw=0.8, label="random escalation")
        ax.set_xlabel("escalation rate")
        ax.set_ylabel("safety gain")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=7)
        ax.set_title(f"{result['provenance']['dataset']}: safety gain vs escalation", fontsize=9)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    return draw


def risk_coverage_plot(result: dict[str, Any]) -> Callable[[Path], None]:
    def draw(path: Path) -> None:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5.5, 4))
        curve = result["selective"]["curve"]
        ax.plot(curve["coverage"], curve["risk"], lw=1.2)
        ax.set_xlabel("coverage (share answered, least risky first)")
        ax.set_ylabel("error among answered")
        ax.set_title(
            f"{result['provenance']['dataset']}: risk-coverage (AURC "
            f"{result['selective']['aurc']:.3f})",
            fontsize=9,
        )
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    return draw


def calibration_plot(result: dict[str, Any]) -> Callable[[Path], None]:
    def draw(path: Path) -> None:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for method, marker in (("conformal", "o"), ("paper-grid", "s")):
            xs, ys = [], []
            for row in result["alphas"]:
                t = row[method]["test"]
                if t["error_rate"] is not None:
                    xs.append(row["alpha"])
                    ys.append(t["error_rate"])
            ax.plot(xs, ys, marker=marker, label=f"{method} (test)")
        lim = max([r["alpha"] for r in result["alphas"]] + [0.5])
        ax.plot([0, lim], [0, lim], "k--", lw=0.8, label="error = alpha")
        ax.set_xlabel("target alpha")
        ax.set_ylabel("achieved test error among released")
        ax.legend(fontsize=7)
        ax.set_title(f"{result['dataset']}: calibration", fontsize=9)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    return draw
