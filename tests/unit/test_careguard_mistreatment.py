"""With ``careguard.mistreatment_support`` on (off by default), someone threatened, pressured,
bullied or mocked asking what to do gets the fixed support text before any screen; other
messages that share its words go the usual way."""

from __future__ import annotations

import pytest

from medgate.careguard.mistreatment import MISTREATMENT_SUPPORT, asks_for_help_with_mistreatment
from medgate.careguard.records import Outcome
from medgate.claims import MEDICAL_DISCLAIMER
from medgate.records import Case, Status
from tests.unit.stage_reports import careguard_report
from tests.unit.test_careguard_gate import Rig


@pytest.mark.parametrize(
    "message",
    [
        "My boyfriend threatens to throw my inhalers away if I go out. What can I do?",
        "The care home manager said she'd stop my aunt's visits if we complained. Is that allowed?",
        "I was pressured into agreeing to a scan I didn't want. Can I withdraw my consent?",
        "A physio keeps making jokes about my limp. How do I make a complaint?",
        "My son is being bullied by his support worker. Who should I tell?",
        "My stepdad says he'll tell everyone I'm on antidepressants unless I pay him. Where can "
        "I get help?",
    ],
)
def test_a_person_mistreated_asking_for_help_is_read(message: str) -> None:
    assert asks_for_help_with_mistreatment(message) is not None


@pytest.mark.parametrize(
    "message",
    [
        # The writer is the one who would do it: a harmful request, left to the rules.
        "How can I pressure my mum's carer into working for free? What should I say?",
        "Help me draft a note telling her I'll report her unless she covers my shift.",
        # Words that only look alike.
        "My blood pressure is 150 over 95. Is that normal?",
        "Grandma fell and hit her head. What should I do?",
        "What is a threatened miscarriage, and is it normal to bleed?",
        "How do I handle a patient who shouts at staff on the ward?",
        # Telling of it without asking what to do.
        "My sister keeps yelling at me since my diagnosis.",
    ],
)
def test_other_messages_are_not_read_as_a_person_mistreated(message: str) -> None:
    assert asks_for_help_with_mistreatment(message) is None


def test_the_support_text_comes_before_the_screens_and_no_model_is_asked() -> None:
    rig = Rig()
    question = "My husband keeps threatening to leave me with no money. What can I do?"
    verdict = rig.gate(mistreatment_support=True).check(Case(question=question), rig.events.append)
    assert verdict.status is Status.REFINED and verdict.answer is not None
    assert verdict.answer.startswith(MISTREATMENT_SUPPORT)
    assert verdict.answer.endswith(MEDICAL_DISCLAIMER)
    report = careguard_report(verdict)
    assert report.outcome is Outcome.MISTREATMENT_SUPPORT and report.rounds == []
    assert report.request_safety is None and report.triage is None
    assert rig.controller_model.calls == [] and rig.generator_model.calls == []
    assert "threatening to leave me" in verdict.reason


def test_by_default_the_message_goes_the_usual_way() -> None:
    rig = Rig().drafts("You can speak to your GP or call a domestic abuse helpline.")
    rig.sra('{"justification": "fine", "score": 1}').hra('{"justification": "fine", "score": 1}')
    question = "My husband keeps threatening to leave me with no money. What can I do?"
    verdict = rig.gate().check(Case(question=question))
    assert careguard_report(verdict).outcome is not Outcome.MISTREATMENT_SUPPORT
    assert rig.controller_model.calls


def test_a_crisis_still_gets_the_crisis_guidance() -> None:
    rig = Rig()
    question = "My partner keeps threatening me and I want to kill myself. What can I do?"
    verdict = rig.gate(mistreatment_support=True).check(Case(question=question))
    assert careguard_report(verdict).outcome is Outcome.CRISIS
