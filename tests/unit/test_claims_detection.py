from __future__ import annotations

import pytest

from medgate.claims import (
    CitationKind,
    ClaimType,
    FlagKind,
    Severity,
    classify,
    detect_claims,
    find_citations,
    uncited_flags,
)
from medgate.claims.rules import doses_something


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("The recommended dose is 500 mg twice daily.", ClaimType.DOSE),
        ("Take 5 mg daily.", ClaimType.DOSE),
        ("Amoxicillin is given at 25 mg/kg per day in two doses.", ClaimType.DOSE),
        ("Warfarin is contraindicated in pregnancy.", ClaimType.CONTRAINDICATION),
        ("Metformin should not be used in severe renal impairment.", ClaimType.CONTRAINDICATION),
        ("Semaglutide is FDA-approved for weight management.", ClaimType.APPROVAL),
        ("The supplement is clinically proven to work.", ClaimType.APPROVAL),
        ("Side effects include nausea and diarrhea.", ClaimType.SIDE_EFFECTS),
        ("Adverse reactions were mostly mild.", ClaimType.SIDE_EFFECTS),
        ("About 65% of patients responded to treatment.", ClaimType.STATISTIC),
        ("The intervention reduced admissions by 23% overall.", ClaimType.STATISTIC),
        ("The hazard ratio for death was 0.74.", ClaimType.STATISTIC),
        ("Studies show that fasting improves insulin sensitivity.", ClaimType.STUDY),
        ("Mindfulness has been shown to reduce anxiety.", ClaimType.STUDY),
        ("According to a recent meta-analysis, probiotics help.", ClaimType.STUDY),
        ("Amoxicillin is the first-line treatment for otitis media.", ClaimType.EFFICACY),
        ("Metformin is effective for lowering blood glucose.", ClaimType.EFFICACY),
        ("Several studies have consistently demonstrated a benefit.", ClaimType.STUDY),
        ("Studies have not shown a benefit of vitamin C.", ClaimType.STUDY),
        ("The NNT was 12 over five years.", ClaimType.STATISTIC),
    ],
)
def test_claim_types(sentence: str, expected: ClaimType) -> None:
    assert classify(sentence)[0] is expected


@pytest.mark.parametrize(
    "sentence",
    [
        "Metformin is a biguanide used in type 2 diabetes.",
        "Serum sodium was 130 mmol/L on admission.",
        "Each tablet contains 500 mg of the active ingredient.",
        "The patient was a 54-year-old man with chest pain.",
        "Talk to your doctor before starting any new medication.",
        "Our budget was approved for the next fiscal year.",
        "The trial is still recruiting participants.",
        "Smith et al. describe the history of the hospital.",
        "GIN-NNT is a toolkit for drug synergy prediction.",
    ],
)
def test_negatives_are_not_claims(sentence: str) -> None:
    assert classify(sentence) == []


def test_most_dangerous_type_wins_and_others_are_kept() -> None:
    (claim,) = detect_claims(
        "Studies show the recommended dose is 500 mg per day, with side effects in 10% of patients."
    )
    assert claim.claim_type is ClaimType.DOSE
    assert claim.severity is Severity.HIGH
    assert claim.claim_types[0] is ClaimType.DOSE
    assert {ClaimType.STUDY, ClaimType.SIDE_EFFECTS, ClaimType.STATISTIC} <= set(claim.claim_types)


@pytest.mark.parametrize(
    ("sentence", "severity"),
    [
        ("The recommended dose is 10 mg.", Severity.HIGH),
        ("It is contraindicated in asthma.", Severity.HIGH),
        ("It is FDA approved for migraine.", Severity.HIGH),
        ("Side effects include rash.", Severity.MEDIUM),
        ("Research suggests a benefit.", Severity.MEDIUM),
        ("It is effective for migraine.", Severity.LOW),
    ],
)
def test_severity(sentence: str, severity: Severity) -> None:
    (claim,) = detect_claims(sentence)
    assert claim.severity is severity


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("as shown [1].", CitationKind.BRACKET, "1"),
        ("as shown [2, 4-6].", CitationKind.BRACKET, "2,4,5,6"),
        ("as shown (PMID: 12345678).", CitationKind.PMID, "12345678"),
        ("as shown PMID 12345678.", CitationKind.PMID, "12345678"),
        ("in NCT01234567.", CitationKind.NCT, "NCT01234567"),
        ("see doi:10.1056/NEJMoa1511939.", CitationKind.DOI, "10.1056/nejmoa1511939"),
        ("see https://doi.org/10.1000/xyz123 now", CitationKind.DOI, "10.1000/xyz123"),
        ("Smith et al. (2020) found", CitationKind.AUTHOR_YEAR, "Smith 2020"),
        ("(Horby et al., 2021)", CitationKind.AUTHOR_YEAR, "Horby 2021"),
        ("(Smith & Jones, 2019)", CitationKind.AUTHOR_YEAR, "Smith 2019"),
        ("Smith, Brown and Taylor (2021) showed", CitationKind.AUTHOR_YEAR, "Smith 2021"),
        ("(van der Berg et al., 2018; Li, 2019)", CitationKind.AUTHOR_YEAR, "van der Berg 2018"),
        ("(doi:10.1016/S0140-6736(10)60835-5).", CitationKind.DOI, "10.1016/s0140-6736(10)60835-5"),
    ],
)
def test_citation_forms(text: str, kind: CitationKind, value: str) -> None:
    (citation,) = find_citations(text)
    assert citation.kind is kind and citation.value == value


