"""Amounts, schedules and proportions in medical text, whether written in digits or in words.

One extractor for every part of medgate that asks "does this text state a dose?": the claims
layer's dose claims and dose-information check, and CareGuard's rule that a draft in a no-dose
category must not state an amount or schedule. Numbers and units come from quantulum3
(chosen by measurement, see docs/claims.md): it reads "two hundred milligrams", "half a
teaspoon", "a third", "four to six hours" and "15 mg/kg" into values with units and ranges.
On top of it this module adds what a general quantity parser does not know about medicines:

- dose forms ("two puffs", "one and a half tablets", "ten units"), which quantulum3 reads as bare
  numbers or as unrelated units;
- schedules ("twice a day", "thrice daily", "every four hours", "every other day", "at
  bedtime"), which it does not parse at all;
- proportions ("one in three", "nine out of ten", "a quarter of", "95 percent"), for statistics
  written in words.
"""

from __future__ import annotations

import re
import warnings
from enum import StrEnum
from functools import lru_cache
from typing import Any

from pydantic import Field

from medgate.records import Record


class QuantityKind(StrEnum):
    MASS = "mass"
    """mg, mcg, g: an amount of a medicine."""
    VOLUME = "volume"
    """ml, teaspoons, drops."""
    DOSE_UNIT = "dose_unit"
    """units, IU: insulin, heparin, vitamin D."""
    DOSE_FORM = "dose_form"
    """A count of tablets, capsules, puffs, sachets, patches."""
    RATE = "rate"
    """An amount per body weight, area or time: mg/kg, mg per day."""
    SCHEDULE = "schedule"
    """How often: twice a day, every four hours, at bedtime, as needed."""
    DURATION = "duration"
    """A length of time: for ten days, 24 hours."""
    PROPORTION = "proportion"
    """A share: 36%, one in three, a quarter of, nine out of ten."""
    NUMBER = "number"
    """A bare number the extractor could not attach to a unit."""


#: The kinds that are an amount of a medicine.
AMOUNT_KINDS = frozenset(
    {
        QuantityKind.MASS,
        QuantityKind.VOLUME,
        QuantityKind.DOSE_UNIT,
        QuantityKind.DOSE_FORM,
        QuantityKind.RATE,
    }
)


class Quantity(Record):
    """One quantity found in a text, with its place so a flag can point at it."""

    text: str = Field(description="The quantity as written.")
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    kind: QuantityKind
    value: float | None = Field(
        default=None, description="Central value; None for schedules without a number."
    )
    low: float | None = Field(default=None, description="Lower end of a range ('4 to 6 hours').")
    high: float | None = Field(default=None, description="Upper end of a range.")
    unit: str = Field(default="", description="Normalised unit: 'milligram', 'tablet', 'day'.")


#: quantulum3 unit names that are amounts of a medicine, with their kind.
_UNIT_KINDS: dict[str, QuantityKind] = {
    "milligram": QuantityKind.MASS,
    "microgram": QuantityKind.MASS,
    "nanogram": QuantityKind.MASS,
    "gram": QuantityKind.MASS,
    "millilitre": QuantityKind.VOLUME,
    "milliliter": QuantityKind.VOLUME,
    "cubic centimetre": QuantityKind.VOLUME,
    "litre": QuantityKind.VOLUME,
    "teaspoon": QuantityKind.VOLUME,
    "per teaspoon": QuantityKind.VOLUME,
    "tablespoon": QuantityKind.VOLUME,
    "drop": QuantityKind.VOLUME,
    "international unit": QuantityKind.DOSE_UNIT,
    "percentage": QuantityKind.PROPORTION,
    "hour": QuantityKind.DURATION,
    "minute": QuantityKind.DURATION,
    "second": QuantityKind.DURATION,
    "day": QuantityKind.DURATION,
    "week": QuantityKind.DURATION,
    "month": QuantityKind.DURATION,
    "year": QuantityKind.DURATION,
}
_AMOUNT_UNIT = re.compile(r"^(?:milli|micro|nano)?gram|^(?:milli)?lit|^cubic centi|^international")

