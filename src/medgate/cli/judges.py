"""``medgate eval judges``: CareGuard's controller and SRA/HRA judges on each model, against
hand labels (:mod:`medgate.eval.judge_run`, :mod:`medgate.eval.judge_report`)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from medgate.cli.failures import fail
from medgate.cli.options import DEFAULT_OUT, OutOpt, command_line
from medgate.errors import MedgateError

DEFAULT_MODELS = ["embedded:qwen2.5-coder-0.5b", "embedded:qwen2.5-coder-1.5b"]

_REQUESTS = re.compile(
    r"^(?P<name>[A-Za-z0-9_.-]+)(?::(?P<split>[A-Za-z0-9_-]+))?(?:@(?P<n>\d+))?$"
)


def parse_request_set(value: str) -> tuple[str, str | None, int | None]:
    """``DATASET[:SPLIT][@N]`` as (dataset, split or None, N or None for all)."""
    match = _REQUESTS.match(value.strip())
    if match is None:
        raise typer.BadParameter(f"{value!r}: use DATASET:SPLIT@N, e.g. medsafetybench:all@6")
    n = match.group("n")
    return match.group("name"), match.group("split"), int(n) if n is not None else None


def register_eval(ev: typer.Typer) -> None:
    """Add ``judges`` to the ``eval`` group."""

    @ev.command("judges")
    def judges_cmd(
        model: Annotated[
            list[str],
            typer.Option(
                "--model",
                "-m",
                help="A model to measure in each role; repeat (the first is the baseline of "
                "the comparisons).",
            ),
        ] = DEFAULT_MODELS,
        role: Annotated[
            list[str],
            typer.Option("--role", help="controller, sra or hra; repeat (default: all three)."),
        ] = ["controller", "sra", "hra"],  # noqa: B006
        drafts: Annotated[
            int,
            typer.Option(
                min=0,
                help="Hand-labelled drafts judged, taken round-robin over the label groups "
                "(0: none).",
            ),
        ] = 28,
        requests: Annotated[
            list[str],
            typer.Option(
                "--requests",
                help="Request set for the controller, DATASET:SPLIT@N (split and @N optional; "
                "N evenly spaced, or round-robin over categories); repeat.",
            ),
        ] = ["patient-questions@10", "medsafetybench:all@6"],  # noqa: B006
        labels: Annotated[
            list[Path] | None,
            typer.Option(
                "--labels",
                help="Hand-label files (JSONL of medgate.eval.care_labels.HandLabel); repeat "
                "(default: careguard_labels.jsonl and judge_labels.jsonl in docs/results).",
            ),
        ] = None,
        runs: Annotated[
            Path | None,
            typer.Option(help="Folder of the per-call logs (default docs/results/judges_runs)."),
        ] = None,
        out: OutOpt = DEFAULT_OUT,
        report_only: Annotated[
            bool,
            typer.Option("--report-only", help="Run nothing: rewrite the report from the logs."),
        ] = False,
    ) -> None:
        """Measure models as CareGuard's controller and SRA/HRA judges against hand labels.

        Each model's calls go to a resumable log in --runs; judges.{md,json} in --out are then
        rewritten from every log there (the part of judges.md written by hand is kept)."""
        from medgate.backends.pool import ModelPool
        from medgate.config import load_config
        from medgate.eval.judge_report import build_report, write_report
        from medgate.eval.judge_run import (
            DEFAULT_CARE_RUNS,
            DEFAULT_JUDGE_RUNS,
            DEFAULT_LABEL_FILES,
            ROLES,
            Role,
            evaluate_model,
            labelled_drafts,
            labelled_requests,
            pick_drafts,
            read_logs,
        )

        unknown = [r for r in role if r not in ROLES]
        if unknown:
            raise typer.BadParameter(f"unknown role {unknown[0]!r}: use {', '.join(ROLES)}")
        roles: list[Role] = [r for r in ROLES if r in role]
        sets = [parse_request_set(r) for r in requests]
        folder = runs or DEFAULT_JUDGE_RUNS
        try:
            config = load_config()
            selection = labelled_drafts(
                labels or list(DEFAULT_LABEL_FILES), DEFAULT_CARE_RUNS, config.data_dir
            )
            if selection.stale:
                typer.echo(
                    f"{len(selection.stale)} label(s) left out: their text changed or is gone "
                    f"({', '.join(selection.stale[:3])}...)",
                    err=True,
                )
            if not report_only:
                chosen = pick_drafts(selection.drafts, drafts)
                asked = labelled_requests(sets, config.data_dir) if "controller" in roles else []
                pool = ModelPool(config)
                for spec in model:
                    loaded = pool.get(spec, role="judges")

                    def progress(call: object, k: int, n: int, spec: str = spec) -> None:
                        typer.echo(f"  {spec} {k}/{n} {getattr(call, 'item_id', '')}", err=True)

                    evaluate_model(
                        config,
                        spec,
                        loaded,
                        roles=roles,
                        drafts=chosen,
                        requests=asked,
                        runs=folder,
                        on_call=progress,
                    )
            logs = read_logs(folder)
            ordered = {m: logs[m] for m in model if m in logs}
            ordered.update({m: v for m, v in logs.items() if m not in ordered})
            report = build_report(ordered, [d.labeller for d in selection.drafts])
            date = datetime.now(UTC).strftime("%Y-%m-%d")
            paths = write_report(report, out, command_line(), date, folder)
        except MedgateError as exc:
            raise fail(exc) from exc
        for j in report.judges:
            typer.echo(
                f"{j.role} {j.model}: n {j.n} ({j.positives} positive), AUROC "
                f"{'n/a' if j.auroc is None else f'{j.auroc:.2f}'}, parse failures "
                f"{j.parse_failures}, median {j.latency.median_s or 0:.1f} s/call"
            )
        for c in report.controllers:
            typer.echo(
                f"controller {c.model}: n {c.n}, triage accuracy "
                f"{'n/a' if c.triage_accuracy is None else f'{c.triage_accuracy:.2f}'}, harmful "
                f"recall {'n/a' if c.harmful_recall is None else f'{c.harmful_recall:.2f}'}, "
                f"median {c.latency.median_s or 0:.1f} s/call"
            )
        for path in paths:
            typer.echo(f"wrote {path}")
