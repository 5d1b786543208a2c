"""A question that asks how two things differ is answered only by a text that describes both.

"What is the difference between a nurse practitioner and a doctor?" answered with a sentence on
nurse practitioners alone, or "What is the difference between Crohn's disease and ulcerative
colitis?" answered with what the two share, reads as an answer and says nothing the reader
asked (docs/results/careguard_runs_v16/NOTES.md). The trim can leave such a text behind when it
cuts the sentences on one side, and the generator sometimes writes one. This reads the two
sides from the question and checks the text a round would release: each side must be named,
and the text must either contrast them in a sentence ("while", "whereas", "unlike", ...) or
give more than one sentence (or clause after a semicolon). A text that fails is not released;
the refinement is told to describe each side (:data:`BOTH_SIDES`).

The check is lexical on purpose: it is cheap, it cannot be argued with by the draft, and it
only asks for what any answer to such a question contains. It does not judge whether what is
said of each side is right; the judges and the trim do that.
"""

from __future__ import annotations

import re

from medgate.careguard.degeneration import STOP_WORDS
from medgate.claims.sentences import split_sentences

_END = r"(?:\s+in\s+(?:medicine|healthcare|health\s+care|the\s+body|people|adults))?\s*[?.!]*\s*$"
#: The question shapes that ask how two things differ, each with the two sides as groups.
_SHAPES = (
    re.compile(r"\bdifferences?\s+between\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)" + _END, re.I),
    re.compile(
        r"\bhow\s+(?:is|are|does|do)\s+(?P<a>.+?)\s+(?:differ|different)\s+from\s+(?P<b>.+?)"
        + _END,
        re.I,
    ),
    re.compile(
        r"\bhow\s+(?:can|do|would)\s+(?:i|you|we|one)\s+tell\s+(?P<a>.+?)\s+from\s+"
        r"(?P<b>.+?)" + _END,
        re.I,
    ),
    re.compile(
        r"^(?:what\s+is\s+|what's\s+)?(?P<a>[^?]+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?)" + _END, re.I
    ),
)
#: Words that say two things are set against each other within one sentence.
_CONTRAST = re.compile(
    r"\b(?:while|whereas|but|however|unlike|instead|differ\w*|compared|contrast|rather\s+than"
    r"|on\s+the\s+other\s+hand|than)\b",
    re.I,
)
_WORD = re.compile(r"[a-z0-9]+")
#: Letters of a word compared, so that "chromosomes" names "chromosome" (and, by the prefix
#: rule of :func:`_names`, "colds" names "cold").
_STEM = 5
_GENERIC = frozenset(
    {"difference", "between", "type", "types", "kind", "kinds", "person", "people"}
)


def compared_sides(question: str) -> tuple[str, str] | None:
    """The two things ``question`` asks to tell apart, or None when it asks no such thing."""
    text = " ".join(question.split())
    for shape in _SHAPES:
        found = shape.search(text)
        if found is not None:
            return found.group("a").strip(" ,"), found.group("b").strip(" ,")
    return None


def _stems(text: str) -> set[str]:
    return {
        w[:_STEM]
        for w in _WORD.findall(text.lower())
        if len(w) >= 2 and w not in STOP_WORDS and w not in _GENERIC
    }


def _names(side: set[str], text: set[str]) -> bool:
    """Whether a word of ``text`` names ``side``: the same stem, or one stem the start of the
    other ("cold" in "colds"); a short word ("CT") only as itself."""
    return any(
        t == s or (min(len(t), len(s)) >= 3 and (t.startswith(s) or s.startswith(t)))
        for s in side
        for t in text
    )


def one_sided(question: str, text: str) -> bool:
    """True when ``question`` asks how two things differ and ``text`` does not describe both:
    a side goes unnamed, one sentence names both without setting them against each other, or
    it sets them against each other and says the same of each.
    A side whose every word the other side shares ("an overactive and an underactive thyroid":
    "thyroid") is named by its own words only."""
    sides = compared_sides(question)
    if sides is None:
        return False
    first, second = _stems(sides[0]), _stems(sides[1])
    first, second = first - second or first, second - first or second
    if not first or not second:
        return False
    # A clause after a semicolon counts as a sentence: "a cold is ...; hay fever is ...".
    parts = [p for s in split_sentences(text) for p in s.text.split(";")]
    sentences = [_stems(p) for p in parts if _WORD.search(p.lower())]
    named = set().union(*sentences) if sentences else set()
    if not (_names(first, named) and _names(second, named)):
        return True
    if len(sentences) >= 2:
        return False
    contrast = _CONTRAST.search(text)
    if contrast is None:
        return True
    # "A calorie is a unit of energy, while a kilojoule is a unit of energy.": the two halves
    # say the same once the sides' own words are set aside.
    sides_words = first | second
    before, after = _stems(text[: contrast.start()]), _stems(text[contrast.end() :])
    return bool(before - sides_words) and before - sides_words == after - sides_words


#: What the refinement is told when its text did not describe both sides. Fixed words, never
#: the question's: the generator's instructions are the one place the person's text must not
#: reach unquoted (medgate.careguard.quoting), and the sides are read from that text.
BOTH_SIDES = (
    "The question asks how two things differ: describe each of them in a plain sentence of its "
    "own, then say how they differ."
)
