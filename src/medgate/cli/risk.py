"""``medgate eval risk``: the risk model's fit -> choose -> evaluate -> write, and the risk rule
beside the paper's in ``medgate eval hrs``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from medgate.cli.core import ModelOpt
from medgate.cli.options import (
    DEFAULT_OUT,
    AddressOpt,
    ApiBaseOpt,
    EngineOpt,
    OutOpt,
    WorkersOpt,
    between_0_and_1,
    command_line,
    engine_from,
    eval_config,
)


def register(ev: typer.Typer) -> None:
    """Add ``medgate eval risk`` to the ``eval`` group."""

    @ev.command("risk")
    def risk_cmd(
        dataset: Annotated[
            list[str] | None,
            typer.Option("--dataset", "-d", help="Datasets to pool (default: all three)."),
        ] = None,
        train_limit: Annotated[
            int, typer.Option(min=1, help="First N training items of each dataset.")
        ] = 300,
        test_limit: Annotated[
            int, typer.Option(min=1, help="First N test items of each dataset.")
        ] = 200,
        feature_set: Annotated[
            list[str] | None,
            typer.Option(
                "--feature-set",
                help="Feature sets to fit (default: baseline, evidence, rounds, "
                "baseline+rarity, rounds+rarity; with --max-iterations 0 those reading no "
                "round).",
            ),
        ] = None,
        max_iterations: Annotated[
            int,
            typer.Option(
                "--max-iterations",
                "-k",
                min=0,
                help="Knowledge rounds the recordings hold: 2 (every round) or 0 (first "
                "probe only; fits only feature sets that read no round).",
            ),
        ] = 2,
        alpha: Annotated[
            float,
            typer.Option(
                callback=between_0_and_1,
                help="Target error among released answers (the shipped point).",
            ),
        ] = 0.3,
        delta: Annotated[
            float, typer.Option(callback=between_0_and_1, help="1 - confidence of the guarantee.")
        ] = 0.1,
        ship: Annotated[
            bool,
            typer.Option(help="Save the artifacts into the package (medgate/hrs/data/risk)."),
        ] = False,
        recorded_only: Annotated[
            bool,
            typer.Option(help="Record nothing: use only the items already recorded."),
        ] = False,
        write: Annotated[
            bool, typer.Option(help="Write the item logs, tables, report and README block.")
        ] = False,
        model: ModelOpt = None,
        out: OutOpt = DEFAULT_OUT,
        engine: EngineOpt = "local",
        address: AddressOpt = None,
        workers: WorkersOpt = None,
        api_base: ApiBaseOpt = [],  # noqa: B006
    ) -> None:
        """Fit the risk model on the training splits, certify its threshold on held-out
        training items, and evaluate it on the test splits beside the paper's rule (records
        what is missing first, resumably, unless --recorded-only)."""
        from medgate.eval.report import fmt
        from medgate.eval.risk_report import write_report
        from medgate.eval.risk_run import DATASETS, run_risk, write_item_logs
        from medgate.eval.tables import print_risk

        engine_ = engine_from(engine, address, workers, api_base)
        config = eval_config(model, None)
        res = run_risk(
            config,
            dataset or list(DATASETS),
            train_limit,
            test_limit,
            feature_set,
            alpha,
            delta,
            ship=ship,
            recorded_only=recorded_only,
            command=command_line(),
            engine=engine_,
            knowledge_rounds=max_iterations,
        )
        for m in res["models"]:
            op = m.model.operating_point
            typer.echo(
                f"{m.model.feature_set}: CV AUROC {fmt(m.model.cv_auroc)}, calibration AUROC "
                f"{fmt(m.model.calibration_auroc)}, threshold {op.threshold:.4f}"
                f"{'' if op.certified else ' (none certified)'} -> {m.id}"
            )
        typer.echo(f"deployed default: {res['default'].id}")
        for ds, t in res["tests"].items():
            typer.echo(f"{ds} test:")
            print_risk(t["headline"], res["default"])
        if write:
            paths = write_item_logs(res, out) + write_report(res, out, out / "README.md")
            for p in paths:
                typer.echo(f"wrote {p}")


def risk_beside(config: Any, dataset: str, rec: Any, result: dict[str, Any]) -> Any:
    """The risk rule on the same recording, printed after the paper's rule and added to
    ``result`` (its item lines are returned); nothing when it does not apply."""
    from medgate.eval.risk_run import risk_on_recording
    from medgate.eval.tables import print_risk

    found = risk_on_recording(config, dataset, rec)
    if found.model is None or found.headline is None:
        typer.echo(f"risk rule: {found.note}")
        return None
    result["risk"] = found.headline
    print_risk(found.headline, found.model)
    return found.lines
