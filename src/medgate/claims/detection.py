"""Which sentences make medical claims, what kind, how dangerous, and whether they cite a source.

Each claim type has its own small set of patterns. A sentence can match several types ("The
recommended dose is 500 mg daily; studies show it halves mortality"); the most dangerous type
wins and the others are kept in ``claim_types``. Severity follows the rule that a wrong dose,
contraindication or approval statement can hurt a patient directly (high), a wrong study finding,
statistic or side-effect list misleads (medium), and a general efficacy statement is the least
specific (low).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from pydantic import Field

from medgate.claims.citations import Citation, find_citations
from medgate.claims.sentences import Sentence, split_sentences
from medgate.records import Record


class ClaimType(StrEnum):
    DOSE = "dose"
    CONTRAINDICATION = "contraindication"
    APPROVAL = "approval"
    SIDE_EFFECTS = "side_effects"
    STATISTIC = "statistic"
    STUDY = "study"
    EFFICACY = "efficacy"
    OTHER = "other"
    """A cited sentence that matches no claim pattern; only its citations are verified."""


class Severity(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        return {"high": 3, "medium": 2, "low": 1}[self.value]


#: Most dangerous first: this order decides which type a multi-type sentence is reported as.
CLAIM_PRIORITY: tuple[ClaimType, ...] = (
    ClaimType.DOSE,
    ClaimType.CONTRAINDICATION,
    ClaimType.APPROVAL,
    ClaimType.SIDE_EFFECTS,
    ClaimType.STATISTIC,
    ClaimType.STUDY,
    ClaimType.EFFICACY,
    ClaimType.OTHER,
)

SEVERITY: dict[ClaimType, Severity] = {
    ClaimType.DOSE: Severity.HIGH,
    ClaimType.CONTRAINDICATION: Severity.HIGH,
    ClaimType.APPROVAL: Severity.HIGH,
    ClaimType.SIDE_EFFECTS: Severity.MEDIUM,
    ClaimType.STATISTIC: Severity.MEDIUM,
    ClaimType.STUDY: Severity.MEDIUM,
    ClaimType.EFFICACY: Severity.LOW,
    ClaimType.OTHER: Severity.LOW,
}

_AMOUNT = (
    r"\d+(?:[.,]\d+)?(?:\s*(?:-|–|to)\s*\d+(?:[.,]\d+)?)?\s*"
    r"(?:mg|mcg|µg|μg|micrograms?|milligrams?|grams?|g|ml|mL|IU|international units|units?"
    r"|mEq|mmol)"
    r"\b(?!\s*/\s*(?:d?l|dL|L|ml|mL)\b)"
)
_FREQUENCY = (
    r"\b(?:once|twice|three times|four times"
    r"|every\s+\d+(?:\s*(?:-|to)\s*\d+)?\s*(?:hours?|h|days?|weeks?)"
    r"|daily|nightly|weekly|monthly|per\s+day|a\s+day|per\s+dose|/\s*day|/\s*d\b|q\d+h|bid|tid|qid|qd"
    r"|b\.i\.d|t\.i\.d|at\s+bedtime|as\s+needed|prn)\b"
)
_ADMINISTER = (
    r"\b(?:take|takes|taking|taken|administer(?:ed)?|give|given|prescribe[sd]?|dosed|titrat\w+"
    r"|inject(?:ed)?|infuse[sd]?|start(?:ed)?\s+(?:at|on|with)|increase[sd]?\s+to|up\s+to)\b"
)
_PATIENTS = (
    r"(?:patients?|subjects?|participants?|people|persons|adults?|children|infants|women|men"
    r"|individuals|cases|users|recipients|smokers|survivors|the\s+population)"
)
_NUMBER_WORD = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|a)"

_CLAIM_PATTERNS: dict[ClaimType, tuple[re.Pattern[str], ...]] = {
    ClaimType.DOSE: tuple(
        re.compile(p, re.IGNORECASE)
        for p in (
            r"\b(?:recommended|usual|typical|standard|maximum|max|starting|initial|maintenance"
            r"|loading|daily|target|therapeutic|effective)\s+(?:adult\s+|pediatric\s+|paediatric\s+"
            r"|oral\s+|daily\s+)?(?:dose|doses|dosage|dosing)\b",
            r"\bdos(?:e|age|ing)\s+(?:is|was|should\s+be|of|ranges?|range)\b[^.;]{0,40}\d",
            r"\d\s*(?:mg|mcg|µg|μg|g|units?|IU|ml|mL)\s*(?:/|per)\s*(?:kg|m2|m²|day|d|dose|hour|h)\b",
            rf"{_AMOUNT}[^.;]{{0,40}}{_FREQUENCY}",
            rf"{_ADMINISTER}[^.;]{{0,40}}{_AMOUNT}",
        )
    ),
    ClaimType.CONTRAINDICATION: tuple(
        re.compile(p, re.IGNORECASE)
        for p in (
            r"\bcontra-?indicat\w*",
            r"\b(?:should|must|can)\s*(?:not|never|n't)\s+be\s+(?:used|taken|given|administered"
            r"|prescribed|combined|co-?administered|started)\b",
            r"\b(?:should|must)\s+be\s+avoided\b",
            r"\b(?:do\s+not|never)\s+(?:use|take|give|combine|prescribe|administer)\b",
            r"\bavoid\s+(?:use\s+)?(?:in|during|with)\s+(?:pregnan\w+|patients?|children|people"
            r"|those|individuals|women|breast-?feeding)",
            r"\bnot\s+(?:be\s+)?(?:recommended|safe)\s+(?:in|for|during)\s+(?:pregnan\w+|patients?"
            r"|children|infants|people|those|individuals|women|breast-?feeding)",
        )
    ),
    ClaimType.APPROVAL: tuple(
        re.compile(p, re.IGNORECASE)
        for p in (
            r"\b(?:FDA|EMA|MHRA)[\s-]+(?:approved|cleared|authori[sz]ed|licensed)\b",
            r"\bapproved\s+by\s+(?:the\s+)?(?:U\.?S\.?\s+)?(?:FDA|EMA|MHRA|Food\s+and\s+Drug"
            r"\s+Administration|European\s+Medicines\s+Agency)",
            r"\b(?:FDA|EMA|MHRA)\s+(?:has\s+|have\s+)?(?:approved|cleared|authori[sz]ed|granted)\b",
            r"\bclinically\s+(?:proven|validated)\b",
            r"\b(?:approved|licensed|indicated)\s+(?:for|as)\s+(?:the\s+)?(?:first-line\s+)?"
            r"(?:treatment|use|management|prevention|therapy)\b",
            r"\bemergency\s+use\s+authori[sz]ation\b",
        )
    ),
    ClaimType.SIDE_EFFECTS: tuple(
        re.compile(p, re.IGNORECASE)
        for p in (
            r"\bside[\s-]+effects?\b",
            r"\badverse\s+(?:drug\s+)?(?:effects?|events?|reactions?)\b",
            r"\b(?:boxed|black[\s-]box)\s+warning\b",
            r"\b(?:hepato|nephro|oto|cardio|neuro)toxic\w*",
            r"\b(?:can|may|might|commonly|frequently|often|rarely)\s+(?:also\s+)?cause\s+\w+",
            r"\b(?:serious|common|rare|frequent|known)\s+(?:complications?|toxicit(?:y|ies))\b",
        )
    ),
    ClaimType.STATISTIC: tuple(
        re.compile(p, re.IGNORECASE)
        for p in (
            rf"\d+(?:\.\d+)?\s*(?:%|percent|per\s*cent)\s+(?:of\s+)?(?:all\s+|the\s+)?(?:\w+\s+){{0,2}}"
            rf"{_PATIENTS}",
            rf"\b{_NUMBER_WORD}\s+(?:in|out\s+of)\s+(?:every\s+)?\d+[\d,]*\s+(?:\w+\s+)?{_PATIENTS}",
            r"\b(?:reduc|increas|lower|rais|improv|decreas|cut|halv|doubl)\w*\s+(?:\w+\s+){0,5}?"
            r"(?:by\s+)?(?:about\s+|approximately\s+|nearly\s+|almost\s+|up\s+to\s+)?\d+(?:\.\d+)?"
            r"\s*(?:%|percent|-?fold)",
            r"\b(?:hazard|odds|risk)\s+ratio\b",
            r"\b(?:HR|OR|RR|aOR|aHR)\s*(?:=|:|of)?\s*\d+\.\d+",
            r"\bp\s*[<=≤]\s*0?\.\d+",
            r"\b9[05]\s*%\s*(?:CI|confidence\s+interval)",
            r"\bnumber\s+needed\s+to\s+(?:treat|harm)\b|(?<![\w-])(?-i:NNT)\b(?!-)",
            r"\b(?:incidence|prevalence|mortality|survival|response|remission|cure)\s+rates?\s+"
            r"(?:of|is|was|were|are|reached|around|about|approximately)\s+(?:\w+\s+){0,2}\d",
        )
    ),
    ClaimType.STUDY: tuple(
        re.compile(p, re.IGNORECASE)
        for p in (
            r"\b(?:studies|study|research|evidence|trials?|data|meta-?analys[ie]s|reviews?"
            r"|investigators|researchers|findings|results)\s+"
            r"(?:(?:have|has|also|consistently|repeatedly|previously|recently|not)\s+){0,3}"
            r"(?:shows?|showed|shown|suggests?|suggested|indicates?|indicated|demonstrates?"
            r"|demonstrated|found|finds|reveal(?:s|ed)?|confirm(?:s|ed)?|supports?|supported"
            r"|reports?|reported|proves?|proved|establish(?:es|ed)?)\b",
            r"\baccording\s+to\s+(?:a|the|one|several|recent|current|many)?\s*(?:\w+\s+){0,2}"
            r"(?:study|studies|research|trial|trials|analysis|meta-?analysis|review|guidelines?|data)\b",
            r"\b(?:has|have|had)\s+been\s+(?:shown|proven|demonstrated|found|reported|established)"
            r"\s+to\b",
            r"\b(?:is|are)\s+(?:proven|known)\s+to\s+(?:reduce|increase|improve|prevent|cure|lower"
            r"|cause|treat)\b",
            r"\b(?:significantly|statistically\s+significantly|substantially|markedly|dramatically)"
            r"\s+(?:reduc|increas|improv|lower|decreas|prolong|shorten|extend)\w*",
            r"\b(?:a|one|several|many|recent|large|landmark|randomi[sz]ed|controlled|prospective"
            r"|retrospective|\d{4})\s+(?:\w+\s+){0,2}(?:study|trial|cohort|meta-?analysis|review)"
            r"\s+(?:\w+\s+){0,3}(?:found|showed|shows|reported|demonstrated|concluded|suggested)\b",
            r"\bin\s+(?:a|one|two|several|multiple|recent|large|clinical)\s+(?:\w+\s+){0,2}"
            r"(?:studies|study|trials?|meta-?analys[ie]s)\b[^.]{0,80}\b(?:reduc|increas|improv|lower"
            r"|decreas|associated|effective|benefit)",
        )
    ),
    ClaimType.EFFICACY: tuple(
        re.compile(p, re.IGNORECASE)
        for p in (
            r"\b(?:is|are|was|were|remains?)\s+(?:highly\s+|very\s+|more\s+|less\s+|equally\s+|as\s+"
            r"|most\s+|the\s+most\s+|also\s+)?(?:effective|efficacious|superior|inferior|curative)"
            r"\s+(?:in|for|than|at|to|against|as)\b",
            r"\b(?:first|second|third)[\s-]+line\s+(?:treatment|therapy|agent|drug|option|choice)\b",
            r"\b(?:treatment|drug|therapy|medication)\s+of\s+choice\b",
            r"\b(?:reduces?|lowers?|decreases?|prevents?)\s+(?:the\s+)?(?:risk|incidence|rate"
            r"|likelihood)\s+of\b",
            r"\b(?:cures?|reverses?|eliminates?)\s+(?:the\s+)?(?:disease|infection|cancer|condition"
            r"|symptoms)\b",
            r"\b(?:reduc|lower|decreas|improv|prevent|slow|delay|prolong)\w*\s+(?:[\w-]+\s+){0,4}?"
            r"(?:mortality|death|deaths|risk|events|survival|symptoms|outcomes|progression"
            r"|incidence|recurrence|relapse|hospitali[sz]ations?|admissions)\b",
        )
    ),
    ClaimType.OTHER: (),
}


class Claim(Record):
    """A sentence that makes a medical claim."""

    sentence: Sentence
    claim_type: ClaimType = Field(description="The most dangerous type the sentence matches.")
    claim_types: list[ClaimType] = Field(description="Every type it matches, most dangerous first.")
    severity: Severity
    citations: list[Citation] = Field(default_factory=list)

    @property
    def cited(self) -> bool:
        return bool(self.citations)


def classify(sentence: str) -> list[ClaimType]:
    """Claim types ``sentence`` matches, most dangerous first; empty when it makes no claim."""
    return [
        kind
        for kind in CLAIM_PRIORITY
        if any(pattern.search(sentence) for pattern in _CLAIM_PATTERNS[kind])
    ]


def cited_statements(text: str | Sequence[Sentence]) -> list[Claim]:
    """Claims plus every other sentence that carries a citation (typed ``other``).

    Citation verification runs on these: whatever a sentence cites must exist and back it,
    whether or not the sentence matched a claim pattern.
    """
    sentences = split_sentences(text) if isinstance(text, str) else list(text)
    out: list[Claim] = []
    for sentence in sentences:
        types = classify(sentence.text)
        citations = find_citations(sentence.text)
        if not types and not citations:
            continue
        kinds = types or [ClaimType.OTHER]
        out.append(
            Claim(
                sentence=sentence,
                claim_type=kinds[0],
                claim_types=kinds,
                severity=SEVERITY[kinds[0]],
                citations=citations,
            )
        )
    return out


def detect_claims(text: str | Sequence[Sentence]) -> list[Claim]:
    """Every claim-making sentence of ``text`` with its type, severity and citations.

    There is no minimum sentence length: "Take 5 mg daily." is short and the most dangerous kind
    of sentence there is.
    """
    sentences = split_sentences(text) if isinstance(text, str) else list(text)
    claims: list[Claim] = []
    for sentence in sentences:
        types = classify(sentence.text)
        if not types:
            continue
        claims.append(
            Claim(
                sentence=sentence,
                claim_type=types[0],
                claim_types=types,
                severity=SEVERITY[types[0]],
                citations=find_citations(sentence.text),
            )
        )
    return claims
