"""Misconduct towards people in care: a request for help to set aside a safety measure or
consent, to coerce someone in care, or to demean a patient.

The request screens read the topic of a request, and a request to demean a patient has few of
the words of the harmful requests they were fitted on ("roast the obese patient in bed 4",
"jokes about the dementia residents"): on fresh sets written for it they let most such requests
through, and the generator then wrote them (a mocking poem about a patient was released). This
keyword rule, a harmful-request rule in :mod:`medgate.careguard.categories`, refuses them before
any draft. It needs the wording of a request to act or to produce something, with no word of
resisting, reporting or policy in between, so that the person on the receiving end ("how do I
stop my manager bullying me?") and kind content about patients ("jokes to cheer up the
residents") are not refused. Written and read in docs/results/careguard_runs_v35/NOTES.md
(scripts/misconduct_rule.py): over three fresh reads it matched none of 120 benign messages on
these topics; on the second candidate's two reads, 14 and 15 of 40 harmful requests, 9 and 6
of them requests the screens let through.
"""

from __future__ import annotations

#: Words before the act that make the text a request to do it: a "how" question (with up to
#: four words between, none of them a word of someone resisting or reporting the act), a
#: request for ways or tips, a wish, a plea for help, or an opening instruction.
_RESISTS = (
    r"stop|stops|stopping|prevent|protect|avoid|deal|cope|respond|react|report|handle|escape|"
    r"tell|know|recogni[sz]e|spot|if|when|whether|someone|somebody|anyone|complain|challenge|"
    r"raise|make|get|keep|from|being|been|be|am|is|are|was|were"
)


def _words(resists: str, most: int) -> str:
    """Up to ``most`` words, none of them one of ``resists``."""
    return rf"(?: (?!(?:{resists})\b)[\w'-]+){{0,{most}}}?"


_WORDS = _words(_RESISTS, 4)


def _asks_to_do(words: str, opening_words: str) -> str:
    """The request wording with ``words`` allowed after a "how" or a "ways to" and
    ``opening_words`` after an opening instruction."""
    return (
        rf"(?:\bhow (?:do|does|can|could|should|would|might|to|best to)\b{words} |"
        rf"\b(?:ways?|tips?|steps?|strategies|ideas|methods?|techniques?|advice) (?:to|for|on|of)\b"
        rf"{words} |"
        rf"\b(?:i|we) (?:want|need|would like|'d like|plan|intend) to{words} |"
        rf"\bhelp (?:me|us) (?:to )?|"
        r"^\W*(?:please )?(?:write|draft|create|compose|generate|suggest|give|list|explain|"
        r"describe|outline|develop|devise|design|plan|teach me(?: how)?(?: to)?|"
        rf"show me(?: how)?(?: to)?|tell me how to)\b{opening_words} )"
    )


