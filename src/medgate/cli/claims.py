"""``medgate check-claims``: the citation safety layer on a text or Markdown answer."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from medgate.claims.checker import build_claims_checker
from medgate.claims.safety_check import MEDICAL_DISCLAIMER, SafetyCheck
from medgate.claims.support import LexicalSupportJudge, ModelSupportJudge, SupportJudge
from medgate.cli.core import read_text_file
from medgate.cli.failures import fail
from medgate.config import MedgateConfig, load_config
from medgate.errors import InputError, MedgateError

#: Exit codes: 0 safe, 1 unsafe, and failures.EXIT_ERROR (2) when the check could not be run
#: (bad input or configuration).
EXIT_UNSAFE = 1

#: Longer reports are refused rather than read whole into memory.
MAX_REPORT_CHARS = 1_000_000


class JudgeChoice(StrEnum):
    LEXICAL = "lexical"
    MODEL = "model"


def _judge(choice: JudgeChoice, config: MedgateConfig, threshold: float | None) -> SupportJudge:
    if choice is JudgeChoice.MODEL:
        from medgate.backends import create_model

        return ModelSupportJudge(create_model(config.model, config))
    return LexicalSupportJudge(
        threshold if threshold is not None else config.claims.support_threshold
    )


def render(result: SafetyCheck) -> str:
    """The human-readable report: flags, sources with credibility, citation checks, verdict."""
    lines = [f"Claims: {result.claims_count}   Flags: {result.flag_count}"]
    for flag in result.flags:
        lines.append(
            f"  [{flag.severity.value.upper()}] {flag.kind.value} {flag.claim_type.value}"
            f" (sentence {flag.sentence_index + 1}): {flag.sentence}"
        )
        if flag.detail:
            lines.append(f"      why: {flag.detail}")
        lines.append(f"      fix: {flag.suggestion}")
    lines.append(f"Sources: {result.sources_count}")
    for source in result.sources:
        cred = source.credibility
        lines.append(
            f"  {source.label}  {cred.score}/100 {cred.tier.value}: {cred.reason}"
            f" ({cred.recommendation})"
        )
    if result.verification is None:
        lines.append("Citation verification: not run")
    else:
        lines.append(f"Citation verification ({result.verification.judge}):")
        for check in result.verification.checks:
            grade = check.evidence.level.value if check.evidence and check.evidence.level else "-"
            lines.append(
                f"  sentence {check.sentence_index + 1} {check.citation.text}: "
                f"{check.status.value} (evidence level {grade}) {check.detail}"
            )
    lines.append(f"Verdict: {result.verdict.value.upper()}")
    lines.extend(f"  ! {w}" for w in result.warnings)
    lines.extend(f"  error: {e}" for e in result.errors)
    lines.append("")
    lines.append(MEDICAL_DISCLAIMER)
    return "\n".join(lines)


def check_claims(
    file: Annotated[Path, typer.Argument(help="Text or Markdown answer to check.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the safety record as JSON.")
    ] = False,
    records: Annotated[
        Path | None,
        typer.Option(
            help="JSONL of source records to resolve citations against (default: "
            "claims.records; offline without one, no citation resolves)."
        ),
    ] = None,
    online: Annotated[
        bool,
        typer.Option(
            "--online",
            help="Resolve citations through PubMed, ClinicalTrials.gov and Crossref (also "
            "when the configuration sets claims.offline = false).",
        ),
    ] = False,
    judge: Annotated[
        JudgeChoice, typer.Option(help="How support is judged when verifying.")
    ] = JudgeChoice.LEXICAL,
    threshold: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help="Lexical support threshold.")
    ] = None,
    rules_only: Annotated[
        bool, typer.Option("--rules-only", help="Detect claims with the rules alone.")
    ] = False,
) -> None:
    """Flag uncited medical claims, score the listed sources and give a safety verdict.

    Exit status: 0 safe, 1 unsafe, 2 when the check could not be run.
    """
    try:
        if not file.is_file():
            raise InputError(f"{file} is not a file")
        text = read_text_file(file, "report", MAX_REPORT_CHARS)
        config = load_config()
        with build_claims_checker(
            config,
            records=records,
            online=online,
            judge=_judge(judge, config, threshold),
            detector=not rules_only,
        ) as checker:
            result = checker.check(text)
    except MedgateError as exc:
        raise fail(exc) from exc
    typer.echo(result.model_dump_json(indent=2) if as_json else render(result))
    if not result.is_safe:
        raise typer.Exit(EXIT_UNSAFE)


def fit_claims_detector(
    seed: Annotated[int, typer.Option(help="Seed of the folds and the solver.")] = 13,
    c: Annotated[
        float, typer.Option("--c", min=1e-6, help="Inverse regularisation strength.")
    ] = 4.0,
    max_false_positive_rate: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="Out-of-fold share of non-claims the threshold may flag."
        ),
    ] = 0.02,
    out: Annotated[
        Path | None, typer.Option(help="Where to write the artifact (default: the shipped one).")
    ] = None,
) -> None:
    """Fit the learned claim detector on the training part of the labelled sentences.

    The held-out part is not read. Writes a JSON artifact with the weights, the threshold
    chosen on out-of-fold predictions, and the training provenance.
    """
    import shlex
    import sys

    from medgate.claims.learned import ARTIFACT_FILE, fit_detector, load_sentences, save_artifact
    from medgate.embeddings import default_embedder

    try:
        config = load_config()
        artifact = fit_detector(
            load_sentences(),
            default_embedder(config.backend.n_threads or 1),
            seed=seed,
            regularisation_c=c,
            max_false_positive_rate=max_false_positive_rate,
            command="medgate " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        )
        path = save_artifact(artifact, out or ARTIFACT_FILE)
    except MedgateError as exc:
        raise fail(exc) from exc
    p = artifact.provenance
    typer.echo(
        f"trained on {len(p.train_ids)} sentences; threshold {artifact.threshold:.3f}; "
        f"out-of-fold recall {p.cv_recall:.3f}, non-claims flagged {p.cv_false_positive_rate:.3f}, "
        f"type accuracy {p.cv_type_accuracy:.3f}"
    )
    typer.echo(f"wrote {path}")


def register(app: typer.Typer) -> None:
    """Add the claims commands to ``app``."""
    app.command("check-claims")(check_claims)
    app.command("fit-claims-detector")(fit_claims_detector)
