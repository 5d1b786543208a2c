"""Sentence splitting that survives medical prose.

A plain ``split on [.!?] + space`` breaks "Smith et al. reported", "e.g. metformin",
"approx. 2.5 mg", and drops a citation written after the full stop ("... daily. [3]") into the
next sentence, where it would cite the wrong claim. The splitter here walks the text once, keeps
character offsets so a flag can point back into the original report, treats Markdown list items
and headings as their own units, and attaches trailing citations to the sentence they follow.
"""

from __future__ import annotations

import re

from pydantic import Field

from medgate.records import Record

#: Words that end with a full stop without ending a sentence (compared lower-case, without the dot).
ABBREVIATIONS = frozenset(
    [
        "al",
        "e.g",
        "i.e",
        "eg",
        "ie",
        "etc",
        "vs",
        "cf",
        "approx",
        "ca",
        "dr",
        "prof",
        "mr",
        "mrs",
        "ms",
        "st",
        "jr",
        "sr",
        "figs",
        "inc",
        "ltd",
        "corp",
        "dept",
        "univ",
        "u.s",
        "u.k",
        "e.u",
        "resp",
        "incl",
        "esp",
        "viz",
        "b.i.d",
        "t.i.d",
        "q.i.d",
        "q.d",
        "p.o",
        "i.v",
        "i.m",
        "s.c",
        "spp",
        "sp",
        "subsp",
    ]
)
#: Abbreviations that only stay attached when a number follows ("No. 5", "p. 12", "Fig. 2").
NUMBERED_ABBREVIATIONS = frozenset(
    ["no", "nos", "p", "pp", "vol", "ref", "refs", "fig", "tab", "eq"]
)

#: A list item's or heading's marker: a bullet, "1." or "1)", or Markdown's "#" to "######".
_MARKER = r"(?:[-*+•]|\d+[.)]|#{1,6})"
_LIST_MARKER = re.compile(rf"^\s*{_MARKER}\s+")
_BARE_MARKER = re.compile(rf"\s*{_MARKER}\s*")
_END = re.compile(r"[.!?]+[\"'”’)\]]*")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")
#: Citations that may follow the full stop yet belong to the sentence before it.
_TRAILING_CITATION = re.compile(
    r"(?:\s*(?:\[\d+(?:\s*[,\-–]\s*\d+)*\]|\((?:PMID|NCT|DOI|doi|PMCID)[^()]{0,80}\)))+"
)


class Sentence(Record):
    """One sentence of a report with its position in the original text."""

    text: str = Field(description="The sentence, whitespace-trimmed, list markers removed.")
    start: int = Field(ge=0, description="Offset of the first character in the original text.")
    end: int = Field(ge=0, description="Offset one past the last character.")
    index: int = Field(ge=0, description="Position among the report's sentences.")


def _is_boundary(text: str, dot: int, after: int) -> bool:
    """Decide whether the punctuation run ``text[dot:after]`` ends a sentence."""
    if after < len(text) and not text[after].isspace():
        return False  # "2.5", "e.g.x", "U.S.-based": no break inside a token
    rest = text[after:].lstrip()
    if not rest:
        return True
    if text[dot] in "!?":
        return True
    word = _WORD_BEFORE.search(text[:dot])
    if word:
        token = word.group(1).lower().rstrip(".")
        if token in ABBREVIATIONS:
            return False
        if token in NUMBERED_ABBREVIATIONS and rest[0].isdigit():
            return False
        if len(token) == 1 and word.group(1).isupper():
            return False  # an initial: "J. Smith"
    nxt = rest[0]
    # A new sentence starts with a capital, a digit, a quote or an opening bracket; a lower-case
    # word after the stop means the stop was an abbreviation we do not know.
    return nxt.isupper() or nxt.isdigit() or nxt in "\"'“‘([*_"


def _split_block(block: str, offset: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    pos = 0
    while True:
        match = _END.search(block, pos)
        if match is None:
            break
        dot, after = match.start(), match.end()
        if _is_boundary(block, dot, after):
            cite = _TRAILING_CITATION.match(block, after)
            if cite is not None and cite.end() > after:
                after = cite.end()
                tail = re.match(r"\.?", block[after:])
                after += tail.end() if tail else 0
            spans.append((start, after))
            start = after
        pos = after
    if block[start:].strip():
        spans.append((start, len(block)))
    return [(offset + a, offset + b) for a, b in spans]


def _blocks(text: str) -> list[tuple[int, str]]:
    """Cut at blank lines, before list items and headings, and after headings."""
    blocks: list[tuple[int, str]] = []
    start = 0
    offset = 0
    previous_heading = False
    for line in text.splitlines(keepends=True):
        is_marker = _LIST_MARKER.match(line) is not None
        if offset > start and (not line.strip() or is_marker or previous_heading):
            blocks.append((start, text[start:offset]))
            start = offset
        previous_heading = line.lstrip().startswith("#")
        offset += len(line)
    blocks.append((start, text[start:]))
    return blocks


def bare_marker(line: str) -> bool:
    """Whether ``line`` holds a list or heading marker and nothing else."""
    return _BARE_MARKER.fullmatch(line) is not None


def split_sentences(text: str) -> list[Sentence]:
    """Split ``text`` into sentences with their offsets; empty pieces are dropped."""
    sentences: list[Sentence] = []
    blocks = _blocks(text)
    for offset, block in blocks:
        marker = _LIST_MARKER.match(block)
        skip = marker.end() if marker else 0
        for a, b in _split_block(block[skip:], offset + skip):
            raw = text[a:b]
            stripped = raw.strip()
            if not any(ch.isalnum() for ch in stripped):
                continue
            lead = len(raw) - len(raw.lstrip())
            start = a + lead
            body = " ".join(stripped.split())
            sentences.append(
                Sentence(text=body, start=start, end=start + len(stripped), index=len(sentences))
            )
    return sentences
