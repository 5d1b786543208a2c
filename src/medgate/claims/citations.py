"""Finding citations inside a sentence and the reference list at the end of a report.

Accepted forms: bracket references (``[1]``, ``[2, 3]``, ``[4-6]``), PubMed ids (``PMID: 12345678``,
``PMID 12345678``), ClinicalTrials.gov ids (``NCT01234567``), DOIs (``doi:10.1056/...`` or a doi.org
link) and author-year references (``Smith et al. (2020)``, ``(Smith & Jones, 2019)``). A bare year
in parentheses is *not* a citation here: "(2024)" names no source anyone could look up, so a claim
carrying only a year is still treated as uncited.
"""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import Field

from medgate.records import Record


class CitationKind(StrEnum):
    BRACKET = "bracket"
    PMID = "pmid"
    NCT = "nct"
    DOI = "doi"
    AUTHOR_YEAR = "author_year"


class Citation(Record):
    """One citation as written in the text, with a normalised identifier."""

    kind: CitationKind
    value: str = Field(
        description="Normalised id: PMID digits, NCT id, DOI, reference numbers, or for an "
        "author-year citation the first author's family name and the year ('Smith 2019')."
    )
    text: str = Field(description="The citation exactly as written.")

    @property
    def key(self) -> str:
        """``PMID:123``, ``NCT01234567``, ``DOI:10.x/y``: the id a record store is asked for."""
        if self.kind is CitationKind.PMID:
            return f"PMID:{self.value}"
        if self.kind is CitationKind.DOI:
            return f"DOI:{self.value}"
        return self.value

    @property
    def author_year(self) -> tuple[str, int] | None:
        """(first author's family name, year) of an author-year citation."""
        if self.kind is not CitationKind.AUTHOR_YEAR:
            return None
        author, _, year = self.value.rpartition(" ")
        return (author, int(year)) if year.isdigit() else None


_NAME = r"(?:(?:van|de|von|der|del|da|di|le|la)\s+){0,2}[A-Z][A-Za-z'’\-]+"
#: One author, "et al.", or a list: "Smith and Jones", "Smith, Brown and Taylor", "Chen & Lee".
_AUTHORS = rf"{_NAME}(?:\s+et\s+al\.?|(?:\s*,\s*{_NAME})*\s*,?\s+(?:and|&)\s+{_NAME})?"
#: Capitalised words that open a parenthesis without being an author ("Figure (2019)").
_NOT_AUTHORS = frozenset(
    ["In", "The", "From", "Since", "Until", "Figure", "Table", "Year", "Published", "Updated"]
)
_PATTERNS: tuple[tuple[CitationKind, re.Pattern[str]], ...] = (
    (CitationKind.PMID, re.compile(r"\bPMID\s*:?\s*(\d{1,9})\b", re.IGNORECASE)),
    (CitationKind.NCT, re.compile(r"\b(NCT\d{8})\b", re.IGNORECASE)),
    (
        CitationKind.DOI,
        # A DOI may hold balanced parentheses: 10.1016/S0140-6736(10)60835-5.
        re.compile(
            r"(?:\bdoi\s*:\s*|https?://(?:dx\.)?doi\.org/)"
            r"(10\.\d{4,9}/(?:[^\s\"<>()\[\]]|\([^\s\"<>()]*\))+)",
            re.IGNORECASE,
        ),
    ),
    (CitationKind.BRACKET, re.compile(r"\[(\d{1,3}(?:\s*[,\-–]\s*\d{1,3})*)\]")),
    (
        CitationKind.AUTHOR_YEAR,
        re.compile(
            rf"\b(?P<na>{_AUTHORS})\s*,?\s*\((?P<ny>(?:19|20)\d{{2}})[a-z]?\)"
            rf"|\(\s*(?P<pa>{_AUTHORS})\s*,?\s*(?P<py>(?:19|20)\d{{2}})[a-z]?(?:\s*;[^()]*)?\)"
        ),
    ),
)