#: Countable forms a medicine comes in; quantulum3 reads these as bare numbers.
_DOSE_FORM = re.compile(
    r"\b(tablets?|tabs?|capsules?|caps|pills?|puffs?|inhalations?|sprays?|sachets?|scoops?"
    r"|patch(?:es)?|lozenges?|suppositor(?:y|ies)|pessar(?:y|ies)|ampoules?|vials?|injections?"
    r"|teaspoonfuls?|teaspoons?|tablespoons?|tsp|tbsp|drops?|units?|IU"
    r"|international units?)\b",
    re.IGNORECASE,
)
#: What may stand between a number and its dose form: "a third of a tablet", "two 500 mg tablets".
_NUMBER_TO_FORM = re.compile(
    r"^\s*(?:of\s+(?:a|an|the|your|each)\s+|extra\s+|more\s+|whole\s+|full\s+)?"
    r"(?:(?:double|single|half|full|low|high|regular)[\s-]+strength\s+)?$",
    re.IGNORECASE,
)
#: Number words quantulum3 reads only inside a quantity; "a couple of" is an amount too.
_LEAD_WORDS = re.compile(
    r"\b(?P<word>one|a|an|a\s+couple\s+of|a\s+few|couple\s+of)\s+(?=\S)", re.IGNORECASE
)
_LEAD_VALUES = {"one": 1.0, "a": 1.0, "an": 1.0}

_PERIOD = r"(?:day|days|week|weeks|month|months|hour|hours|morning|evening|night|meal|24\s*hours)"
_TIMES = (
    r"(?:once|twice|thrice|(?:one|two|three|four|five|six|\d+)(?:\s*(?:or|to|-)\s*"
    r"(?:two|three|four|five|six|\d+))?\s+times)"
)
#: Schedules. The numbers inside them are quantulum3's; these are the words around them.
_SCHEDULE = re.compile(
    rf"\b{_TIMES}(?:\s+(?:a|an|per|each|every|in\s+a|in\s+(?:twenty-four|24)\s+hours)\s+{_PERIOD}"
    r"|\s+(?:daily|weekly|nightly|monthly))?"
    r"|\bevery\s+(?:other|second|third|few|couple\s+of|\S+(?:\s+to\s+\S+)?)\s+"
    r"(?:hours?|days?|weeks?|months?|minutes?|mornings?|nights?|evenings?)"
    r"|\bevery\s+(?:day|morning|night|evening|week|month)\b"
    r"|\beach\s+(?:day|morning|night|evening|week|month)\b"
    r"|\b(?:daily|nightly|weekly|monthly|fortnightly)\b"
    r"|\b(?:a|per)\s+day\b|\bper\s+(?:week|24\s*hours)\b|/\s*(?:day|d|24\s*h)\b"
    r"|\bat\s+(?:bedtime|night)\b|\bbefore\s+(?:bed|breakfast|meals)\b"
    r"|\bin\s+the\s+(?:morning|evening)\b|\bwith\s+(?:the\s+)?(?:evening\s+|morning\s+)?(?:food|meals?)\b"
    r"|\bas\s+(?:needed|required)\b|\b(?:prn|bid|tid|qid|qds|tds|bd|od|qd|q\d+h)\b"
    r"|\bb\.i\.d\b|\bt\.i\.d\b",
    re.IGNORECASE,
)
#: "one in three", "nine out of ten", "four in five patients".
_IN_EVERY = re.compile(r"\b(?:in|out\s+of)\s+(?:every\s+)?$", re.IGNORECASE)


def _quantulum(text: str) -> list[Any]:
    """quantulum3's reading of ``text``, with its frequency-based unit disambiguation."""
    with warnings.catch_warnings():
        # Without scikit-learn quantulum3 warns at import that its optional classifier is off.
        warnings.simplefilter("ignore")
        from quantulum3 import classifier, parser

    # When scikit-learn is installed, quantulum3 unpickles a classifier it ships, built with an
    # old scikit-learn: that fails to load (ModuleNotFoundError: _loss) with current versions,
    # and unpickling shipped files is code execution anyway. Its frequency-based
    # disambiguation needs neither, and it is what medgate's measurement used.
    classifier.USE_CLF = False
    return list(parser.parse(text))


def _range(value: float, uncertainty: float | None) -> tuple[float | None, float | None]:
    if uncertainty:
        return value - uncertainty, value + uncertainty
    return None, None


#: quantulum3's names for units medicine writes otherwise ("5 ml" comes back in cubic centimetres).
_UNIT_NAMES = {
    "cubic centimetre": "millilitre",
    "per teaspoon": "teaspoon",
    "milliliter": "millilitre",
}


def _kind_of(unit_name: str) -> QuantityKind:
    if unit_name in _UNIT_KINDS:
        return _UNIT_KINDS[unit_name]
    if " per " in unit_name and _AMOUNT_UNIT.match(unit_name):
        return QuantityKind.RATE
    if _AMOUNT_UNIT.match(unit_name):
        return QuantityKind.MASS if "gram" in unit_name else QuantityKind.VOLUME
    return QuantityKind.NUMBER


