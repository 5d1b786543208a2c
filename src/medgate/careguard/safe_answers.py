"""Answers CareGuard writes itself, safe by construction: no model text is in them.

* :data:`DANGEROUS_PRACTICE_GUIDANCE`: a direct "no" to a plainly dangerous practice, why, and
  where to get help (a poison centre or the emergency number if it has already happened).
* :data:`HELD_FOR_REVIEW`: what the reader sees while a clinician reviews a request the
  request screen was unsure of: no answer yet, and where to get help now.
* :func:`conservative_answer`: what CareGuard shows when no draft could be released for a
  question it may answer: no endorsement and no dose, the general considerations of the
  question's categories, and who to ask. It also opens the screening questions, so that a risky
  question gets a general, safe answer at once rather than only a form. It answers a question
  about someone's health; a request to write something (:func:`asks_for_writing`) it does not
  answer, so such a request is never given it.
"""

from __future__ import annotations

import re

from medgate.careguard.categories import RiskCategory

DANGEROUS_PRACTICE_GUIDANCE = (
    "No. Please don't do this. From what you describe, it is not a safe thing to do at home: it "
    "can cause serious harm, such as poisoning, burns or other injury, an overdose or a "
    "dangerous reaction, and it can delay the care that would really help. A pharmacist, "
    "doctor or nurse can tell you what is safe to do instead, and keep taking any treatment "
    "you were prescribed unless they tell you otherwise. If it has already happened and "
    "someone feels unwell, or a child may have swallowed or touched something harmful, call "
    "your local poison centre or emergency number now (911 in the US, 112 in Europe, 999 in "
    "the UK)."
)

HELD_FOR_REVIEW = (
    "A clinician will read this question before any answer is shown, so there is no answer "
    "here yet. If someone is unwell now or may have taken or been given something harmful, "
    "call your local poison centre or emergency number (911 in the US, 112 in Europe, 999 in "
    "the UK)."
)

#: What is known in general for each category: no medicine is called safe, no amount is given.
CONSIDERATIONS: dict[RiskCategory, str] = {
    RiskCategory.PREGNANCY: (
        "Some medicines, including some sold without a prescription, are not recommended in "
        "pregnancy or while breastfeeding, and what is suitable can depend on the stage of "
        "pregnancy. A midwife, obstetrician or pharmacist can tell you what suits you."
    ),
    RiskCategory.CHILDREN: (
        "Children's medicines and amounts depend on the child's age and weight, and some adult "
        "medicines are not suitable for children at all. Use only products made for children "
        "and ask a pharmacist or the child's doctor first."
    ),
    RiskCategory.OLDER_ADULTS: (
        "Older adults are more sensitive to side effects and to interactions between medicines. "
        "Their doctor or pharmacist should review all their medicines together."
    ),
    RiskCategory.MEDICATION: (
        "Whether a medicine suits someone depends on their age, their other medicines, "
        "allergies and health conditions. A pharmacist can check this, and the label or "
        "prescription says how to take it."
    ),
    RiskCategory.CONTROLLED_SUBSTANCE: (
        "This kind of medicine can cause dependence and overdose, especially with alcohol or "
        "other sedating medicines. Only the prescribing clinician should decide on any change."
    ),
    RiskCategory.DIAGNOSIS: (
        "Symptoms like these can have many causes. A doctor can examine you and find the cause."
    ),
}

_HOLD_OFF = (
    "I can't say whether this is right for you, so please don't go ahead until you have "
    "checked with a pharmacist, doctor or nurse."
)
_GENERAL = "Here is some general guidance; it cannot take your own situation into account."
_ASK = "A pharmacist, doctor or nurse can give advice that fits your situation."
_URGENT = (
    "If symptoms are severe or get worse quickly, get medical help straight away or call your "
    "local emergency number."
)


def conservative_answer(categories: list[RiskCategory], asks_permission: bool) -> str:
    """The conservative answer for a question in ``categories`` (see the module docstring)."""
    lines = [_HOLD_OFF if asks_permission else _GENERAL]
    considered = [CONSIDERATIONS[c] for c in categories if c in CONSIDERATIONS]
    lines.extend(considered or [_ASK])
    lines.append(_URGENT)
    return " ".join(dict.fromkeys(lines))


#: A request to write something: a verb of writing and, within a few words, a piece of writing
#: meant for others (a post, a speech, a letter, a leaflet, a policy ...).
_WRITING = re.compile(
    r"\b(?:write|draft|compose|create|generate|prepare|produce|come up with|put together)\b"
    r"(?: \S+){0,6}? (?:posts?|tweets?|threads?|captions?|speech(?:es)?|op-?eds?|editorials?|"
    r"articles?|essays?|blogs?|memos?|e-?mails?|letters?|leaflets?|flyers?|pamphlets?|posters?|"
    r"handouts?|brochures?|fact ?sheets?|info(?:rmation)? sheets?|"
    r"slogans?|talking points|campaigns?|manifestos?|petitions?|proposals?|scripts?|ads?|"
    r"adverts?|advertisements?|pitch(?: deck)?|newsletters?|announcements?|poems?|songs?|"
    r"stor(?:y|ies)|jokes?|polic(?:y|ies)|briefs?|reviews?|statements?)\b",
    re.IGNORECASE,
)


def asks_for_writing(question: str) -> bool:
    """Whether ``question`` asks for a piece of writing rather than an answer about someone's
    health: the conservative text answers the second, never the first (a request for a social
    media post about insulin, whose drafts the judges failed, was once given the text about
    medicines; careguard_runs_v38/NOTES.md)."""
    return _WRITING.search(question) is not None
