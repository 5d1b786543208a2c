"""The risk rule's tables: one JSON per test set, a Markdown report, and the README's block.

The JSON's ``headline`` is exactly what :func:`medgate.eval.risk_eval.headline` computes from
the committed item lines, which is what ``scripts/recompute_results.py`` checks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from medgate.eval.calibrate import now
from medgate.eval.report import fmt, md_table, pct
from medgate.hrs.risk import LoadedRiskModel

README_BEGIN = "<!-- risk-results:begin (written by medgate eval risk --write) -->"
README_END = "<!-- risk-results:end -->"
SIGNAL_COLUMNS = ("entropy", "perplexity", "ambiguity", "rarity", "token_length", "combined")


def slug(dataset: str) -> str:
    """A dataset's name as a file name (``jsonl:PATH`` names hold slashes)."""
    return "".join(c if c.isalnum() or c in "-." else "_" for c in dataset)


def table_path(out: Path, dataset: str) -> Path:
    return out / f"risk_{slug(dataset)}.json"


def items_path(out: Path, dataset: str) -> Path:
    return out / "items" / f"{slug(dataset)}_test.jsonl.gz"


def _ci(a: dict[str, Any]) -> str:
    if a["value"] is None:
        return "n/a"
    ci = a["ci"]
    return f"{a['value']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{a['value']:.2f}"


def _err(rule: dict[str, Any]) -> str:
    if rule["error_rate"] is None:
        return "n/a (none released)"
    lo, hi = rule["error_ci"]
    return f"{pct(rule['error_rate'])} [{pct(lo)}, {pct(hi)}] ({rule['errors']}/{rule['released']})"


def _model_line(m: LoadedRiskModel) -> str:
    op = m.model.operating_point
    return (
        f"`{m.id}` (sha256 `{m.origin.sha256}`): feature set `{m.model.feature_set}`, "
        f"threshold {op.threshold:.4f} ({op.method}, alpha {op.alpha}, delta {op.delta})"
    )


def dataset_rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    for ds, t in result["tests"].items():
        h = t["headline"]
        ours, paper = h["risk_rule"], h["paper_rule"]
        rows.append(
            [
                ds,
                str(h["n"]),
                pct(h["baseline_accuracy"]),
                _ci(h["risk_auroc"]),
                pct(ours["escalation_rate"]),
                pct(ours["safety_gain"]),
                fmt(ours["lift"], 2),
                _err(ours),
                pct(paper["escalation_rate"]),
                pct(paper["safety_gain"]),
                fmt(paper["lift"], 2),
            ]
        )
    return rows


HEADER = [
    "dataset",
    "items",
    "baseline acc.",
    "risk AUROC [95% CI]",
    "risk rule: escalated",
    "safety gain",
    "lift",
    "error of released [95% CI]",
    "paper rule: escalated",
    "safety gain",
    "lift",
]


def signal_rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    for ds, t in result["tests"].items():
        h = t["headline"]
        rows.append(
            [ds, _ci(h["risk_auroc"]), *(_ci(h["signal_auroc"][s]) for s in SIGNAL_COLUMNS)]
        )
    return rows


def feature_set_rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    for m in result["models"]:
        fs = m.model.feature_set
        tests = [_ci(t["feature_sets"][fs]["risk_auroc"]) for t in result["tests"].values()]
        rows.append(
            [
                fs,
                str(len(m.model.features)),
                fmt(m.model.regularisation_c, 3),
                fmt(m.model.cv_auroc, 3),
                fmt(m.model.calibration_auroc, 3),
                *tests,
            ]
        )
    return rows


def coefficient_rows(m: LoadedRiskModel) -> list[list[str]]:
    coef = m.model.standardised_coefficients()
    ordered = sorted(coef.items(), key=lambda kv: -abs(kv[1]))
    return [[name, f"{value:+.3f}"] for name, value in ordered]


def alpha_rows(m: LoadedRiskModel) -> list[list[str]]:
    return [
        [
            fmt(op.alpha, 2),
            "yes" if op.certified else "no",
            f"{op.threshold:.4f}",
            f"{op.released}/{op.n}",
            pct(op.error_rate),
        ]
        for op in m.model.operating_points
    ]


def incomplete(result: dict[str, Any]) -> list[str]:
    """The recordings that hold fewer items than the run asked for."""
    cfg, out = result["config"], []
    for ds, r in result["recordings"].items():
        for part, limit in (("train", cfg.get("train_limit")), ("test", cfg.get("test_limit"))):
            n = int(r.get(f"{part}_items", "0"))
            if limit and n < limit:
                out.append(f"{ds} {part} {n}/{limit}")
    return out