def _dose_form_after(text: str, end: int) -> re.Match[str] | None:
    """The dose form that the number ending at ``end`` counts, if any."""
    for match in _DOSE_FORM.finditer(text, end, min(len(text), end + 40)):
        if _NUMBER_TO_FORM.match(text[end : match.start()]):
            return match
        return None
    return None


@lru_cache(maxsize=4096)
def _extract(text: str) -> tuple[Quantity, ...]:
    found: list[Quantity] = []
    taken: list[tuple[int, int]] = []
    for q in _quantulum(text):
        start, end = int(q.span[0]), int(q.span[1])
        value = float(q.value)
        low, high = _range(value, q.uncertainty)
        kind = _kind_of(q.unit.name)
        unit = _UNIT_NAMES.get(q.unit.name, q.unit.name)
        form = _DOSE_FORM.search(q.surface)
        if kind is QuantityKind.NUMBER or form is not None:
            # "two puffs" comes back with a nonsense unit, "ten" before "units" as a bare
            # number: look for the dose form inside the surface or just after it.
            inside = form is not None and kind is QuantityKind.NUMBER
            match = form if inside else _dose_form_after(text, end)
            if match is not None:
                noun = match.group(0).lower()
                kind = (
                    QuantityKind.DOSE_UNIT
                    if noun.startswith(("unit", "iu", "intern"))
                    else (QuantityKind.DOSE_FORM)
                )
                unit = noun.rstrip("s") if noun not in ("iu", "caps") else noun
                if not inside:
                    end = max(end, match.end())
            elif kind is QuantityKind.NUMBER and _IN_EVERY.search(text[max(0, start - 16) : start]):
                kind = QuantityKind.PROPORTION
            elif kind is QuantityKind.NUMBER and 0 < value < 1:
                kind = QuantityKind.PROPORTION  # "a third", "half", "a quarter of"
        found.append(
            Quantity(
                text=text[start:end],
                start=start,
                end=end,
                kind=kind,
                value=value,
                low=low,
                high=high,
                unit=unit,
            )
        )
        taken.append((start, end))
    # "one tablet", "a couple of aspirin", "an extra dose": counts quantulum3 leaves out.
    for lead in _LEAD_WORDS.finditer(text):
        if any(a <= lead.start() < b for a, b in taken):
            continue
        match = _dose_form_after(text, lead.end("word"))
        if match is None:
            continue
        word = " ".join(lead.group("word").lower().split())
        value = _LEAD_VALUES.get(word, 2.0)
        unit = match.group(0).lower()
        kind = QuantityKind.DOSE_UNIT if unit.startswith(("unit", "iu")) else QuantityKind.DOSE_FORM
        found.append(
            Quantity(
                text=text[lead.start() : match.end()],
                start=lead.start(),
                end=match.end(),
                kind=kind,
                value=value,
                unit=unit.rstrip("s"),
            )
        )
        taken.append((lead.start(), match.end()))
    for match in _SCHEDULE.finditer(text):
        found.append(
            Quantity(
                text=match.group(0),
                start=match.start(),
                end=match.end(),
                kind=QuantityKind.SCHEDULE,
                unit=" ".join(match.group(0).lower().split()),
            )
        )
    return tuple(sorted(found, key=lambda q: (q.start, q.end)))


def extract_quantities(text: str) -> list[Quantity]:
    """Every amount, schedule, duration and proportion in ``text``, in order of appearance."""
    return list(_extract(text))


def medicine_amounts(text: str) -> list[Quantity]:
    """Amounts of a medicine: 200 mg, half a teaspoon, two puffs, ten units, 15 mg/kg."""
    return [q for q in _extract(text) if q.kind in AMOUNT_KINDS]


def schedules(text: str) -> list[Quantity]:
    """How often something is taken: twice a day, every four hours, at bedtime."""
    return [q for q in _extract(text) if q.kind is QuantityKind.SCHEDULE]


def proportions(text: str) -> list[Quantity]:
    """Shares and rates: 36%, ninety-five percent, one in three, a quarter of."""
    return [q for q in _extract(text) if q.kind is QuantityKind.PROPORTION]


def states_dose(text: str) -> bool:
    """True when ``text`` names an amount of a medicine or a schedule for taking one.

    Deliberately broad: CareGuard uses it to keep every number and schedule out of answers in
    categories where only a clinician may give them.
    """
    return any(q.kind in AMOUNT_KINDS or q.kind is QuantityKind.SCHEDULE for q in _extract(text))
