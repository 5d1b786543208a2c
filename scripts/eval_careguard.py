"""Evaluate CareGuard and write docs/results/careguard.{md,json}.

    PYTHONPATH=src MEDGATE_DATA_DIR=../shared/data python scripts/eval_careguard.py run \\
        --dataset patient --config main --limit 60
    PYTHONPATH=src python scripts/eval_careguard.py report

``run`` appends one JSON line per question to docs/results/careguard_runs/<dataset>_<config>.jsonl
and skips questions already there, so an interrupted run resumes where it stopped. A question
that comes back NEEDS_CONTEXT is resumed with the default screening answers (as a patient would
answer) and both calls count toward its latency. ``report`` only reads those files.

Datasets: ``patient`` (our questions, src/medgate/careguard/data/patient_questions.jsonl; --limit
takes them round-robin over categories) and ``msb`` (MedSafetyBench train, harmful requests;
--limit takes evenly spaced rows). Configs: ``main`` and the ablations ``no_controller``,
``no_sra``, ``no_hra``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medgate.backends.pool import ModelPool
from medgate.careguard.build import build_careguard
from medgate.careguard.evaluation import (
    DEFAULT_ANSWERS,
    EvalItem,
    ItemResult,
    Metrics,
    load_items,
    metrics,
    read_results,
    rescore,
    score_item,
    spread,
)
from medgate.careguard.gate import screening_questions
from medgate.config import load_config
from medgate.records import Case, Status

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "results"
RUNS = OUT / "careguard_runs"
PATIENT = ROOT / "src" / "medgate" / "careguard" / "data" / "patient_questions.jsonl"
COMMAND = "PYTHONPATH=src MEDGATE_DATA_DIR=../shared/data python scripts/eval_careguard.py"

CONFIGS: dict[str, dict[str, Any]] = {
    "main": {},
    "no_controller": {"use_controller": False},
    "no_sra": {"use_sra": False},
    "no_hra": {"use_hra": False},
}


def dataset_path(name: str) -> Path:
    if name == "patient":
        return PATIENT
    data = Path(os.environ.get("MEDGATE_DATA_DIR") or load_config().data_dir)
    return data / "medsafetybench" / "medsafetybench_train.jsonl"


def run_one(gate: Any, item: EvalItem, config: str) -> ItemResult:
    t0 = time.perf_counter()
    verdict = gate.check(Case(question=item.question, case_id=item.id))
    asked: list[str] = []
    patient: dict[str, str] = {}
    # Screening asks at most a few questions at a time, so answering may reveal more.
    for _ in range(3):
        if verdict.status is not Status.NEEDS_CONTEXT:
            break
        fields = [q.field.value for q in screening_questions(verdict)]
        asked.extend(fields)
        patient.update({f: DEFAULT_ANSWERS[f] for f in fields})
        verdict = gate.check(Case(question=item.question, case_id=item.id, patient=patient))
    return score_item(item, config, verdict, asked, time.perf_counter() - t0)


def cmd_run(args: argparse.Namespace) -> None:
    items = spread(
        load_items(dataset_path(args.dataset), args.dataset), args.limit, args.dataset == "patient"
    )
    if args.ids:
        wanted = args.ids.split(",")
        items = [i for i in items if i.id in wanted]
    overrides = dict(CONFIGS[args.config])
    if args.max_refinements is not None:
        overrides["max_refinements"] = args.max_refinements
    config = load_config(careguard=overrides)
    pool = ModelPool(config)
    gate = build_careguard(config, pool)
    RUNS.mkdir(parents=True, exist_ok=True)
    path = RUNS / f"{args.dataset}_{args.config}.jsonl"
    done = {r.id for r in read_results(path)}
    todo = [i for i in items if i.id not in done]
    print(f"{path.name}: {len(done)} done, {len(todo)} to run", flush=True)
    meta_path = RUNS / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    model = pool.get(config.model)
    meta[path.stem] = {
        "command": f"{COMMAND} run --dataset {args.dataset} --config {args.config}"
        + (f" --limit {args.limit}" if args.limit else "")
        + (f" --ids {args.ids}" if args.ids else "")
        + (
            f" --max-refinements {args.max_refinements}" if args.max_refinements is not None else ""
        ),
        "model": config.model,
        "model_sha256": getattr(model, "fingerprint", None),
        "careguard": config.careguard.model_dump(mode="json"),
        "limit": args.limit,
        "started": meta.get(path.stem, {}).get("started")
        or datetime.now(UTC).isoformat(timespec="seconds"),
        "host": f"{platform.machine()} {os.cpu_count()} cpus",
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    for k, item in enumerate(todo, 1):
        result = run_one(gate, item, args.config)
        with path.open("a", encoding="utf-8") as f:
            f.write(result.model_dump_json() + "\n")
        print(
            f"[{k}/{len(todo)}] {item.id} {result.status.value} {result.outcome} "
            f"rounds={len(result.rounds)} {result.seconds:.0f}s viol={result.violations}",
            flush=True,
        )
    meta = json.loads(meta_path.read_text())
    meta[path.stem]["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")


def fmt(value: float | int | None) -> str:
    return "n/a" if value is None else f"{value}"


ROWS: tuple[tuple[str, str], ...] = (
    ("n", "questions"),
    ("correct_rate", "right outcome"),
    ("answered_rate", "answered (released/refined)"),
    ("benign_answered_rate", "benign answered"),
    ("risky_answered_rate", "answerable risky questions answered"),
    ("deployable_rate", "deployable (final draft SRA<=2, HRA<=2)"),
    ("first_draft_deployable_rate", "deployable at first draft"),
    ("violation_rate", "violation rate"),
    ("mean_sra_before", "mean SRA, first draft"),
    ("mean_sra_after", "mean SRA, final draft"),
    ("mean_hra_before", "mean HRA, first draft"),
    ("mean_hra_after", "mean HRA, final draft"),
    ("iterations_per_query", "refinements per generated query"),
    ("screening_rate", "asked screening questions"),
    ("evaluator_failures", "evaluator failures (scored 5)"),
    ("latency_mean_s", "latency mean (s)"),
    ("latency_median_s", "latency median (s)"),
    ("latency_max_s", "latency max (s)"),
)


def table(columns: dict[str, Metrics]) -> str:
    head = "| | " + " | ".join(columns) + " |\n|---|" + "---|" * len(columns)
    lines = [head]
    for key, label in ROWS:
        cells = [fmt(getattr(m, key)) for m in columns.values()]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    statuses = sorted({s for m in columns.values() for s in m.status})
    for s in statuses:
        lines.append(
            f"| status {s} | "
            + " | ".join(str(m.status.get(s, 0)) for m in columns.values())
            + " |"
        )
    return "\n".join(lines)


def cmd_report(_: argparse.Namespace) -> None:
    meta_path = RUNS / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    runs: dict[str, list[ItemResult]] = {}
    for path in sorted(RUNS.glob("*.jsonl")):
        runs[path.stem] = [rescore(r) for r in read_results(path)]
    summary: dict[str, Any] = {"generated": datetime.now(UTC).isoformat(timespec="seconds")}
    summary["runs"] = {}
    for name, results in runs.items():
        m = metrics(results)
        by_cat: dict[str, Any] = {}
        for cat in sorted({r.category.value for r in results}):
            sub = [r for r in results if r.category.value == cat]
            by_cat[cat] = {
                "n": len(sub),
                "right_outcome": sum(r.correct for r in sub),
                "statuses": {
                    s: sum(1 for r in sub if r.status.value == s)
                    for s in {r.status.value for r in sub}
                },
            }
        summary["runs"][name] = {
            "meta": meta.get(name, {}),
            "metrics": m.model_dump(mode="json"),
            "by_category": by_cat,
            "wall_time_s": round(sum(r.seconds for r in results), 1),
        }
    (OUT / "careguard.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (OUT / "careguard.md").write_text(markdown(summary, runs), encoding="utf-8")
    print(f"wrote {OUT / 'careguard.json'} and {OUT / 'careguard.md'}")


def markdown(summary: dict[str, Any], runs: dict[str, list[ItemResult]]) -> str:
    """Tables from the run files, then the hand-written notes (docs/results/careguard_notes.md)."""
    parts = [
        "# CareGuard evaluation",
        "",
        f"Generated {summary['generated']} by `{COMMAND} report`.",
    ]
    parts += [
        "",
        "## Runs",
        "",
        "| run | items | wall time (s) | model sha256 | command |",
        "|---|---|---|---|---|",
    ]
    for name, info in summary["runs"].items():
        meta = info["meta"]
        sha = (meta.get("model_sha256") or "n/a")[:16]
        parts.append(
            f"| {name} | {info['metrics']['n']} | {info['wall_time_s']} | {sha}... | "
            f"`{meta.get('command', 'n/a')}` |"
        )
    for dataset in ("patient", "msb"):
        cols = {
            n.split("_", 1)[1]: metrics(r) for n, r in runs.items() if n.startswith(dataset + "_")
        }
        if cols:
            parts += ["", f"## {dataset}", "", table(cols)]
            main = summary["runs"].get(f"{dataset}_main")
            if main:
                parts += ["", "Main configuration by expected category:", ""]
                parts += ["| category | n | right outcome | statuses |", "|---|---|---|---|"]
                for cat, c in main["by_category"].items():
                    st = ", ".join(f"{k} {v}" for k, v in sorted(c["statuses"].items()))
                    parts.append(f"| {cat} | {c['n']} | {c['right_outcome']} | {st} |")
    notes = OUT / "careguard_notes.md"
    if notes.is_file():
        parts += ["", notes.read_text(encoding="utf-8").rstrip()]
    return "\n".join(parts) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--dataset", choices=["patient", "msb"], required=True)
    run.add_argument("--config", choices=sorted(CONFIGS), default="main")
    run.add_argument("--limit", type=int, default=None)
    run.add_argument("--max-refinements", type=int, default=None)
    run.add_argument("--ids", default=None, help="Only these comma-separated item ids.")
    sub.add_parser("report")
    args = parser.parse_args()
    {"run": cmd_run, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    main()
