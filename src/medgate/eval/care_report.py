"""docs/results/careguard.{md,json}: CareGuard's tables, recomputed from the run logs alone.

Every stored result is rescored by the current violation checks
(:func:`medgate.careguard.evaluation.rescore`) so all runs are judged by one set of checks.
The hand-written notes on the runs (``NOTES.md`` in the folder of the run logs, so notes never
outlive the runs they describe) follow the tables.
"""

from __future__ import annotations

import json
import re
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from medgate.careguard.evaluation import ItemResult, Metrics, metrics, rescore
from medgate.eval.care_labels import (
    LABELS_FILE,
    HandLabel,
    LabelKey,
    count_labels,
    load_labels,
)
from medgate.eval.care_run import CareRunSpec, read_runs, run_prefix
from medgate.records import Status

ROWS: tuple[tuple[str, str], ...] = (
    ("n", "questions"),
    ("correct_rate", "right outcome"),
    ("answered_rate", "answered (released/refined)"),
    ("benign_answered_rate", "benign answered"),
    ("model_answered_rate", "answered with model text (not CareGuard's fixed text)"),
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
    ("latency_p95_s", "latency p95 (s)"),
    ("latency_max_s", "latency max (s)"),
)


def command(spec: CareRunSpec, items: int) -> str:
    """The command that records (or resumes) this run."""
    return (
        f"medgate eval care --dataset {spec.dataset} --split {spec.split} "
        f"--config {spec.config} --limit {items}"
    )


def _cell(value: object) -> str:
    return "n/a" if value is None else f"{value}"


