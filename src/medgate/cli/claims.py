"""``medgate check-claims``: the citation safety layer on a text or Markdown answer."""

from __future__ import annotations

from contextlib import ExitStack
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from medgate.claims.clients.clinicaltrials import ClinicalTrialsClient
from medgate.claims.clients.pubmed import PubMedClient
from medgate.claims.records_store import LocalRecordStore, OnlineRecordStore, RecordStore
from medgate.claims.report import check_report
from medgate.claims.safety_check import MEDICAL_DISCLAIMER, SafetyCheck
from medgate.claims.support import LexicalSupportJudge, ModelSupportJudge, SupportJudge
from medgate.claims.verification import CitationVerifier
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
        lines.append("Citation verification: not run (use --records or --online)")
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
        typer.Option(help="JSONL of source records to verify PMIDs/NCT ids against, offline."),
    ] = None,
    online: Annotated[
        bool,
        typer.Option(
            "--online",
            help="Verify citations through PubMed/ClinicalTrials.gov (also when the "
            "configuration sets claims.offline = false).",
        ),
    ] = False,
    judge: Annotated[
        JudgeChoice, typer.Option(help="How support is judged when verifying.")
    ] = JudgeChoice.LEXICAL,
    threshold: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help="Lexical support threshold.")
    ] = None,
) -> None:
    """Flag uncited medical claims, score the listed sources and give a safety verdict.

    Exit status: 0 safe, 1 unsafe, 2 when the check could not be run.
    """
    try:
        if not file.is_file():
            raise InputError(f"{file} is not a file")
        text = read_text_file(file, "report", MAX_REPORT_CHARS)
        config = load_config()
        with ExitStack() as stack:
            store: RecordStore | None = None
            if records is not None:
                store = LocalRecordStore.from_jsonl(records)
            elif online or not config.claims.offline:
                settings = config.claims
                pubmed = PubMedClient(settings.pubmed, email=settings.ncbi_email)
                trials = ClinicalTrialsClient(settings.clinicaltrials)
                stack.callback(pubmed.close)
                stack.callback(trials.close)
                store = OnlineRecordStore(pubmed, trials)
            verifier = CitationVerifier(store, _judge(judge, config, threshold)) if store else None
            result = check_report(text, verifier)
    except MedgateError as exc:
        raise fail(exc) from exc
    typer.echo(result.model_dump_json(indent=2) if as_json else render(result))
    if not result.is_safe:
        raise typer.Exit(EXIT_UNSAFE)


def register(app: typer.Typer) -> None:
    """Add the claims commands to ``app``."""
    app.command("check-claims")(check_claims)
