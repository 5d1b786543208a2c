from __future__ import annotations

import json

from medgate.claims import (
    MEDICAL_DISCLAIMER,
    SafetyVerdict,
    apply_disclaimer,
    check_report,
    check_safety,
    detect_claims,
    disclaimer_present,
    uncited_flags,
)
from medgate.events import EVENTS, ClaimsEvent, EventKind


def test_high_severity_uncited_claim_is_unsafe() -> None:
    result = check_report("The recommended dose is 500 mg twice daily.")
    assert result.verdict is SafetyVerdict.UNSAFE and not result.is_safe
    assert result.high_severity_count == 1 and result.uncited_count == 1
    assert any("high-severity" in w for w in result.warnings)
    assert result.dose_information and not result.disclaimer_present


def test_one_warning_alone_does_not_block() -> None:
    # medium-severity uncited claim, no sources: one warning, shown but not blocking
    result = check_report("Studies show that walking improves mood.")
    assert result.warnings == [
        "No sources cited: the answer may rest on the model's knowledge only"
    ]
    assert result.is_safe and result.uncited_count == 1


def test_sources_and_disclaimer_make_a_cited_dose_answer_safe() -> None:
    text = (
        "The recommended dose is 500 mg twice daily (PMID: 31535829). "
        "This is not a substitute for professional medical advice."
    )
    result = check_report(text)
    assert result.is_safe and result.warnings == []
    assert result.sources_count == 1 and result.disclaimer_present


def test_dose_words_without_a_detected_claim_still_count() -> None:
    text = "Amoxicillin 875 mg, per the label."
    result = check_safety(text, [], sources_count=1)
    assert result.dose_information
    assert result.warnings == ["Answer contains dose information without a disclaimer"]


def test_failed_check_fails_closed() -> None:
    claims = detect_claims("Walking is effective for mood.")
    result = check_safety(
        "Walking is effective for mood.",
        uncited_flags(claims),
        claims=claims,
        sources_count=3,
        errors=["verifier crashed"],
    )
    assert not result.is_safe and result.errors == ["verifier crashed"]


def test_apply_disclaimer_always_and_once() -> None:
    text = "Metformin lowers glucose."
    shown = apply_disclaimer(text)
    assert shown.endswith(MEDICAL_DISCLAIMER) and shown.startswith(text)
    assert apply_disclaimer(shown) == shown
    # an answer's own disclaimer does not replace medgate's
    own = "Metformin lowers glucose. This is not medical advice."
    assert disclaimer_present(own)
    assert apply_disclaimer(own).endswith(MEDICAL_DISCLAIMER)
    assert disclaimer_present(MEDICAL_DISCLAIMER)


def test_a_check_streams_as_a_claims_event_that_reads_back_typed() -> None:
    result = check_report("Warfarin is contraindicated in pregnancy.")
    event = ClaimsEvent(stage="claims", data=result)
    assert event.kind is EventKind.CLAIMS
    wire = json.loads(event.model_dump_json())
    assert wire["data"]["verdict"] == "unsafe"
    assert wire["data"]["flags"][0]["claim_type"] == "contraindication"
    assert wire["data"]["disclaimer"] == MEDICAL_DISCLAIMER
    # read back from JSON, it is the same typed event and check
    (back,) = EVENTS.validate_json(f"[{event.model_dump_json()}]")
    assert back == event and isinstance(back, ClaimsEvent)


def test_a_stored_claims_check_of_the_old_safety_kind_reads_as_a_claims_event() -> None:
    result = check_report("Warfarin is contraindicated in pregnancy.")
    old = {"kind": "safety", "stage": "claims", "data": result.model_dump(mode="json")}
    (back,) = EVENTS.validate_python([old])
    assert isinstance(back, ClaimsEvent) and back.data == result


def test_reference_list_is_scored_not_scanned_for_claims() -> None:
    text = (
        "SGLT2 inhibitors slow kidney disease progression [1].\n\n"
        "## References\n"
        "1. Dapagliflozin reduces mortality by 31% in CKD. N Engl J Med 2020. PMID: 31535829\n"
        "2. https://nih.gov.evil.example/sglt2\n"
    )
    result = check_report(text)
    assert result.claims_count == 1  # the body sentence; the reference title is not a claim
    scores = {s.label: s.credibility.score for s in result.sources}
    assert scores == {"PMID:31535829": 98, "https://nih.gov.evil.example/sglt2": 40}


def test_empty_input_is_an_input_error() -> None:
    import pytest

    from medgate.errors import InputError

    with pytest.raises(InputError):
        check_report("   ")


def test_bracket_citations_without_a_reference_list_are_warned() -> None:
    result = check_report("Warfarin is contraindicated in pregnancy [1]. Aspirin 81 mg daily [2].")
    assert "2 claim(s) cite [n] references but the answer has no reference list" in result.warnings
    assert not result.is_safe  # with no sources and dose words, three warnings stand


def test_high_severity_claim_on_a_preprint_is_warned_but_a_journal_is_not() -> None:
    weak = "Drug X is contraindicated in asthma [1].\n\nReferences\n1. https://www.medrxiv.org/x\n"
    strong = "Drug X is contraindicated in asthma [1].\n\nReferences\n1. Lancet 2020. PMID: 1\n"
    assert any("preprints" in w for w in check_report(weak).warnings)
    assert check_report(strong).warnings == []
