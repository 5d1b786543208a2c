"""Which library reads medical amounts written in words? The measurement behind medgate.quantities.

Run in a scratch environment with the candidates installed (they are not medgate dependencies):

    python -m venv /tmp/qv && /tmp/qv/bin/pip install text2num number-parser numerizer \
        text2digits quantulum3 && /tmp/qv/bin/python scripts/compare_quantity_libraries.py

For each sentence the expected numbers are listed; a library gets the sentence right when every
expected number appears in what it returns (as digits in the rewritten text for the
text-to-number libraries, as a parsed value or range end for quantulum3). Units are scored for
quantulum3 alone, the only candidate that reads them.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable

warnings.filterwarnings("ignore")

#: (sentence, expected numbers, expected units in order of the numbers; "" = no unit to check)
CASES: list[tuple[str, list[float], list[str]]] = [
    ("Take two hundred milligrams of ibuprofen every four hours.", [200, 4], ["milligram", "hour"]),
    ("Give half a teaspoon of the syrup every six hours.", [0.5, 6], ["teaspoon", "hour"]),
    ("A third of the adult amount is enough.", [1 / 3], [""]),
    ("Take one and a half tablets twice a day.", [1.5], [""]),
    ("Seven hundred and fifty milligrams of amoxicillin.", [750], ["milligram"]),
    ("Up to four grams of acetaminophen in twenty-four hours.", [4, 24], ["gram", "hour"]),
    ("Inject ten units of insulin before breakfast.", [10], [""]),
    ("Take 1 to 2 tablets every 4 hours.", [1, 2, 4], ["", "", "hour"]),
    ("Colchicine 0.5 mg two or three times daily.", [0.5, 2, 3], ["milligram", "", ""]),
    (
        "Fifteen milligrams per kilogram every six hours.",
        [15, 6],
        ["milligram per kilogram", "hour"],
    ),
    ("Fifty micrograms a day.", [50], ["microgram"]),
    ("Two puffs every four to six hours.", [2, 4, 6], ["", "hour", "hour"]),
    ("Give 2.5 ml up to four times in a day.", [2.5, 4], ["cubic centimetre", ""]),
    ("Three hundred and fifty milligrams daily.", [350], ["milligram"]),
    ("Use two drops in each eye every twelve hours.", [2, 12], ["drop", "hour"]),
    ("The maximum is 3 g a day.", [3], ["gram"]),
    ("Take a quarter of a tablet.", [0.25], [""]),
    ("Give 5 mL twice daily.", [5], ["cubic centimetre"]),
    ("Take 500mg once a day.", [500], ["milligram"]),
    ("Ten mcg weekly.", [10], ["microgram"]),
]

_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:/\d+)?")


def _numbers_in(text: str) -> list[float]:
    values = []
    for token in _NUMBER.findall(text):
        if "/" in token:
            num, den = token.split("/")
            values.append(float(num) / float(den))
        else:
            values.append(float(token))
    return values


def _has(values: list[float], expected: float) -> bool:
    return any(abs(v - expected) < 1e-3 for v in values)


def score_text_library(convert: Callable[[str], str]) -> tuple[int, float, list[str]]:
    right, wrong = 0, []
    start = time.perf_counter()
    for text, expected, _ in CASES:
        try:
            values = _numbers_in(convert(text))
        except Exception as exc:  # a crash is a wrong answer
            values = []
            wrong.append(f"{text} -> {type(exc).__name__}")
            continue
        if all(_has(values, e) for e in expected):
            right += 1
        else:
            wrong.append(f"{text} -> {convert(text)}")
    return right, (time.perf_counter() - start) / len(CASES), wrong


def score_quantulum() -> tuple[int, int, float, list[str]]:
    from quantulum3 import classifier, parser

    classifier.USE_CLF = False
    parser.parse("warm up: 5 mg")
    right = units_right = 0
    wrong = []
    start = time.perf_counter()
    for text, expected, units in CASES:
        found = []
        for q in parser.parse(text):
            # A range ("four to six hours") comes back as its middle and half-width.
            spread = float(q.uncertainty or 0.0)
            for value in {float(q.value), float(q.value) - spread, float(q.value) + spread}:
                found.append((value, q.unit.name))
        values = [v for v, _ in found]
        if all(_has(values, e) for e in expected):
            right += 1
        else:
            wrong.append(f"{text} -> {found}")
        unit_ok = all(
            not unit or any(abs(v - e) < 1e-3 and n == unit for v, n in found)
            for e, unit in zip(expected, units, strict=True)
        )
        units_right += unit_ok
    return right, units_right, (time.perf_counter() - start) / len(CASES), wrong


def main() -> None:
    from number_parser import parse as number_parser_parse
    from numerizer import numerize
    from text2digits import text2digits
    from text_to_num import alpha2digit

    libraries: dict[str, Callable[[str], str]] = {
        "text2num (alpha2digit)": lambda s: alpha2digit(s, "en"),
        "number-parser": number_parser_parse,
        "numerizer": numerize,
        "text2digits": text2digits.Text2Digits().convert,
    }
    print(f"{len(CASES)} sentences")
    for name, convert in libraries.items():
        right, seconds, wrong = score_text_library(convert)
        print(f"{name}: numbers right {right}/{len(CASES)}, {seconds * 1000:.1f} ms/sentence")
        for line in wrong:
            print(f"    {line}")
    right, units_right, seconds, wrong = score_quantulum()
    print(
        f"quantulum3: numbers right {right}/{len(CASES)}, units right {units_right}/{len(CASES)}, "
        f"{seconds * 1000:.1f} ms/sentence"
    )
    for line in wrong:
        print(f"    {line}")


if __name__ == "__main__":
    main()