def table(columns: dict[str, Metrics]) -> str:
    """One column per configuration, one row per metric and per status."""
    lines = ["| | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for key, label in ROWS:
        cells = [_cell(getattr(m, key)) for m in columns.values()]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for status in sorted({s for m in columns.values() for s in m.status}):
        counts = [str(m.status.get(status, 0)) for m in columns.values()]
        lines.append(f"| status {status} | " + " | ".join(counts) + " |")
    return "\n".join(lines)


def by_category(results: list[ItemResult]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for cat in sorted({r.category.value for r in results}):
        sub = [r for r in results if r.category.value == cat]
        statuses: dict[str, int] = {}
        for r in sub:
            statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        out[cat] = {
            "n": len(sub),
            "right_outcome": sum(r.correct for r in sub),
            "statuses": statuses,
        }
    return out


def variant(name: str, spec: CareRunSpec) -> str:
    """What a run is called beside others of its request set: the end of its log's name,
    ``<dataset>-<split>-<variant>``. That is its configuration unless the log was renamed to
    say more (two runs of one configuration under different code), so two runs never share a
    column."""
    prefix = run_prefix(spec.dataset, spec.split)
    return name[len(prefix) :] if name.startswith(prefix) else spec.config


def paired(
    runs: dict[str, tuple[CareRunSpec, list[ItemResult]]], labels: dict[LabelKey, HandLabel]
) -> list[dict[str, Any]]:
    """Each configuration beside ``main`` on the requests both ran, with the hand labels.

    Two runs of one request set are compared on the same requests only (a run stopped early
    covers fewer), and per request: which released a wrong or degenerate answer that the other
    did not. Those discordant counts are what a paired test (McNemar's) reads.
    """
    out: list[dict[str, Any]] = []
    for name, (spec, results) in sorted(runs.items()):
        other = variant(name, spec)
        if other == "main":
            continue
        base = next(
            (
                (n, r)
                for n, (s, r) in runs.items()
                if variant(n, s) == "main" and (s.dataset, s.split) == (spec.dataset, spec.split)
            ),
            None,
        )
        if base is None:
            continue
        common = {r.id for r in base[1]} & {r.id for r in results}
        sides = {
            "main": (base[0], [r for r in base[1] if r.id in common]),
            other: (name, [r for r in results if r.id in common]),
        }
        row: dict[str, Any] = {"dataset": spec.dataset, "split": spec.split, "n": len(common)}
        flawed: dict[str, set[str]] = {}
        for config, (run, rs) in sides.items():
            counts = count_labels(run, rs, labels)
            flawed[config] = set(counts.flawed)
            row[config] = {
                "answered": counts.released,
                "blocked": sum(r.status is Status.BLOCKED for r in rs),
                "wrong_or_degenerate": counts.wrong_or_degenerate,
                "unlabelled": len(counts.unlabelled),
            }
        row["wrong_only_in_main"] = sorted(flawed["main"] - flawed[other])
        row[f"wrong_only_in_{other}"] = sorted(flawed[other] - flawed["main"])
        row["other"] = other
        out.append(row)
    return out


#: A round's number in a stage's name ("careguard.round2.reply_screen"): one stage, every round.
_ROUND = re.compile(r"\.round\d+\.")


def stage_times(runs: dict[str, tuple[CareRunSpec, list[ItemResult]]]) -> dict[str, Any]:
    """Seconds per stage over every record of the runs (each round's run of a stage counts
    once): how many, median, p95 and max, by stage name with the round left out."""
    seconds: dict[str, list[float]] = {}
    for _, results in runs.values():
        for result in results:
            for stage, s in (result.record.timings if result.record else {}).items():
                seconds.setdefault(_ROUND.sub(".", stage), []).append(s)
    return {
        stage: {
            "n": len(values),
            "median_s": round(statistics.median(values), 4),
            "p95_s": round(float(np.percentile(values, 95)), 4),
            "max_s": round(max(values), 4),
        }
        for stage, values in sorted(seconds.items())
    }


def summarise(
    runs: Path, labels: dict[LabelKey, HandLabel]
) -> tuple[dict[str, Any], dict[str, tuple[CareRunSpec, list[ItemResult]]]]:
    """The JSON summary of every run in ``runs`` (with its released answers by hand label), and
    the rescored runs it was made from."""
    loaded = {
        name: (spec, [rescore(r) for r in results])
        for name, (spec, results) in read_runs(runs).items()
    }
    summary: dict[str, Any] = {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": {},
    }
    for name, (spec, results) in loaded.items():
        summary["runs"][name] = {
            "spec": spec.model_dump(mode="json"),
            "command": command(spec, len(results)),
            "metrics": metrics(results).model_dump(mode="json"),
            "by_category": by_category(results),
            "wall_time_s": round(sum(r.seconds for r in results), 1),
            "hand_labels": hand_labels(name, results, labels),
        }
    summary["paired"] = paired(loaded, labels)
    summary["stage_times"] = stage_times(loaded)
    return summary, loaded


def hand_labels(
    name: str, results: list[ItemResult], labels: dict[LabelKey, HandLabel]
) -> dict[str, Any]:
    counts = count_labels(name, results, labels)
    return {
        **counts.model_dump(mode="json"),
        "harmful_rate": counts.harmful_rate,
        "wrong_or_degenerate_rate": counts.flawed_rate,
    }


def markdown(
    summary: dict[str, Any],
    runs: dict[str, tuple[CareRunSpec, list[ItemResult]]],
    notes: str,
    folder: str = "docs/results/careguard_runs",
) -> str:
    parts = [
        "# CareGuard evaluation",
        "",
        f"Generated {summary['generated']} by `medgate eval care-report` from the run logs in "
        f"{folder}/ (one scored record per request; the manifest beside each "
        "log holds the settings and models of the run).",
        "",
        "## Runs",
        "",
        "| run | items | wall time (s) | model sha256 | command |",
        "|---|---|---|---|---|",
    ]
    for name, info in summary["runs"].items():
        spec = runs[name][0]
        shas = {m.fingerprint for m in spec.models.values() if m.fingerprint}
        sha = ", ".join(f"{s[:16]}..." for s in sorted(shas)) or "n/a"
        parts.append(
            f"| {name} | {info['metrics']['n']} | {info['wall_time_s']} | {sha} | "
            f"`{info['command']}` |"
        )
    for dataset in sorted({spec.dataset for spec, _ in runs.values()}):
        for split in sorted({s.split for s, _ in runs.values() if s.dataset == dataset}):
            chosen = {
                variant(name, spec): (name, results)
                for name, (spec, results) in runs.items()
                if spec.dataset == dataset and spec.split == split
            }
            columns = {config: metrics(results) for config, (_, results) in chosen.items()}
            parts += ["", f"## {dataset} ({split})", "", table(columns)]
            if "main" in chosen:
                cats = summary["runs"][chosen["main"][0]]["by_category"]
                parts += ["", "Main configuration by expected category:", ""]
                parts += ["| category | n | right outcome | statuses |", "|---|---|---|---|"]
                for cat, c in cats.items():
                    st = ", ".join(f"{k} {v}" for k, v in sorted(c["statuses"].items()))
                    parts.append(f"| {cat} | {c['n']} | {c['right_outcome']} | {st} |")
    parts += [
        "",
        "## Released answers, by hand label",
        "",
        f"Every released or refined answer is read and labelled by hand in {LABELS_FILE} "
        "(medgate.eval.care_labels; who labelled is in each line). Rates are over the labelled "
        "answers; an answer without a current label is counted as unlabelled, never as safe.",
        "",
        "| run | released | labelled | harmful | wrong | degenerate | wrong or degenerate "
        "| unlabelled |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, info in summary["runs"].items():
        h = info["hand_labels"]
        parts.append(
            f"| {name} | {h['released']} | {h['labelled']} | {h['harmful']} | {h['wrong']} | "
            f"{h['degenerate']} | {h['wrong_or_degenerate']} | {len(h['unlabelled'])} |"
        )
    if summary["paired"]:
        parts += [
            "",
            "## Configurations on the same requests",
            "",
            "Each configuration beside `main` on the requests both runs hold. Wrong: released "
            "answers labelled wrong or degenerate by hand; the last two columns list the "
            "requests where only one side released such an answer.",
            "",
            "| request set | n | configuration | answered | blocked | wrong | unlabelled "
            "| wrong only here |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in summary["paired"]:
            for config in ("main", row["other"]):
                c = row[config]
                only = ", ".join(row[f"wrong_only_in_{config}"]) or "none"
                parts.append(
                    f"| {row['dataset']} ({row['split']}) | {row['n']} | {config} | "
                    f"{c['answered']} | {c['blocked']} | {c['wrong_or_degenerate']} | "
                    f"{c['unlabelled']} | {only} |"
                )
    if summary["stage_times"]:
        parts += [
            "",
            "## Time per stage",
            "",
            "Seconds per stage over every record of these runs (each round's run of a stage "
            "counts once), from the timings each record keeps. The runs' own load applies: "
            "see the notes for what ran beside them.",
            "",
            "| stage | n | median (s) | p95 (s) | max (s) |",
            "|---|---|---|---|---|",
        ]
        for stage, t in summary["stage_times"].items():
            parts.append(f"| {stage} | {t['n']} | {t['median_s']} | {t['p95_s']} | {t['max_s']} |")
    if notes:
        parts += ["", notes.rstrip()]
    return "\n".join(parts) + "\n"


def write_report(runs: Path, out: Path) -> list[Path]:
    """Write careguard.json and careguard.md into ``out`` from the logs in ``runs``."""
    summary, loaded = summarise(runs, load_labels(out / LABELS_FILE))
    notes_file = runs / "NOTES.md"
    notes = notes_file.read_text(encoding="utf-8") if notes_file.is_file() else ""
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "careguard.json", out / "careguard.md"
    json_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    md_path.write_text(markdown(summary, loaded, notes, runs.as_posix()), encoding="utf-8")
    return [json_path, md_path]
