from __future__ import annotations

import pytest

from medgate.claims import split_sentences
from medgate.claims.sentences import bare_marker


def texts(text: str) -> list[str]:
    return [s.text for s in split_sentences(text)]


@pytest.mark.parametrize(
    "text",
    [
        "Smith et al. reported a fall in mortality in older adults.",
        "Several agents, e.g. metformin and insulin, lower glucose.",
        "Some drugs, i.e. statins, are widely used.",
        "The dose was 2.5 mg twice daily in the trial.",
        "Plasma levels reached 0.75 mg/L vs. 1.2 mg/L with placebo.",
        "Dr. Jones and Prof. Lee wrote the guideline.",
        "See Fig. 2 and No. 5 of the series for details.",
        "J. Smith described the first case in detail.",
        "The drug is given b.i.d. with food.",
    ],
)
def test_does_not_break_inside_a_sentence(text: str) -> None:
    assert texts(text) == [text]


def test_splits_ordinary_sentences_and_keeps_offsets() -> None:
    text = "First sentence here. Second one follows!  Is there a third? Yes."
    sentences = split_sentences(text)
    assert [s.text for s in sentences] == [
        "First sentence here.",
        "Second one follows!",
        "Is there a third?",
        "Yes.",
    ]
    for sentence in sentences:
        assert text[sentence.start : sentence.end] == sentence.text
    assert [s.index for s in sentences] == [0, 1, 2, 3]


def test_trailing_citation_stays_with_its_sentence() -> None:
    text = "The recommended dose is 500 mg twice daily. [1] Next claim here. (PMID: 123) Done."
    assert texts(text) == [
        "The recommended dose is 500 mg twice daily. [1]",
        "Next claim here. (PMID: 123)",
        "Done.",
    ]


def test_markdown_headings_and_list_items_are_units() -> None:
    text = (
        "# Metformin\nMetformin lowers glucose.\n\n- Side effects include nausea\n"
        "- Take 5 mg daily\n1. First item\n"
    )
    assert texts(text) == [
        "Metformin",
        "Metformin lowers glucose.",
        "Side effects include nausea",
        "Take 5 mg daily",
        "First item",
    ]


def test_a_number_after_abbreviation_like_words_still_ends_sentences() -> None:
    # "no" is only an abbreviation before a number ("No. 5"); here it ends the sentence.
    assert texts("The answer is no. Then we stop.") == ["The answer is no.", "Then we stop."]


def test_empty_and_punctuation_only_text() -> None:
    assert split_sentences("") == []
    assert split_sentences("  ---  \n\n ... ") == []


@pytest.mark.parametrize(
    ("line", "bare"),
    [
        ("-", True),
        ("  2.  ", True),
        ("3)", True),
        ("##", True),
        ("•", True),
        ("", False),
        ("   ", False),
        ("- Take 5 mg daily", False),
        ("1. First item", False),
        ("Plain text", False),
    ],
)
def test_bare_marker_is_a_marker_with_nothing_after_it(line: str, bare: bool) -> None:
    assert bare_marker(line) is bare
