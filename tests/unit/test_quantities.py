"""medgate.quantities: amounts, dose forms, schedules and proportions, in digits and in words."""

from __future__ import annotations

import pytest

from medgate.quantities import (
    QuantityKind,
    extract_quantities,
    medicine_amounts,
    proportions,
    schedules,
    states_dose,
)


@pytest.mark.parametrize(
    ("text", "kind", "value", "unit"),
    [
        ("Take two hundred milligrams of ibuprofen.", QuantityKind.MASS, 200.0, "milligram"),
        ("Seven hundred and fifty milligrams.", QuantityKind.MASS, 750.0, "milligram"),
        ("Give half a teaspoon of the syrup.", QuantityKind.VOLUME, 0.5, "teaspoon"),
        ("Give 2.5 ml of the suspension.", QuantityKind.VOLUME, 2.5, "millilitre"),
        ("Fifty micrograms of levothyroxine.", QuantityKind.MASS, 50.0, "microgram"),
        ("Inject ten units of insulin.", QuantityKind.DOSE_UNIT, 10.0, "unit"),
        ("Use two puffs of the inhaler.", QuantityKind.DOSE_FORM, 2.0, "puff"),
        ("Chew one and a half tablets.", QuantityKind.DOSE_FORM, 1.5, "tablet"),
        ("Take one tablet with water.", QuantityKind.DOSE_FORM, 1.0, "tablet"),
        ("Fifteen milligrams per kilogram.", QuantityKind.RATE, 15.0, "milligram per kilogram"),
    ],
)
def test_amounts_in_words_and_digits(
    text: str, kind: QuantityKind, value: float, unit: str
) -> None:
    (amount,) = medicine_amounts(text)
    assert (amount.kind, amount.value, amount.unit) == (kind, pytest.approx(value), unit)
    assert text[amount.start : amount.end] == amount.text


def test_a_third_of_a_tablet_is_a_share_of_a_dose_form() -> None:
    (amount,) = medicine_amounts("Take a third of a tablet at night.")
    assert amount.kind is QuantityKind.DOSE_FORM
    assert amount.value == pytest.approx(1 / 3)
    assert amount.text == "a third of a tablet"


def test_ranges_keep_both_ends() -> None:
    (amount,) = medicine_amounts("Take 1 to 2 tablets.")
    assert (amount.low, amount.high) == (1.0, 2.0)
    hours = [q for q in extract_quantities("every four to six hours") if q.unit == "hour"]
    assert (hours[0].low, hours[0].high) == (4.0, 6.0)


@pytest.mark.parametrize(
    "text",
    [
        "twice a day",
        "thrice daily",
        "two or three times daily",
        "every four hours",
        "every 4 to 6 hours",
        "every other day",
        "every few weeks",
        "at bedtime",
        "each morning",
        "as needed",
        "once a week",
    ],
)
def test_schedules(text: str) -> None:
    (schedule,) = schedules(f"Use it {text}.")
    assert schedule.kind is QuantityKind.SCHEDULE
    assert schedule.text.lower() == text.lower()


@pytest.mark.parametrize(
    "text",
    [
        "Seventy percent of strokes",
        "ninety-five percent effective",
        "a fifth of children",
        "one in three adults",
        "nine out of ten people",
    ],
)
def test_proportions(text: str) -> None:
    assert proportions(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Take two tablets every four hours.", True),
        ("Give five millilitres twice a day.", True),
        ("The recommended amount is 400 mg.", True),
        ("Ask your pharmacist how much to take.", False),
        ("The clinic opens at nine in the morning on weekdays", True),  # a schedule, broadly read
        ("Hypertension means high blood pressure.", False),
        ("The patient was admitted on Tuesday.", False),
    ],
)
def test_states_dose(text: str, expected: bool) -> None:
    assert states_dose(text) is expected
