"""Degenerate text: the loops and stumps a small model writes when its decoding runs away.

A 0.5B model decoding greedily falls into loops ("- Sneezing\\n- Sneezing\\n- Sneezing", the
same clause again and again) and, given a token budget, stops in the middle of a list. Such a
draft says little and is often wrong, and the HRA judge of the same size scores it 1-2
(docs/results/careguard_runs/NOTES.md). These measures read the text alone, deterministically:

* ``repeated_ngram_share``: the share of the draft's word ``n``-grams (``n`` = 3) that repeat
  an earlier one;
* ``top_word_share``: the share of the content words (stop words left out) that are the most
  frequent one;
* ``distinct_ratio``: distinct words over words (low: a few words said over and over);
* ``repeated_items``: list items (lines opened by a bullet or a number) that say the same as
  an earlier item once case, punctuation and numbering are set aside;
* ``truncated``: the text stops mid-sentence because the token budget ran out.

:func:`assess_degeneration` turns them into findings, each with its reason, and a score in
[0, 1] (the largest measure over twice its limit, at least 0.5 with a finding, 1 for a
stump): the release check :class:`medgate.careguard.release_checks.Degenerate` holds a draft
with any finding back, and HRA's fitted model reads the score.
"""

from __future__ import annotations

import re
from collections import Counter

from pydantic import Field

from medgate.records import Record

_WORD = re.compile(r"[a-z0-9']+")
_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022]|[a-z][.)])\s+(.*\S)\s*$", re.IGNORECASE)
_END = re.compile(r"[.!?)\"'\u201d]\s*$")

#: Words too common to show a loop by themselves.
_STOP = """a an the and or but if of to in on at by for with from as is are was were be been
being it its this that these those you your yours i we they he she them his her their our my me
can could may might should would will not no do does did have has had so than then there which
who what when where how also more most other some any such about into over only very just each
both all"""
STOP_WORDS = frozenset(_STOP.split())

#: Limits beyond which a measure counts as degenerate; each chosen so that a plain, varied
#: answer of a few sentences stays well inside it (tests/unit/test_careguard_degeneration.py).
MAX_REPEATED_NGRAM_SHARE = 0.2
MAX_TOP_WORD_SHARE = 0.25
MIN_DISTINCT_RATIO = 0.35
MAX_REPEATED_ITEMS = 1
#: Below this many words the shares are too noisy to read.
MIN_WORDS = 20


class Degeneration(Record):
    """What the degeneration measures found in one text."""

    words: int = Field(ge=0)
    repeated_ngram_share: float = Field(ge=0, le=1)
    top_word: str = ""
    top_word_share: float = Field(ge=0, le=1)
    distinct_ratio: float = Field(ge=0, le=1)
    repeated_items: int = Field(ge=0, description="List items saying what an earlier one said.")
    truncated: bool = False
    findings: list[str] = Field(default_factory=list, description="Why it is degenerate, if it is.")
    score: float = Field(ge=0, le=1, description="0: no sign of degeneration; 1: degenerate.")

    @property
    def degenerate(self) -> bool:
        return bool(self.findings)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def repeated_ngram_share(tokens: list[str], n: int = 3) -> float:
    """Share of the word ``n``-grams that repeat an earlier one (0 for fewer than ``n`` words)."""
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    if not grams:
        return 0.0
    return 1.0 - len(set(grams)) / len(grams)


def list_items(text: str) -> list[str]:
    """The text of each bulleted or numbered line, normalised (case, punctuation, spaces)."""
    items = []
    for line in text.splitlines():
        match = _ITEM.match(line)
        if match:
            items.append(" ".join(words(match.group(1))))
    return [i for i in items if i]


def repeated_items(items: list[str]) -> int:
    """Items that repeat an earlier one, or whose first words repeat an earlier one's
    (a list that varies only its tail, "Sneezing and runny nose", "Sneezing and itchy eyes",
    still repeats itself when its items open alike)."""
    seen: set[str] = set()
    heads: Counter[str] = Counter()
    repeats = 0
    for item in items:
        head = " ".join(item.split()[:2])
        if item in seen or (len(item.split()) > 2 and heads[head] >= 1):
            repeats += 1
        seen.add(item)
        heads[head] += 1
    return repeats


def is_truncated(text: str, hit_token_limit: bool) -> bool:
    """The generation ran out of tokens and the text does not end with a sentence or a list
    item (the generator cuts a stump back to the last complete one: a text still ending
    elsewhere, "Symptoms include:" say, had nothing complete to keep)."""
    if not hit_token_limit:
        return False
    stripped = text.rstrip()
    last = stripped.rsplit("\n", 1)[-1]
    return _END.search(stripped) is None and not (
        "\n" in stripped and _ITEM.match(last) and not last.rstrip().endswith(":")
    )


def assess_degeneration(text: str, *, hit_token_limit: bool = False) -> Degeneration:
    """Every measure of ``text`` and the findings they give (see the module docstring)."""
    tokens = words(text)
    content = [w for w in tokens if w not in STOP_WORDS and len(w) > 1]
    ngram_share = repeated_ngram_share(tokens)
    counts = Counter(content)
    top, top_n = counts.most_common(1)[0] if counts else ("", 0)
    top_share = top_n / len(content) if content else 0.0
    distinct = len(set(tokens)) / len(tokens) if tokens else 1.0
    repeats = repeated_items(list_items(text))
    truncated = is_truncated(text, hit_token_limit)

    findings: list[str] = []
    excess: list[float] = []
    if len(tokens) >= MIN_WORDS:
        if ngram_share > MAX_REPEATED_NGRAM_SHARE:
            findings.append(f"{ngram_share:.0%} of its three-word phrases repeat earlier ones")
        if top_share > MAX_TOP_WORD_SHARE and top_n >= 5:
            findings.append(f'"{top}" is {top_share:.0%} of its content words')
        if distinct < MIN_DISTINCT_RATIO:
            findings.append(f"only {distinct:.0%} of its words are distinct")
        excess += [
            ngram_share / MAX_REPEATED_NGRAM_SHARE / 2,
            top_share / MAX_TOP_WORD_SHARE / 2,
            (1 - distinct) / (1 - MIN_DISTINCT_RATIO) / 2,
        ]
    if repeats > MAX_REPEATED_ITEMS:
        findings.append(f"{repeats} list items repeat earlier ones")
    excess.append(repeats / (MAX_REPEATED_ITEMS + 1) / 2)
    if truncated:
        findings.append("it stops mid-sentence: the token budget ran out")
    # Each measure at its limit reads 0.5: below it the score grades how close a clean text
    # comes; a finding makes it at least 0.5, a stump 1.
    score = min(1.0, max(excess, default=0.0))
    if findings:
        score = max(score, 0.5)
    if truncated:
        score = 1.0
    return Degeneration(
        words=len(tokens),
        repeated_ngram_share=ngram_share,
        top_word=top,
        top_word_share=top_share,
        distinct_ratio=distinct,
        repeated_items=repeats,
        truncated=truncated,
        findings=findings,
        score=score,
    )
