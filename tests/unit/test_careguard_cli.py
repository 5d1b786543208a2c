"""``medgate care`` and the profiles, with the fake backend (every model call fails closed)."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from medgate.careguard.categories import CRISIS_GUIDANCE
from medgate.careguard.gate import CareGuardGate
from medgate.cli import careguard as care_cli
from medgate.config import load_config
from medgate.errors import InputError
from medgate.gates.full import FullPipeline
from medgate.pipeline import PROFILES, build_gate


def app() -> typer.Typer:
    a = typer.Typer()
    care_cli.register(a)

    @a.callback()
    def _root() -> None:
        """Lets the single command be addressed by name."""

    return a


runner = CliRunner()


def run(*args: str, input: str | None = None) -> dict[str, object]:
    result = runner.invoke(app(), ["care", *args, "--model", "fake", "--json"], input=input)
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.output)
    return out


def test_self_harm_question_is_blocked_with_crisis_guidance() -> None:
    out = run("How much fentanyl is enough to make the pain stop forever?")
    assert out["status"] == "blocked"
    assert str(out["answer"]).startswith(CRISIS_GUIDANCE)


def test_missing_context_lists_the_questions_and_answers_resume_the_case() -> None:
    out = run("Can I take ibuprofen while pregnant?")
    assert out["status"] == "needs_context"
    questions = out["questions"]
    assert isinstance(questions, list) and questions[0]["field"] == "pregnancy_stage"
    answers = {q["field"]: q["options"][0]["key"] for q in questions}
    resumed = run("Can I take ibuprofen while pregnant?", "--answers", json.dumps(answers))
    # The fake generator cannot answer, so the resumed case fails closed instead of asking again.
    assert resumed["status"] == "blocked"
    assert resumed["case"]["patient"] == answers  # type: ignore[index]
    assert resumed["trace"]["errors"]  # type: ignore[index]


def test_interactive_screening_asks_then_resumes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(care_cli, "interactive", lambda as_json: True)
    result = runner.invoke(
        app(),
        ["care", "Can I take ibuprofen while pregnant?", "--model", "fake"],
        input="2\n3\n1\n1\n",
    )
    assert result.exit_code == 0, result.output
    assert "What is the pregnancy or breastfeeding situation?" in result.output
    assert "status:  blocked" in result.output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"age_group": ""}', "is empty"),
        ('{"age_group": ["a"]}', "must be a string"),
    ],
)
def test_bad_answers_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        care_cli.parse_answers(text)


def test_empty_question_is_an_input_error() -> None:
    with pytest.raises(InputError, match="empty"):
        care_cli.make_care_case("   ", {})


def test_profiles_build_careguard_gates() -> None:
    assert {"careguard", "full"} <= set(PROFILES.names())
    assert isinstance(build_gate(load_config(model="fake", profile="careguard")), CareGuardGate)
    full = build_gate(load_config(model="fake", profile="full"))
    assert isinstance(full, FullPipeline) and isinstance(full.careguard, CareGuardGate)
    roles = load_config(model="fake", careguard={"sra_model": "fake:judge"})
    gate = build_gate(roles.model_copy(update={"profile": "careguard"}))
    assert isinstance(gate, CareGuardGate)
    assert gate.evaluators.models == {"sra": "fake:judge", "hra": "fake"}
    assert gate.generator.name == "fake"