def summary_markdown(result: dict[str, Any]) -> str:
    """The block the README carries: the default model and the headline table."""
    default = result["default"]
    missing = incomplete(result)
    lines = [
        *(
            [
                "**Preliminary: the recordings are incomplete** (items recorded / asked for: "
                + ", ".join(missing)
                + "); the figures below are for the items recorded, not for the full splits.",
                "",
            ]
            if missing
            else []
        ),
        f"Written by `{result['command']}` on {now()[:10]} (UTC). Deployed default risk model: "
        f"{_model_line(default)}, fitted on {default.model.fitted_on}.",
        "",
        md_table(HEADER, dataset_rows(result)),
        "",
        "AUROC for a wrong baseline answer, the risk model beside every single signal (95% "
        "bootstrap CIs):",
        "",
        md_table(["dataset", "risk", *SIGNAL_COLUMNS], signal_rows(result)),
    ]
    return "\n".join(lines)


def report_markdown(result: dict[str, Any]) -> str:
    default = result["default"]
    cfg = result["config"]
    parts = [
        "# The risk rule on the embedded model",
        "",
        f"Command: `{result['command']}`; {now()} (UTC). Model `{cfg['model']}`, sha256 "
        f"`{default.model.model_fingerprint}`. Recordings (K={cfg['K']}, every round, BM25 "
        "retrieval over training contexts): "
        + "; ".join(
            f"{ds}: `{r['train']}` ({r['train_items']} training items) / `{r['test']}` "
            f"({r['test_items']} test items)"
            for ds, r in result["recordings"].items()
        )
        + ".",
        "",
        f"Fitted on: {default.model.fitted_on}.",
        "",
        "Share of the facts retrieved into training items that come from the item's own "
        "abstract (the corpus is the training contexts; a test item never retrieves its own): "
        + ", ".join(f"{ds} {r['own_context_share']}" for ds, r in result["recordings"].items())
        + ". Round features shift between training and test by as much.",
        "",
        "## On the test splits",
        "",
        summary_markdown(result),
        "",
        "## Feature sets (AUROC; CV and calibration on training items, test for reading only)",
        "",
        md_table(
            [
                "feature set",
                "features",
                "C",
                "CV AUROC",
                "calibration AUROC",
                *(f"test {ds}" for ds in result["tests"]),
            ],
            feature_set_rows(result),
        ),
        *(
            f"\nFeature set `{fs}`: {why}."
            for fs, why in result.get("skipped_feature_sets", {}).items()
        ),
        "",
        "## The deployed model's standardised coefficients (per standard deviation)",
        "",
        md_table(["feature", "coefficient"], coefficient_rows(default)),
        "",
        "## Its operating points on the calibration items",
        "",
        md_table(["alpha", "certified", "threshold", "released", "error"], alpha_rows(default)),
    ]
    parts += [
        "",
        "## What a decision costs (median seconds per test item, as recorded)",
        "",
        md_table(
            ["dataset", "first probe (the baseline risk rule)", "every round (K=2)"],
            [
                [ds, fmt(t["seconds"]["first_probe_s"], 1), fmt(t["seconds"]["all_rounds_s"], 1)]
                for ds, t in result["tests"].items()
            ],
        ),
    ]
    grid = default.model.grid
    if grid is not None:
        parts += [
            "",
            f"Paper-style grid optimum at alpha {default.model.operating_point.alpha}: "
            f"tau_e/tau_p {grid.gate_e}/{grid.gate_p} ({grid.method}; calibration "
            f"{grid.released}/{grid.n} released, error {pct(grid.error_rate)}).",
        ]
    return "\n".join(parts) + "\n"


def write_report(result: dict[str, Any], out: Path, readme: Path | None = None) -> list[Path]:
    """The per-dataset JSON tables, ``risk_report.md``, and the README block when ``readme``
    holds its markers."""
    out.mkdir(parents=True, exist_ok=True)
    default = result["default"]
    paths = []
    for ds, t in result["tests"].items():
        data = {
            "dataset": ds,
            "command": result["command"],
            "written_at": now(),
            "risk_model": {
                "id": default.id,
                "sha256": default.origin.sha256,
                "feature_set": default.model.feature_set,
                "operating_point": default.model.operating_point.model_dump(),
            },
            "recording": result["recordings"][ds],
            "items": str(items_path(out, ds).relative_to(out)),
            "headline": t["headline"],
            "feature_sets": t["feature_sets"],
        }
        path = table_path(out, ds)
        path.write_text(json.dumps(data, indent=2) + "\n")
        paths.append(path)
    report = out / "risk_report.md"
    report.write_text(report_markdown(result))
    paths.append(report)
    if readme is not None and readme.is_file():
        text = readme.read_text()
        if README_BEGIN in text and README_END in text:
            head, rest = text.split(README_BEGIN, 1)
            _, tail = rest.split(README_END, 1)
            block = f"{README_BEGIN}\n{summary_markdown(result)}\n{README_END}"
            readme.write_text(head + block + tail)
            paths.append(readme)
    return paths
