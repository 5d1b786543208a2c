"""``medgate care``: CareGuard on one patient question, with screening when context is missing."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from medgate.cli.cases import NoLogOpt, ProfileOpt, decide, keep
from medgate.errors import InputError
from medgate.records import Case, Status

if TYPE_CHECKING:
    from medgate.case_record import CaseRecord
    from medgate.verdict import Verdict

#: --answers larger than this is refused.
MAX_ANSWERS_CHARS = 8_000


def parse_answers(text: str | None) -> dict[str, str]:
    """``--answers`` as a dict of field -> answer; anything else is a clear error."""
    if text is None:
        return {}
    if len(text) > MAX_ANSWERS_CHARS:
        raise InputError(f"--answers is longer than {MAX_ANSWERS_CHARS} characters")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"--answers is not valid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(data, dict):
        raise InputError('--answers must be a JSON object, e.g. {"pregnancy_stage": "unsure"}')
    out: dict[str, str] = {}
    for key, value in data.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise InputError(f"--answers: the answer for {key!r} must be a string")
        if not str(value).strip():
            raise InputError(f"--answers: the answer for {key!r} is empty")
        out[str(key)] = str(value).strip()
    return out


def make_care_case(question: str, patient: dict[str, str]) -> Case:
    try:
        return Case(question=question, patient=patient)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(str(first["msg"]).removeprefix("Value error, ")) from None


def care_json(verdict: Verdict, record_id: str | None = None) -> dict[str, Any]:
    from medgate.careguard.gate import screening_questions
    from medgate.cli.core import verdict_json

    out = verdict_json(verdict, record_id)
    out["questions"] = [q.model_dump(mode="json") for q in screening_questions(verdict)]
    return out


def ask_screening(verdict: Verdict) -> dict[str, str]:
    """Ask the screening questions on the terminal; returns field -> option key."""
    from medgate.careguard.gate import screening_questions

    answers: dict[str, str] = {}
    typer.echo("Before answering, a few questions:")
    for question in screening_questions(verdict):
        typer.echo(f"\n{question.text}")
        for i, option in enumerate(question.options, 1):
            typer.echo(f"  {i}. {option.label}")
        while True:
            reply = typer.prompt("Your answer (number)")
            key = question.resolve(reply)
            if key is not None:
                answers[question.field.value] = key
                break
            typer.echo(f"Please answer with a number from 1 to {len(question.options)}.")
    return answers


def print_care(verdict: Verdict) -> None:
    from medgate.careguard.records import CareGuardReport
    from medgate.cli.core import print_verdict

    print_verdict(verdict)
    report = verdict.trace.report(CareGuardReport)
    if report is None:
        return
    if report.triage is not None:
        typer.echo(f"category: {', '.join(c.value for c in report.triage.categories)}")
    for rnd in report.rounds:
        typer.echo(
            f"round {rnd.iteration}: SRA {rnd.sra.score}  HRA {rnd.hra.score}"
            f"  {'pass' if rnd.passed else 'fail'}"
        )


def interactive(as_json: bool) -> bool:
    """Screening questions are asked on the terminal only when a person is there to answer."""
    return not as_json and sys.stdin.isatty() and sys.stdout.isatty()


def care(
    question: Annotated[str, typer.Argument(help="The patient's question, as asked.")],
    answers: Annotated[
        str | None,
        typer.Option(
            "--answers",
            help='Screening answers as JSON, e.g. \'{"pregnancy_stage": "second_trimester"}\'.',
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Model spec for every role.")
    ] = None,
    profile: ProfileOpt = None,
    no_log: NoLogOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    """Answer a patient's question through CareGuard: screen, answer, check, refine or block.

    A question without labels or context is a patient's, so the default profile routes it to
    CareGuard; `--profile full` runs the whole pipeline (HRS signals, claims with citation
    verification, both judges). Each decided case goes to the local case log."""
    from medgate.backends.pool import ModelPool
    from medgate.cli.core import config_with, print_logged
    from medgate.pipeline import build_gate

    patient = parse_answers(answers)
    config = config_with(model, profile)
    pool = ModelPool(config)
    gate = build_gate(config, pool, first_case=make_care_case(question, patient))

    def check(patient: dict[str, str]) -> tuple[CaseRecord, str | None]:
        record = decide(
            gate, make_care_case(question, patient), entry="care", config=config, pool=pool
        )
        logged, failure = keep(record, config, log=not no_log)
        if failure is not None:
            print_care(record.verdict)
            raise failure
        return record, logged

    record, logged = check(patient)
    while interactive(as_json) and record.verdict.status is Status.NEEDS_CONTEXT:
        patient = {**patient, **ask_screening(record.verdict)}
        record, logged = check(patient)
    if as_json:
        typer.echo(json.dumps(care_json(record.verdict, logged), indent=2))
    else:
        print_care(record.verdict)
        print_logged(logged)


def register(app: typer.Typer) -> None:
    app.command("care")(care)