#: The first candidate's request wording (read once, not shipped: scripts/misconduct_rule.py).
ASKS_TO_DO = _asks_to_do(_WORDS, r"(?: [\w'-]+){0,6}?")
#: The three acts, each as a verb of doing it and, for the first, what is set aside.
SETS_ASIDE = (
    r"(?:dismiss|ignor|disregard|bypass|circumvent|skip|sidestep|overrid|neglect|forgo|"
    r"abandon|flout|evad|violat)\w*\b[^.?!]{0,40}?\b(?:infection (?:control|prevention)|"
    r"hand ?(?:hygiene|washing)|hygiene|steril\w*|aseptic|isolation|PPE|protective "
    r"(?:equipment|gear)|(?:safety|clinical|hospital|ward|infection|medication|surgical|hygiene|"
    r"sanitary|standard) (?:measures?|protocols?|checks?|rules|standards|guidelines|"
    r"procedures?|precautions|regulations|policies|policy)|(?:standard|universal) precautions|"
    r"checklists?|(?:informed |patients?'? |parental )?consent)\b"
)
COERCES = (
    r"(?:threaten|intimidat|blackmail|coerc|bully|bullies|bullied|terrori[sz]|scare|frighten|"
    r"pressur)\w*\b[^.?!]{0,40}?\b(?:nurses?|doctors?|patients?|staff|colleagues?|"
    r"carers?|residents?|witness\w*|whistle-?blowers?|famil(?:y|ies)|relatives?|parents?|"
    r"employees?|workers?|someone|him|her|them)\b"
)
DEMEANS = (
    r"(?:mock|insult|belittl|demean|shame|taunt|humiliat|ridicul|make fun of|"
    r"(?:make|tell|crack)\w* (?:\w+ )?(?:offensive|derogatory|demeaning|cruel|racist|sexist|"
    r"crude|hurtful) (?:jokes|comments|remarks))\w*\b[^.?!]{0,40}?\b(?:patients?|residents?|"
    r"clients?|(?:his|her|their) (?:weight|body|appearance|disabilit\w+|illness))\b"
)
#: The wider request wording (the rule as shipped) and the words of resisting it adds.
_RESISTS_2 = (
    rf"{_RESISTS}|against|anti|about|policy|policies|training|complaint|complaints|tackle|"
    r"tackling|address|addressing|dealing|handling|reporting|stopping|preventing|not|never|"
    r"don't|dont|without"
)
_WORDS_2 = _words(_RESISTS_2, 4)
#: Words after an opening instruction: up to six, none of resisting or policy, so that "Draft
#: a policy against mocking patients" is not read as a request to mock them (narrowed after
#: the three reads; the same matches on their sets).
_OPENING_2 = _words(_RESISTS_2, 6)
_ASKS_TO_DO_2 = (
    rf"(?:{_asks_to_do(_WORDS_2, _OPENING_2)}|"
    rf"\bwhat (?:can|could|should|do|would) (?:i|we) (?:say|write|text|post|put|do)\b{_WORDS_2} |"
    rf"\b(?:any|some) (?:tips|ideas|suggestions)\b{_WORDS_2} |"
    rf"\b(?:come|coming) up with\b{_WORDS_2} |\b(?:lean|leaning) on |"
    rf"\bhelp (?:me|us) (?:to )?(?:write|draft|word|phrase|come up with|think of|find)\b"
    rf"{_WORDS_2} )"
)
#: Asked-for content whose only use is to demean: an insult, a mocking act, a cruel or
#: sarcastic remark, a joke or nickname about patients.
_DEMEANING = (
    r"(?:insults?|put-?downs?|roasts?|pranks?|mocking|mak(?:e|ing) fun of|laughing at|"
    r"ridiculing|belittling|humiliating|shaming|embarrassing|taunting|teasing|"
    r"(?:sarcastic|mean|cruel|cutting|nasty|rude|snide|savage|spiteful|hurtful|insulting|"
    r"offensive|demeaning|humiliating|derogatory) (?:\w+ )?(?:notes?|comments?|remarks?|"
    r"messages?|texts?|lines?|things?|words?|captions?|nick-?names?|names?|jokes?|posts?|"
    r"poems?|songs?)|something (?:mean|cruel|cutting|nasty|rude|snide|savage|hurtful|"
    r"insulting)|(?:jokes?|one-?liners?|memes?|nick-?names?|captions?) (?:about|for|on|of)\b"
    r"(?: [\w'-]+){0,3}? (?=patients?|residents?|the (?:old|elderly)))"
)
#: Who is demeaned: a patient or resident, named by a condition, an age, a bed or a room.
_IN_CARE = (
    r"(?:patients?|residents?|service users?|(?:old|elderly|older) (?:man|woman|lady|gentleman|"
    r"guy|people|folks?|ladies|men|women)|(?:bed|room|bay) \d+|obese|overweight|fat|bariatric|"
    r"dementia|demented|amputees?|stroke|disabled|disabilit\w+|deaf|blind|autis\w+|"
    r"down'?s? syndrome|schizophreni\w*|psychiatric|incontinen\w*|wheelchair|mentally ill|"
    r"learning disabilit\w*)\b"
)
#: A word asking for content, then up to four words, then the content; or an opening order to
#: demean ("Roast the ...").
_ASKS_FOR = (
    r"(?:\b(?:write|compose|draft|create|generate|come up with|think of|make up|make|give|"
    r"suggest|list|need|want|share|post|find|send|any|ideas?|whats|what(?:'s| is| are))\b"
    rf"{_WORDS_2} {_DEMEANING}|^\W*(?:please )?(?:roast|mock|insult|ridicule|make fun of|"
    r"humiliate|shame|embarrass|taunt|tease|prank|belittle)\b)"
)
#: The rule: one of the three acts after a request to act, or demeaning content asked for
#: about someone in care. Matched case-insensitively, as every rule in ``categories.RULES``.
MISCONDUCT_PATTERN = (
    rf"{_ASKS_TO_DO_2}(?:{SETS_ASIDE}|{COERCES}|{DEMEANS})|"
    rf"{_ASKS_FOR}[^.?!]{{0,60}}?\b{_IN_CARE}"
)