def find_citations(sentence: str) -> list[Citation]:
    """All citations in ``sentence``, in order of appearance."""
    found: list[tuple[int, Citation]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(sentence):
            span = match.span()
            if any(a < span[1] and span[0] < b for a, b in taken):
                continue
            if kind is CitationKind.AUTHOR_YEAR:
                authors = match.group("na") or match.group("pa")
                first = re.split(r"\s+et\s+al|\s*,|\s+and\s+|\s*&", authors)[0].strip()
                if first.split()[-1] in _NOT_AUTHORS:
                    continue
                value = f"{first} {match.group('ny') or match.group('py')}"
            else:
                raw = next(g for g in match.groups() if g) if match.groups() else match.group(0)
                value = _normalise(kind, raw)
            taken.append(span)
            found.append((span[0], Citation(kind=kind, value=value, text=match.group(0).strip())))
    return [c for _, c in sorted(found, key=lambda pair: pair[0])]


def without_citations(sentence: str) -> str:
    """The sentence with its citations cut out, so what is judged is the claim, not its source
    (a cited year is not a number the source must contain)."""
    for citation in find_citations(sentence):
        sentence = sentence.replace(citation.text, " ")
    return re.sub(r"\(\s*\)|\[\s*\]", " ", " ".join(sentence.split())).strip()


def _normalise(kind: CitationKind, raw: str) -> str:
    if kind is CitationKind.NCT:
        return raw.upper()
    if kind is CitationKind.DOI:
        return raw.rstrip(".,;:").lower()
    if kind is CitationKind.BRACKET:
        return ",".join(str(n) for n in expand_bracket(raw))
    return raw


def expand_bracket(raw: str) -> list[int]:
    """``"1, 3-5"`` -> ``[1, 3, 4, 5]``; ranges longer than 50 are refused as typos."""
    numbers: list[int] = []
    for part in re.split(r"\s*,\s*", raw.strip()):
        bounds = re.split(r"\s*[\-–]\s*", part)
        if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
            lo, hi = int(bounds[0]), int(bounds[1])
            if lo <= hi and hi - lo <= 50:
                numbers.extend(range(lo, hi + 1))
                continue
        if part.isdigit():
            numbers.append(int(part))
    return numbers


class Reference(Record):
    """One entry of a report's reference list."""

    number: int = Field(ge=0)
    text: str
    citations: list[Citation] = Field(default_factory=list)
    url: str | None = None


_REF_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s*)?\**\s*(?:references|sources|bibliography|citations|works cited)"
    r"\s*:?\**\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_REF_ENTRY = re.compile(r"^\s*(?:[-*]\s*)?\[?(\d{1,3})[\].)]\s+(.+?)\s*$", re.MULTILINE)
_URL = re.compile(r"https?://[^\s<>\"')\]]+[^\s<>\"')\].,;]")


def split_references(text: str) -> tuple[str, list[Reference]]:
    """Separate the body from a trailing reference list (``References``/``Sources`` heading).

    Returns the body (the text before the heading) and the numbered entries after it. A report
    without such a heading has no reference list; its body is the whole text.
    """
    headings = list(_REF_HEADING.finditer(text))
    if not headings:
        return text, []
    heading = headings[-1]
    body, tail = text[: heading.start()], text[heading.end() :]
    references: list[Reference] = []
    for match in _REF_ENTRY.finditer(tail):
        entry = match.group(2)
        url = _URL.search(entry)
        references.append(
            Reference(
                number=int(match.group(1)),
                text=entry,
                citations=[c for c in find_citations(entry) if c.kind is not CitationKind.BRACKET],
                url=url.group(0) if url else None,
            )
        )
    return body, references


def find_urls(text: str) -> list[str]:
    """Every http(s) URL in ``text``, in order, without duplicates."""
    seen: dict[str, None] = {}
    for match in _URL.finditer(text):
        seen.setdefault(match.group(0), None)
    return list(seen)
