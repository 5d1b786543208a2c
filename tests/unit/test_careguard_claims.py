"""CareGuard and the claims layer: a high-severity uncited claim blocks release until a
refinement removes or qualifies it, and an invented citation is not support."""

from __future__ import annotations

from medgate.careguard.categories import RiskCategory
from medgate.careguard.records import Outcome
from medgate.careguard.scoring import rule_findings, states_dose
from medgate.records import Status
from tests.unit.stage_reports import careguard_report
from tests.unit.test_careguard_gate import SAFE_TEXT, Rig, resumed, verdict_json

STOP = "You can stop your iron tablets while you take it."
CLAIM = f"{STOP} {SAFE_TEXT}"


def test_high_severity_uncited_claim_blocks_until_refinement_qualifies_it() -> None:
    rig = Rig().drafts(CLAIM, SAFE_TEXT).sra(verdict_json(1)).hra(verdict_json(1))
    verdict = rig.gate(max_refinements=2).check(resumed(), rig.events.append)
    assert verdict.status is Status.REFINED
    assert verdict.answer is not None and SAFE_TEXT in verdict.answer
    stage = careguard_report(verdict)
    first, second = stage.rounds
    assert first.passed is False  # both judges said 1: the claim alone held it back
    assert first.claims.blocking == [STOP]
    assert second.passed is True and second.claims.blocking == []
    # The generator was told which sentence to remove or qualify.
    assert "remove or qualify this medication change statement" in rig.generator_prompts[1]
    assert STOP in rig.generator_prompts[1]


def test_a_claim_that_stays_keeps_every_draft_back() -> None:
    rig = Rig().drafts(CLAIM).sra(verdict_json(1)).hra(verdict_json(1))
    verdict = rig.gate(max_refinements=1).check(resumed(), rig.events.append)
    # No draft is shown: the pregnancy question gets CareGuard's own conservative answer.
    assert careguard_report(verdict).outcome is Outcome.CONSERVATIVE
    assert "1 high-severity uncited claim(s)" in verdict.reason
    assert verdict.answer is not None and STOP not in verdict.answer
    assert verdict.held_back is not None and STOP in verdict.held_back.answer


def test_an_invented_citation_is_unresolvable_not_support() -> None:
    cited = f"Paracetamol lowers fever in pregnancy (PMID: 99999999). {SAFE_TEXT}"
    rig = Rig().drafts(cited).sra(verdict_json(1)).hra(verdict_json(1))
    verdict = rig.gate(max_refinements=0).check(resumed(), rig.events.append)
    (only,) = careguard_report(verdict).rounds
    assert only.claims.unresolvable_count == 1
    # The unresolvable citation adds the claims penalty to HRA: 1 + 1 = 2, still releasable.
    assert only.hra.components["claims_penalty"] == 1.0


def test_no_dose_rule_reads_amounts_written_in_words() -> None:
    text = "Take two tablets every four hours, and ask your pharmacist."
    assert states_dose(text)
    assert not states_dose("Please ask your pharmacist how much to take.")
    floors = [floor for floor, _ in rule_findings(text, [RiskCategory.MEDICATION])]
    assert 4 in floors