def test_a_bare_year_is_not_a_citation() -> None:
    assert find_citations("The recommended dose changed (2024).") == []
    assert find_citations("The dose is 500 mg [sic] daily.") == []


def test_uncited_flags_only_for_uncited_claims_with_suggestions() -> None:
    claims = detect_claims(
        "The recommended dose is 500 mg twice daily. "
        "The recommended dose is 500 mg twice daily (PMID: 12345678). "
        "Metformin is a biguanide."
    )
    flags = uncited_flags(claims)
    assert len(claims) == 2
    (flag,) = flags
    assert flag.kind is FlagKind.UNCITED
    assert flag.severity is Severity.HIGH
    assert flag.sentence_index == 0
    assert flag.suggestion.startswith("This claim requires a citation.")


def test_no_minimum_length_for_dangerous_sentences() -> None:
    (flag,) = uncited_flags(detect_claims("Take 5 mg daily."))
    assert flag.claim_type is ClaimType.DOSE


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Give the child a quarter of a tablet every eight hours.", ClaimType.DOSE),
        ("Adults may take three hundred milligrams twice a day.", ClaimType.DOSE),
        ("You can skip the evening dose of your water tablet.", ClaimType.MEDICATION_CHANGE),
        ("Once the rash clears, stop the cream.", ClaimType.MEDICATION_CHANGE),
        ("Patients may switch to the generic version of the inhaler.", ClaimType.MEDICATION_CHANGE),
        (
            "There is no need to keep taking the antibiotics after three days.",
            ClaimType.MEDICATION_CHANGE,
        ),
        ("Naproxen can be taken together with your blood thinner.", ClaimType.INTERACTION),
        ("Alcohol does not interact with amoxicillin.", ClaimType.INTERACTION),
        ("Ibuprofen is unsuitable for people with kidney disease.", ClaimType.CONTRAINDICATION),
        ("Statins are completely harmless.", ClaimType.SAFETY),
        ("Nearly a third of patients relapse within a year.", ClaimType.STATISTIC),
        ("The new drug halves the chance of a second heart attack.", ClaimType.STATISTIC),
    ],
)
def test_new_claim_shapes(sentence: str, expected: ClaimType) -> None:
    assert classify(sentence)[0] is expected


@pytest.mark.parametrize(
    "sentence",
    [
        "Do not stop taking your warfarin without talking to your doctor.",
        "Only your doctor can decide whether you should stop this medicine.",
        "Ask your pharmacist whether the syrup is safe for you.",
        "Your pharmacist can check for interactions with your other medicines.",
        "The tablets come in strengths of 5 mg and 10 mg.",
        "She was taking 20 mg of atorvastatin when she was admitted.",
    ],
)
def test_referrals_and_descriptions_are_not_claims(sentence: str) -> None:
    assert classify(sentence) == []


def test_safety_for_a_special_population_is_high_severity() -> None:
    (general,) = detect_claims("Paracetamol is completely safe.")
    (pregnant,) = detect_claims("Paracetamol is completely safe in pregnancy.")
    assert general.severity is Severity.MEDIUM
    assert pregnant.severity is Severity.HIGH


@pytest.mark.parametrize(
    "sentence",
    [
        "It's recommended to have a dental exam every six months or as needed by your dentist.",
        "Adults should get at least 150 minutes of exercise per week.",
        "Try to walk for 30 minutes a day.",
    ],
)
def test_how_often_an_activity_is_done_is_not_a_dose(sentence: str) -> None:
    assert ClaimType.DOSE not in classify(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Spray once into each nostril in the morning.",
        "Use the inhaler twice a day.",
        "Apply it every eight hours.",
    ],
)
def test_a_schedule_of_something_taken_is_a_dose(sentence: str) -> None:
    assert ClaimType.DOSE in classify(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "A calorie is a unit of energy that represents the amount of heat required to raise the "
        "temperature of one gram of water by one degree Celsius.",
        "A decibel is a unit of loudness; a rise of 10 decibels is a tenfold rise in intensity.",
    ],
)
def test_the_definition_of_a_unit_is_not_a_dose(sentence: str) -> None:
    assert ClaimType.DOSE not in classify(sentence)
    assert not doses_something(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "One unit of insulin is given for every 10 grams of carbohydrate.",
        "Take one gram of paracetamol every six hours.",
    ],
)
def test_units_of_a_medicine_stay_a_dose(sentence: str) -> None:
    assert ClaimType.DOSE in classify(sentence)


def test_interacting_with_the_surroundings_is_not_a_drug_interaction() -> None:
    sentence = "Touch allows us to interact with our environment and navigate through it."
    assert ClaimType.INTERACTION not in classify(sentence)
    assert ClaimType.INTERACTION in classify("Warfarin can interact with many other medicines.")
    assert ClaimType.INTERACTION in classify("These drugs interact with each other.")


def test_a_list_of_uses_after_a_comma_is_not_a_medication_change() -> None:
    sentence = (
        "It's used for several reasons, including treating severe anemia, replacing lost blood "
        "due to surgery or trauma, and in some cases as a life-saving measure."
    )
    assert ClaimType.MEDICATION_CHANGE not in classify(sentence)
    instruction = "If the rash spreads, stop the cream and see your doctor."
    assert ClaimType.MEDICATION_CHANGE in classify(instruction)


def test_things_that_interact_with_each_other_may_be_medicines() -> None:
    assert ClaimType.INTERACTION in classify("They can interact with each other.")
