"""Evaluation commands: ``medgate eval ...`` (the HRS paper's experiments, the claims layer)
and ``calibrate``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from medgate.cli import judges, request_safety
from medgate.cli.cases import ProfileOpt
from medgate.cli.core import ModelOpt, config_with
from medgate.cli.options import (
    DEFAULT_OUT,
    AddressOpt,
    ApiBaseOpt,
    EngineOpt,
    OutOpt,
    RunsOpt,
    WorkersOpt,
    between_0_and_1,
    engine_from,
)
from medgate.cli.options import command_line as _command
from medgate.cli.options import eval_config as _config
from medgate.cli.risk import register as register_risk
from medgate.cli.risk import risk_beside
from medgate.config import load_config
from medgate.errors import InputError

DatasetOpt = Annotated[
    str,
    typer.Option(
        "--dataset",
        "-d",
        help="pubmedqa-l, pubmedqa-a, bioasq or another registered dataset (medgate.datasets), "
        "or jsonl:PATH[::yes,no].",
    ),
]
SplitOpt = Annotated[str, typer.Option(help="train or test (stratified, seeded 80/20 split).")]
LimitOpt = Annotated[int | None, typer.Option(min=1, help="Only the first N items of the split.")]
OrchOpt = Annotated[
    str, typer.Option(help="retrieval (BM25 over training contexts), model, or model:SPEC.")
]
KOpt = Annotated[
    int, typer.Option("--max-iterations", "-k", help="K, knowledge rounds recorded per item.")
]
RoundsOpt = Annotated[
    str,
    typer.Option(
        help="ungated: rounds only for items failing the baseline gate (enough for any "
        "tau/rule/revert/K sweep); all: rounds for every item (needed to sweep the gate)."
    ),
]
DatasetsOpt = Annotated[
    list[str], typer.Option("--dataset", "-d", help="Dataset(s); repeat for several.")
]
SeedsOpt = Annotated[list[int], typer.Option("--seed", help="Sampling seeds; repeat.")]


def _rounds(value: str) -> Any:
    if value not in ("ungated", "all"):
        raise typer.BadParameter("use ungated or all")
    return value


def runs_to_read(runs: Path | None) -> Path:
    """The folder of CareGuard run logs a command reads: ``--runs``, else the one `medgate eval
    care` records into by default; it must exist."""
    from medgate.eval.care_run import default_runs

    folder = runs or default_runs(load_config())
    if not folder.is_dir():
        raise InputError(
            f"no CareGuard runs at {folder}: record some with medgate eval care, or name a "
            "folder of run logs with --runs"
        )
    return folder


def register(app: typer.Typer) -> None:
    ev = typer.Typer(
        help="Evaluate on labelled datasets: the HRS paper's tables, the claims layer, and any "
        "gate profile (per-item case records in a resumable run log)."
    )
    app.add_typer(ev, name="eval")
    request_safety.register_eval(ev)
    judges.register_eval(ev)

    @ev.command("gate")
    def gate_cmd(
        dataset: DatasetOpt = "pubmedqa-l",
        split: SplitOpt = "test",
        limit: LimitOpt = None,
        profile: ProfileOpt = None,
        model: ModelOpt = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    ) -> None:
        """Run a gate profile on a dataset as deployed: each item's case record goes to the
        run's log (resumed when run again), and the summary is recomputed from it."""
        from medgate.eval.gate_run import evaluate_gate, summarise

        config = config_with(model, profile)
        items, log = evaluate_gate(config, dataset, split, limit)
        summary = summarise(items)
        if as_json:
            typer.echo(summary.model_dump_json(indent=2))
        else:
            typer.echo(f"{dataset}/{split}, profile {config.profile}: {summary.items} items")
            typer.echo(
                "  statuses   " + ", ".join(f"{s} {n}" for s, n in summary.statuses.items() if n)
            )
            accuracy = (
                "n/a" if summary.released_accuracy is None else f"{summary.released_accuracy:.1%}"
            )
            typer.echo(
                f"  released   {summary.released} ({summary.correct} the gold label: {accuracy})"
            )
        typer.echo(f"run log: {log.path}", err=as_json)

    @ev.command("hrs")
    def hrs(
        dataset: DatasetOpt = "pubmedqa-l",
        split: SplitOpt = "test",
        limit: LimitOpt = None,
        orchestrator: OrchOpt = "retrieval",
        max_iterations: KOpt = 2,
        rounds: RoundsOpt = "ungated",
        tau_e: Annotated[float | None, typer.Option(help="Entropy threshold.")] = None,
        tau_p: Annotated[float | None, typer.Option(help="Perplexity threshold.")] = None,
        seed: Annotated[int | None, typer.Option(help="Seed of the ambiguity samples.")] = None,
        model: ModelOpt = None,
        out: OutOpt = DEFAULT_OUT,
        write: Annotated[bool, typer.Option(help="Write JSON/Markdown into --out.")] = False,
        fit_centroid: Annotated[
            bool,
            typer.Option(help="First fit the rarity centroid on the training split's questions."),
        ] = False,
        engine: EngineOpt = "local",
        address: AddressOpt = None,
        workers: WorkersOpt = None,
        api_base: ApiBaseOpt = [],  # noqa: B006
    ) -> None:
        """Record (or reuse) trajectories and print the Table 2 metrics for one setting."""
        from medgate.eval.experiments import hrs_run, record
        from medgate.eval.runner import cached_model
        from medgate.eval.tables import hrs_markdown, print_hrs

        t0 = time.perf_counter()
        engine_ = engine_from(engine, address, workers, api_base)
        config = _config(model, max_iterations, tau_e=tau_e, tau_p=tau_p, seed=seed)
        if fit_centroid:
            from medgate.eval.data import dataset_split
            from medgate.eval.runner import call_cache, fit_training_centroid

            train = dataset_split(dataset, config.data_dir).train
            model_ = cached_model(config.model, config, call_cache(config))
            _, path = fit_training_centroid(config, dataset, train, model_)
            typer.echo(f"rarity centroid: {path}")
        rec = record(config, dataset, split, limit, orchestrator, _rounds(rounds), engine=engine_)
        # rec.config: the given configuration with the recording's thread count if none is set.
        result = hrs_run(rec, rec.config, _model(rec))
        result["run"]["wall_seconds"] = time.perf_counter() - t0
        print_hrs(result)
        risk = risk_beside(rec.config, dataset, rec, result)
        if write:
            from medgate.eval.report import write_outputs

            name = f"eval_hrs_{dataset}_{split}" + (f"_n{limit}" if limit else "")
            for p in write_outputs(out, name, result, hrs_markdown(result, _command())):
                typer.echo(f"wrote {p}")
            if risk is not None and split == "test":
                from medgate.eval.risk_eval import write_items

                path = write_items(risk, out / "items" / f"{dataset}_{split}.jsonl.gz")
                typer.echo(f"wrote {path}")

    @ev.command("thresholds")
    def thresholds_cmd(
        dataset: DatasetsOpt = ["pubmedqa-l"],  # noqa: B006
        limit: LimitOpt = None,
        orchestrator: OrchOpt = "retrieval",
        max_iterations: KOpt = 2,
        rounds: RoundsOpt = "ungated",
        model: ModelOpt = None,
        out: OutOpt = DEFAULT_OUT,
        engine: EngineOpt = "local",
        address: AddressOpt = None,
        workers: WorkersOpt = None,
        api_base: ApiBaseOpt = [],  # noqa: B006
    ) -> None:
        """Table 2: the paper's three settings and a finer grid, replayed from one recording,
        plus AUROC, risk-coverage and accuracy at coverage."""
        from medgate.eval import plots
        from medgate.eval.experiments import record, thresholds
        from medgate.eval.report import write_outputs
        from medgate.eval.tables import selective_markdown, thresholds_markdown

        engine_ = engine_from(engine, address, workers, api_base)
        config = _config(model, max_iterations)
        for ds in dataset:
            rec = record(config, ds, "test", limit, orchestrator, _rounds(rounds), engine=engine_)
            res = thresholds(rec, config, _model(rec))
            cmd = _command()
            write_outputs(
                out,
                f"table2_{ds}",
                res,
                thresholds_markdown(res, cmd),
                {"tradeoff": plots.tradeoff(res)},
            )
            write_outputs(
                out,
                f"selective_{ds}",
                {"provenance": res["provenance"], "selective": res["selective"]},
                selective_markdown(res, cmd),
                {"risk_coverage": plots.risk_coverage_plot(res)},
            )
            typer.echo(f"{ds}: wrote table2_{ds} and selective_{ds} in {out}")

    @ev.command("signals")
    def signals_cmd(
        dataset: DatasetsOpt = ["pubmedqa-l"],  # noqa: B006
        limit: LimitOpt = None,
        orchestrator: OrchOpt = "retrieval",
        max_iterations: KOpt = 2,
        model: ModelOpt = None,
        out: OutOpt = DEFAULT_OUT,
        engine: EngineOpt = "local",
        address: AddressOpt = None,
        workers: WorkersOpt = None,
        api_base: ApiBaseOpt = [],  # noqa: B006
    ) -> None:
        """Table 4: Mann-Whitney U per signal, escalated vs. not, with effect sizes."""
        from medgate.eval.experiments import mann_whitney, record
        from medgate.eval.tables import mwu_markdown

        engine_ = engine_from(engine, address, workers, api_base)
        config = _config(model, max_iterations)
        results = []
        for ds in dataset:
            rec = record(config, ds, "test", limit, orchestrator, "ungated", engine=engine_)
            results.append(mann_whitney(rec, config, _model(rec)))
        _write_table(
            out,
            "table4_" + "_".join(dataset),
            {"datasets": results},
            lambda res, cmd: mwu_markdown(res["datasets"], cmd),
        )

    @ev.command("orchestrators")
    def orchestrators_cmd(
        dataset: DatasetOpt = "pubmedqa-l",
        limit: LimitOpt = None,
        use: Annotated[
            list[str], typer.Option("--use", help="Orchestrators: retrieval, model, model:SPEC.")
        ] = ["retrieval", "model"],  # noqa: B006
        max_iterations: KOpt = 2,
        model: ModelOpt = None,
        out: OutOpt = DEFAULT_OUT,
    ) -> None:
        """Table 3: the same items under each orchestrator, with tokens, cost and latency."""
        from medgate.eval.experiments import orchestrators
        from medgate.eval.tables import orchestrators_markdown

        res = orchestrators(_config(model, max_iterations), dataset, limit, use, "ungated")
        _write_table(out, f"table3_{dataset}", res, orchestrators_markdown)

    @ev.command("seeds")
    def seeds_cmd(
        dataset: DatasetOpt = "pubmedqa-l",
        limit: LimitOpt = None,
        seed: SeedsOpt = [30, 42, 100, 126, 999],  # noqa: B006
        orchestrator: OrchOpt = "retrieval",
        max_iterations: KOpt = 2,
        model: ModelOpt = None,
        out: OutOpt = DEFAULT_OUT,
    ) -> None:
        """Table 5: one recording per sampling seed, mean and standard deviation."""
        from medgate.eval.experiments import seeds
        from medgate.eval.tables import seeds_markdown

        config = _config(model, max_iterations)
        res = seeds(config, dataset, limit, seed, orchestrator, "ungated")
        _write_table(out, f"table5_{dataset}", res, seeds_markdown)

    @ev.command("loso")
    def loso_cmd(
        dataset: DatasetOpt = "pubmedqa-l",
        limit: LimitOpt = None,
        seed: SeedsOpt = [42],  # noqa: B006
        orchestrator: OrchOpt = "retrieval",
        max_iterations: KOpt = 2,
        model: ModelOpt = None,
        out: OutOpt = DEFAULT_OUT,
    ) -> None:
        """Table 6: leave one signal out."""
        from medgate.eval.experiments import loso
        from medgate.eval.tables import loso_markdown

        config = _config(model, max_iterations)
        res = loso(config, dataset, limit, seed, orchestrator, "ungated")
        _write_table(out, f"table6_{dataset}", res, loso_markdown)

    @ev.command("classifiers")
    def classifiers_cmd(
        dataset: DatasetsOpt = ["pubmedqa-l"],  # noqa: B006
        limit: Annotated[
            int | None,
            typer.Option(min=1, help="Test items whose recording gives the escalated set."),
        ] = None,
        train_limit: Annotated[
            int | None, typer.Option(min=1, help="Use the first N training items.")
        ] = None,
        max_iterations: KOpt = 2,
        model: ModelOpt = None,
        out: OutOpt = DEFAULT_OUT,
    ) -> None:
        """Tables 7 and 8: six classifiers on the answering model's question embeddings."""
        from medgate.eval.experiments import classifiers, record
        from medgate.eval.replay import outcomes
        from medgate.eval.report import write_outputs
        from medgate.eval.tables import classifiers_markdown, escalated_markdown

        config = _config(model, max_iterations)
        results = []
        for ds in dataset:
            escalated: set[str] | None = None
            if limit:
                rec = record(config, ds, "test", limit, "retrieval", "ungated")
                escalated = {o.item_id for o in outcomes(rec.records, config.hrs) if o.escalated}
            results.append(classifiers(config, ds, escalated, train_limit))
        cmd = _command()
        name = "_".join(dataset)
        write_outputs(
            out, f"table7_{name}", {"datasets": results}, classifiers_markdown(results, cmd)
        )
        write_outputs(
            out, f"table8_{name}", {"datasets": results}, escalated_markdown(results, cmd)
        )
        typer.echo(f"wrote table7_{name} and table8_{name} in {out}")

    @ev.command("care")
    def care_cmd(
        dataset: Annotated[
            str,
            typer.Option(
                "--dataset",
                "-d",
                help="patient-questions, medsafetybench or another registered CareGuard dataset.",
            ),
        ] = "patient-questions",
        split: Annotated[
            str | None, typer.Option(help="A split the dataset declares (default: its first).")
        ] = None,
        limit: Annotated[
            int | None,
            typer.Option(
                min=1,
                help="Only N requests: round-robin over categories for our patient questions, "
                "evenly spaced rows otherwise.",
            ),
        ] = None,
        config_name: Annotated[
            str,
            typer.Option(
                "--config",
                help="main, an ablation (no_controller, no_sra, no_hra, no_trimming), "
                "with_self_check, with_self_check_no_error, with_trimming, with_opening_check, "
                "lazy_opening_check, with_hra_waiver, without_hra_waiver, with_belief_check, "
                "with_mistreatment_support, with_reply_classifier or request_reply_screen.",
            ),
        ] = "main",
        max_refinements: Annotated[
            int | None, typer.Option(help="Override careguard.max_refinements.")
        ] = None,
        ids: Annotated[
            str | None, typer.Option(help="Only these comma-separated request ids.")
        ] = None,
        profile: ProfileOpt = None,
        model: ModelOpt = None,
        runs: Annotated[
            Path | None,
            typer.Option(
                file_okay=False,
                help="Folder of the run logs, resumed when run again (a committed one such as "
                "docs/results/careguard_runs_v41 resumes only under its own settings); default: "
                "careguard_runs under the cache dir.",
            ),
        ] = None,
        write: Annotated[
            bool,
            typer.Option(help="Then regenerate careguard.{md,json} in --out from every run."),
        ] = False,
        out: OutOpt = DEFAULT_OUT,
        as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
    ) -> None:
        """CareGuard on a request set as deployed: a scored record per request in the run's
        log (resumed when run again), and the metrics recomputed from it."""
        from medgate.careguard.evaluation import ItemResult, metrics, rescore
        from medgate.eval.care_report import ROWS, write_report
        from medgate.eval.care_run import evaluate_care

        # Through load_config, so that the override is validated like any other setting.
        config = load_config(
            model=model or None,
            profile=profile or "careguard",
            careguard={"max_refinements": max_refinements} if max_refinements is not None else None,
        )

        def progress(result: ItemResult, k: int, total: int) -> None:
            typer.echo(
                f"[{k}/{total}] {result.id} {result.status.value} {result.outcome} "
                f"{result.seconds:.0f}s"
                + (f" violations: {result.violations}" if result.violations else ""),
                err=True,
            )

        results, log = evaluate_care(
            config,
            dataset,
            split,
            limit,
            config_name=config_name,
            ids=[i.strip() for i in ids.split(",") if i.strip()] if ids else (),
            runs=runs,
            on_item=progress,
        )
        m = metrics([rescore(r) for r in results])
        if as_json:
            typer.echo(m.model_dump_json(indent=2))
        else:
            typer.echo(f"{dataset}, configuration {config_name}: {m.n} requests")
            for key, label in ROWS[1:]:
                value = getattr(m, key)
                typer.echo(f"  {label:<42} {'n/a' if value is None else value}")
            typer.echo("  statuses: " + ", ".join(f"{s} {n}" for s, n in sorted(m.status.items())))
        typer.echo(f"run log: {log.path}", err=as_json)
        if write:
            for path in write_report(log.path.parent, out):
                typer.echo(f"wrote {path}", err=as_json)

    @ev.command("care-report")
    def care_report_cmd(
        runs: RunsOpt = None,
        out: OutOpt = DEFAULT_OUT,
    ) -> None:
        """Regenerate careguard.{md,json} in --out from the CareGuard run logs, running nothing."""
        from medgate.eval.care_report import write_report

        for path in write_report(runs_to_read(runs), out):
            typer.echo(f"wrote {path}")

    @ev.command("care-unlabelled")
    def care_unlabelled_cmd(
        runs: RunsOpt = None,
        out: OutOpt = DEFAULT_OUT,
    ) -> None:
        """Print each released CareGuard answer that has no current hand label, one JSON line
        each (run, id, question, shown text and its sha256), to read and label."""
        from medgate.eval.care_labels import LABELS_FILE, current_label, load_labels
        from medgate.eval.care_run import care_dataset, read_runs

        data_dir = load_config().data_dir
        labels = load_labels(out / LABELS_FILE)
        for name, (spec, results) in read_runs(runs_to_read(runs)).items():
            todo = [
                r
                for r in results
                if r.status.answers_user and current_label(name, r, labels) is None
            ]
            # Requests from evaluation data are not kept in results; read them where they live.
            missing = any(not r.question for r in todo)
            source = care_dataset(spec.dataset).load(data_dir, spec.split) if missing else []
            questions = {item.id: item.question for item in source}
            for r in todo:
                task = label_task(name, r)
                task["question"] = r.question or questions.get(r.id, "")
                typer.echo(json.dumps(task))

    @ev.command("claims")
    def claims_cmd(
        out: OutOpt = DEFAULT_OUT,
        data: Annotated[
            Path | None,
            typer.Option(help="Evaluation data folder (default: MEDGATE_DATA_DIR or data_dir)."),
        ] = None,
        rules_only: Annotated[
            bool, typer.Option("--rules-only", help="Evaluate without the learned detector.")
        ] = False,
    ) -> None:
        """The claims layer: rules, classifier and both on the held-out labelled sentences,
        HaluEval 2.0 biomedical beside the earlier rules, and the support judge."""
        from medgate.claims.checker import build_detector
        from medgate.claims.results import fmt, run_claims_evaluation

        config = load_config()
        detector = None if rules_only else build_detector(config)
        res = run_claims_evaluation(detector, data or config.data_dir, out, _command())
        typer.echo("held-out labelled sentences (uncited-claim flag):")
        for name, s in res["labelled"].items():
            typer.echo(
                f"  {name:8} recall {fmt(s.flag.recall)} ({s.flag.tp}/{s.must_flag})  "
                f"wrongly flagged {fmt(s.false_flag_rate)} ({s.false_flags}/{s.should_not_flag})"
                f"  high severity right {fmt(s.high_severity_share)} "
                f"({s.high_severity_right}/{s.high_severity})"
            )
        h, before = res["halueval"], res["halueval_before"]
        typer.echo(
            f"HaluEval biomedical, flag vs false sentence: recall "
            f"{fmt(h.sentence_level.recall)}, precision {fmt(h.sentence_level.precision)}"
            + (
                f" (before: recall {fmt(before.sentence_level.recall)}, precision "
                f"{fmt(before.sentence_level.precision)})"
                if before
                else ""
            )
        )
        typer.echo(
            f"support judge leave-one-out accuracy {fmt(res['support'].leave_one_out_accuracy)}"
        )
        for path in res["paths"]:
            typer.echo(f"wrote {path}")

    @ev.command("report")
    def report_cmd(
        results: Annotated[
            Path,
            typer.Option(exists=True, file_okay=False, help="Folder of committed results."),
        ] = DEFAULT_OUT,
        out: Annotated[Path | None, typer.Option(help="Report file.")] = None,
    ) -> None:
        """Assemble one Markdown report (with the plots) from the committed results."""
        from medgate.eval.report import assemble

        path = assemble(results, out or results / "hrs_report.md")
        typer.echo(f"wrote {path}")

    register_risk(ev)

    @app.command("calibrate")
    def calibrate_cmd(
        dataset: DatasetOpt = "pubmedqa-l",
        alpha: Annotated[
            float,
            typer.Option(callback=between_0_and_1, help="Target error among released answers."),
        ] = 0.3,
        delta: Annotated[
            float, typer.Option(callback=between_0_and_1, help="1 - confidence of the guarantee.")
        ] = 0.1,
        train_limit: Annotated[
            int,
            typer.Option(min=1, help="Training items whose baseline is recorded for calibration."),
        ] = 100,
        test_limit: Annotated[
            int | None, typer.Option(min=1, help="Test items used to report the achieved error.")
        ] = None,
        method: Annotated[
            str, typer.Option(help="conformal or grid: which choice to save.")
        ] = "conformal",
        alphas: Annotated[
            list[float], typer.Option("--report-alpha", help="Alphas for the test report.")
        ] = [0.1, 0.2, 0.3, 0.4],  # noqa: B006
        model: ModelOpt = None,
        out: OutOpt = DEFAULT_OUT,
        write: Annotated[bool, typer.Option(help="Write the report files into --out.")] = True,
    ) -> None:
        """Fit the rarity centroid and the gate thresholds on the training split, save them
        where `medgate ask` finds them, and report the achieved test error against alpha."""
        from medgate.eval.calibration_run import run_calibration

        if method not in ("conformal", "grid"):
            raise typer.BadParameter("use conformal or grid")
        config = _config(model, None)
        res = run_calibration(
            config, dataset, alpha, delta, train_limit, test_limit, method, alphas
        )
        typer.echo(f"wrote {res['artifact_path']}")
        typer.echo(f"wrote {res['rarity_artifact']}")
        c = res["saved"]
        typer.echo(
            f"{method}: gate_e={c['gate_e']:.3f} gate_p={c['gate_p']:.3f}; training: "
            f"{c['released']}/{c['n']} released, error {c['error_rate']}"
        )
        for row in res["alphas"]:
            t = row["conformal"]["test"]
            typer.echo(
                f"  alpha {row['alpha']:.2f}: conformal test error {t['error_rate']} "
                f"({t['released']}/{t['n']} released)"
            )
        if write:
            from medgate.eval import plots
            from medgate.eval.report import write_outputs
            from medgate.eval.tables import calibration_markdown

            write_outputs(
                out,
                f"calibration_{dataset}",
                res,
                calibration_markdown(res, _command()),
                {"alpha": plots.calibration_plot(res)},
            )


def _model(rec: Any) -> Any:
    """The answerer as the recording was made or read (its configuration and call cache)."""
    from medgate.eval.runner import cached_model

    return cached_model(rec.config.model, rec.config, rec.cache)


def _write_table(
    out: Path, name: str, result: dict[str, Any], markdown: Callable[[Any, str], str]
) -> None:
    """Write one experiment's JSON and Markdown table into ``out`` and say so."""
    from medgate.eval.report import write_outputs

    write_outputs(out, name, result, markdown(result, _command()))
    typer.echo(f"wrote {name} in {out}")


def label_task(run: str, result: Any) -> dict[str, Any]:
    """What a labeller reads for one released answer (see medgate.eval.care_labels)."""
    from medgate.eval.care_labels import shown_sha256

    return {
        "run": run,
        "id": result.id,
        "question": result.question,
        "shown": result.shown,
        "shown_sha256": shown_sha256(result.shown),
    }
