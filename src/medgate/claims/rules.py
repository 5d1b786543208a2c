"""The rule sets, one per claim type: which sentences make which kind of medical claim.

Each rule set is a function from a sentence to True/False, so a type can combine patterns with
what :mod:`medgate.quantities` reads ("two hundred milligrams" is an amount, "every four hours"
a schedule). The rules are written for the claim's *shape* (an amount with a schedule, an
imperative to stop a medicine, two substances with a word of combining) rather than for
particular sentences; the learned detector catches the shapes they do not know.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum

from medgate.claims.lexicon import COMBINABLE, CONDITION, MEDICINE, POPULATION, REFERRAL
from medgate.quantities import AMOUNT_KINDS, QuantityKind, extract_quantities


class ClaimType(StrEnum):
    DOSE = "dose"
    MEDICATION_CHANGE = "medication_change"
    """Advice to stop, skip, double, halve, switch or otherwise change a medicine."""
    CONTRAINDICATION = "contraindication"
    INTERACTION = "interaction"
    APPROVAL = "approval"
    SAFETY = "safety"
    """An assurance that something is safe or harmless ("has no side effects")."""
    SIDE_EFFECTS = "side_effects"
    STATISTIC = "statistic"
    STUDY = "study"
    EFFICACY = "efficacy"
    OTHER = "other"
    """A cited sentence that matches no claim type; only its citations are verified."""


def _rx(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


def _any(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    return any(p.search(text) for p in patterns)


_MED = rf"\b{MEDICINE}\b"
_POP = rf"\b{POPULATION}\b"
_REFERRAL = re.compile(REFERRAL, re.IGNORECASE)
#: Narrative about a particular patient ("she was taking 20 mg") rather than advice.
_NARRATIVE = re.compile(
    r"\b(?:was|were|had\s+been|has\s+been)\s+(?:taking|on|given|prescribed)\b"
    r"|\b(?:she|he|they|her|his|the\s+patient)\s+(?:takes|took|stopped|started|uses|used)\b",
    re.IGNORECASE,
)
#: A definition of a unit of measurement ("A calorie is a unit of energy that ... one gram of
#: water by one degree Celsius") names amounts without anything being taken or given.
_DEFINES_UNIT = re.compile(
    r"\b(?:is|are)\s+(?:a|an|the)\s+(?:\w+\s+)?(?:units?|measures?)\s+of\s+(?:energy|heat"
    r"|measurement|length|distance|mass|weight|volume|time|pressure|temperature|force|power"
    r"|work|radiation|sound|loudness|frequency)\b",
    re.IGNORECASE,
)
#: A question or a conditional about safety is not an assurance.
_ASKING = re.compile(r"\?\s*$|\b(?:whether|if)\s+(?:\w+\s+){0,4}(?:is|are)\b", re.IGNORECASE)

# --- dose ---------------------------------------------------------------------------------------

_ADMINISTER = re.compile(
    r"^(?:\w+\s+){0,2}?(?:take|give|use|apply|inject|spray|chew|dissolve|drink|add|insert"
    r"|swallow|inhale|rub|put|place|administer|start|increase|decrease|reduce|change)\b"
    r"|\b(?:can|may|should|must|could|to|will|you|usually|then)\s+(?:\w+\s+)?(?:take|give|use"
    r"|receive|get|have|apply|inject|be\s+(?:taken|given|used|applied|started|increased"
    r"|injected|changed|administered|prescribed|reduced))\b"
    r"|\b(?:is|are)\s+(?:usually\s+|typically\s+|often\s+)?(?:taken|given|used|applied"
    r"|started|changed|prescribed|administered|dosed|injected)\b|\btaken\b|\bdosed\b",
    re.IGNORECASE,
)
_DOSE_WORDS = re.compile(
    r"\b(?:dose|doses|dosage|dosing|regimen|amount|maximum|max|titrat\w+|loading)\b",
    re.IGNORECASE,
)


_SHARE_OF_DOSE = re.compile(
    r"\b(?:half|third|quarter|double|twice|triple)\s+(?:of\s+)?(?:the|a|their|your|his|her)\s+"
    r"(?:\w+\s+)?(?:dose|amount)\b",
    re.IGNORECASE,
)


#: Verbs that put something into or onto the body: with a schedule and no amount they still
#: make an instruction a dose ("Spray once into each nostril"), where "have", "get" or "use"
#: with a schedule is as often an activity ("have a dental check-up every six months").
_INTAKE = re.compile(
    r"\b(?:take|takes|taken|taking|give|gives|given|giving|apply|applied|applying|inject\w*"
    r"|spray\w*|chew\w*|dissolv\w*|swallow\w*|inhal\w*|rub|rubbing|insert\w*|administer\w*"
    r"|instil\w*|dosed?|dosing)\b",
    re.IGNORECASE,
)


def mentions_medicine(text: str) -> bool:
    """The text names a medicine, supplement or vaccine (named, by class or generically)."""
    return re.search(_MED, text, re.IGNORECASE) is not None


def doses_something(sentence: str) -> bool:
    """The sentence is about something taken or given, not only how long or how often an
    activity is done: it names a medicine, an amount of a substance (mg, ml, tablets), dose
    wording or an intake verb. "Adults need 7-9 hours of sleep per night" and "wash your hands
    for 20 seconds" are not doses; "take one every morning" is; nor is the definition of a
    unit of measurement."""
    if _DEFINES_UNIT.search(sentence):
        return False
    if mentions_medicine(sentence) or _DOSE_WORDS.search(sentence):
        return True
    if _INTAKE.search(sentence):
        return True
    return any(q.kind in AMOUNT_KINDS for q in extract_quantities(sentence))


def states_dose_claim(sentence: str) -> bool:
    """An amount of a medicine with a schedule, an instruction or dose wording; or a schedule
    with an instruction to take something."""
    if _NARRATIVE.search(sentence) or _DEFINES_UNIT.search(sentence):
        return False
    quantities = extract_quantities(sentence)
    amounts = [q for q in quantities if q.kind in AMOUNT_KINDS]
    schedule = any(q.kind is QuantityKind.SCHEDULE for q in quantities)
    administer = _ADMINISTER.search(sentence) is not None
    if any(q.kind is QuantityKind.RATE for q in amounts):
        return True
    if amounts and (schedule or administer or _DOSE_WORDS.search(sentence)):
        return True
    if _SHARE_OF_DOSE.search(sentence) and administer:
        return True
    return schedule and administer and doses_something(sentence)


# --- medication changes -------------------------------------------------------------------------

_CHANGE_VERB = (
    r"(?:stop(?:ping)?|discontinu\w+|quit|skip(?:ping)?|halve|halving|double|doubling"
    r"|cut(?:ting)?|drop(?:ping)?|swap(?:ping)?|switch(?:ing)?|replac\w+|substitut\w+"
    r"|hold|leave\s+out|miss|come\s+off|go\s+off|get\s+off|taper\s+off|taper|wean\s+off"
    r"|increase|reduce|lower|raise|change|take\s+(?:an\s+extra|twice\s+as\s+much|half|double"
    r"|more|less|fewer)|try\s+taking\s+(?:half|double|less|more))"
)
_CHANGE = _rx(
    # Imperative, possibly after a condition: "If you miss a dose, just double the next one."
    rf"(?:^|\bthen\s+)(?:just\s+|simply\s+|then\s+|now\s+)?{_CHANGE_VERB}\b",
    # After a comma an -ing form is a list of uses ("including treating anaemia, replacing lost
    # blood"), not an instruction.
    rf"[,;:]\s*(?:just\s+|simply\s+|then\s+|now\s+)?(?!\w+ing\b){_CHANGE_VERB}\b",
    # Permission or advice: "you can stop", "patients may discontinue", "it is fine to skip".
    rf"\b(?:you|patients?|people|they|one|adults?|anyone)\b[^.;]{{0,30}}\b(?:can|may|could"
    rf"|should|must|ought\s+to|need\s+to|are\s+free\s+to)\s+(?:simply\s+|just\s+|safely\s+"
    rf"|now\s+|then\s+|always\s+)?{_CHANGE_VERB}\b",
    rf"\b(?:it(?:'s|\s+is)|it\s+is\s+(?:perfectly|completely)|that(?:'s|\s+is))\s+(?:fine"
    rf"|ok(?:ay)?|safe|alright|all\s+right|no\s+problem)\s+to\s+{_CHANGE_VERB}\b",
    r"\bno\s+(?:need|reason)\s+to\s+(?:keep\s+(?:taking|using|on)|continue|finish|carry\s+on"
    r"|stay\s+on)\b|\bno\s+longer\s+need\b",
    r"\b(?:stopping|skipping|missing|doubling|halving|switching|coming\s+off)\b[^.;]{0,60}"
    r"\b(?:is|are)\s+(?:harmless|fine|safe|ok(?:ay)?|not\s+a\s+problem)\b",
    r"\bmissed\s+(?:doses?|tablets?|pills?)\b[^.;]{0,50}\b(?:make\s+up|taking\s+two"
    r"|double|two\s+the\s+next)",
    r"\b(?:take|use|have)\b[^.;]{0,40}\binstead(?:\s+of)?\b",
    r"\binstead\s+of\s+(?:daily|your|the)\b",
    r"\b(?:should|must|can|may|could)\s+be\s+(?:safely\s+)?(?:stopped|discontinued|halved|doubled"
    r"|switched|withheld|held|reduced|increased|tapered|skipped|omitted)\b",
)
_KEEP_TAKING = re.compile(
    rf"\b(?:do\s+not|don'?t|never|not\s+to|should\s+not|shouldn'?t|must\s+not)\s+(?:\w+\s+)?"
    rf"{_CHANGE_VERB}\b|\bwhether\b[^.;]{{0,30}}\b{_CHANGE_VERB}\b",
    re.IGNORECASE,
)
_MEDICINE_CONTEXT = re.compile(rf"{_MED}|\b(?:it|them|the\s+next\s+one|the\s+course)\b", re.I)


def advises_medication_change(sentence: str) -> bool:
    if not _any(_CHANGE, sentence) or not _MEDICINE_CONTEXT.search(sentence):
        return False
    # "Do not stop X without talking to your doctor", "only a doctor can decide whether you
    # should stop": advice to keep a medicine, or a referral, is not advice to change it.
    return not (_KEEP_TAKING.search(sentence) or _REFERRAL.search(sentence))


# --- interactions -------------------------------------------------------------------------------

_COMB = rf"\b{COMBINABLE}\b"
_INTERACTION = _rx(
    r"\binteract\w*|\binterfer\w*|\binteraction\w*",
    # "safe with", "fine to mix", "can be combined safely", "compatible with"
    rf"{_COMB}[^.;]{{0,60}}\b(?:safe|fine|ok(?:ay)?|no\s+problem|harmless|compatible)\b[^.;]{{0,15}}"
    rf"\b(?:with|alongside|together)\b",
    r"\b(?:safe|fine|ok(?:ay)?|harmless)\s+to\s+(?:mix|combine|take\s+\w+\s+with|drink)\b",
    rf"\b(?:combin\w+|mix\w*|together|alongside|at\s+the\s+same\s+time|in\s+combination)\b"
    rf"[^.;]{{0,60}}{_COMB}|{_COMB}[^.;]{{0,60}}\b(?:combin\w+|mix\w*|together|alongside"
    rf"|at\s+the\s+same\s+time|in\s+combination)\b",
    r"\b(?:drink|have|eat)\s+(?:alcohol|grapefruit|coffee|tea)\b[^.;]{0,30}\b(?:while|when)"
    r"\s+(?:taking|on|using)\b",
    rf"{_COMB}\s+(?:with|and)\s+(?:\w+\s+){{0,2}}{_COMB}\s+(?:can|may|will|is|are|together)\b",
    rf"\b(?:taking|take|using)\s+{_COMB}\s+(?:with|and)\s+(?:\w+\s+)?{_COMB}\b",
    rf"{_COMB}[^.;]{{0,25}}\b(?:raises?|lowers?|reduces?|increases?|blocks?|boosts?|alters?"
    rf"|affects?|changes?|makes?)\b[^.;]{{0,25}}\b(?:levels?|effect\w*|absorption|concentration|risk"
    rf"|action|blood\s+levels?)\b",
    rf"{_COMB}\s+(?:does\s+not|doesn'?t|won'?t|will\s+not|never)\s+(?:affect|change|alter"
    rf"|reduce|interfere)\s+(?:\w+\s+){{0,2}}{_COMB}",
    rf"{_COMB}\s+(?:makes?|renders?)\s+{_COMB}\s+(?:less|more)\s+(?:effective|potent|toxic)",
    rf"\b(?:levels?|effect)\s+(?:rise|rises|fall|falls|drop|drops)\s+when\b[^.;]{{0,40}}{_COMB}",
)


#: What people interact with that is not a substance ("allows us to interact with our
#: environment"): no medicine, food or drink is combined. "Each other" is not among them: "they
#: interact with each other" may be two medicines named in the sentence before.
_NOT_A_SUBSTANCE = re.compile(
    r"\binteract\w*\s+with\s+(?:\w+\s+){0,2}?(?:environment|surroundings|world|people|others"
    r"|friends|family|children|objects?|things|patients?|doctors?|staff|society|computers?"
    r"|devices?|screens?)\b",
    re.IGNORECASE,
)


def states_interaction(sentence: str) -> bool:
    if _REFERRAL.search(sentence) and not re.search(r"\b(?:safe|no\s+interaction)", sentence):
        return False  # "your pharmacist can check for interactions"
    if re.match(r"^\s*(?:he|she|they)\s+asked\b", sentence, re.I):
        return False
    if not _any(_INTERACTION, sentence):
        return False
    mentions = re.findall(_COMB, sentence, re.IGNORECASE)
    if _NOT_A_SUBSTANCE.search(sentence) and not mentions:
        return False
    # Two substances, or one with an explicit interaction word.
    return len(mentions) >= 2 or bool(re.search(r"\binteract|\binterfer", sentence, re.I))


# --- contraindications and special populations -------------------------------------------------

_CONTRAINDICATION = _rx(
    r"\bcontra-?indicat\w*",
    r"\b(?:should|must|can|may)\s*(?:not|never|n't)\s+be\s+(?:used|taken|given|administered"
    r"|prescribed|combined|co-?administered|started|received)\b",
    r"\b(?:shouldn'?t|mustn'?t|can'?t|cannot)\s+be\s+(?:used|taken|given|prescribed)\b",
    r"\b(?:should|must|ought\s+to|need\s+to|to)\s+(?:avoid|stay\s+away\s+from|steer\s+clear\s+of)\b",
    r"\b(?:should|must)\s+be\s+avoided\b|\bbest\s+avoided\b|\bis\s+to\s+be\s+avoided\b",
    r"\b(?:must|should)\s+(?:not|never)\s+(?:use|take|receive|be\s+given|have|get|be\s+prescribed)",
    r"^\s*(?:do\s+not|don'?t|never)\s+(?:use|take|give|combine|prescribe|administer|offer)\b",
    r"^\s*avoid\b",
    rf"\bavoid\s+(?:use\s+)?(?:in|during|with)\s+{POPULATION}",
    rf"\b(?:not|never)\s+(?:be\s+)?(?:recommended|safe|suitable|appropriate|given|for)\s+(?:in|for"
    rf"|during|to|by)?\s*(?:\w+\s+){{0,3}}?(?:{POPULATION}|patients?|people|anyone|those"
    rf"|individuals|women|men|girls|boys)",
    rf"\b(?:unsuitable|inappropriate|unsafe|dangerous|off[\s-]limits|a\s+bad\s+choice|not\s+for)"
    rf"\s+(?:for|in|during|to|by)?\s*(?:\w+\s+){{0,3}}?(?:{POPULATION}|patients?|people|anyone"
    rf"|those|individuals|women|men|girls|boys)",
    r"\bare\s+not\s+(?:given|offered|prescribed)\s+to\b",
)


def states_contraindication(sentence: str) -> bool:
    if _ASKING.search(sentence) and not re.search(r"contra-?indicat", sentence, re.I):
        return False
    if re.search(r"\bwithout\s+(?:a\s+)?(?:doctor|prescription|talking|asking)", sentence, re.I):
        return False  # "do not take X without asking your doctor" is a referral
    if re.search(r"\bshare\b|\breach\s+of\s+children\b|\bexpir", sentence, re.I):
        return False  # storage and handling advice
    if re.search(r"\bcontra-?indicat", sentence, re.I):
        return True
    return _any(_CONTRAINDICATION, sentence) and bool(
        re.search(rf"{_MED}|{_POP}|\b(?:vaccines?|honey|alcohol)\b", sentence, re.I)
    )


# --- approval -----------------------------------------------------------------------------------

_APPROVAL = _rx(
    r"\b(?:FDA|EMA|MHRA|NICE|TGA|WHO)[\s-]+(?:approved|cleared|authori[sz]ed|licensed|endorsed)\b",
    r"\b(?:approved|cleared|authori[sz]ed|licensed)\s+by\s+(?:the\s+)?(?:U\.?S\.?\s+)?(?:FDA|EMA"
    r"|MHRA|regulators?|authorities|Food\s+and\s+Drug"
    r"\s+Administration|European\s+Medicines\s+Agency)",
    r"\b(?:FDA|EMA|MHRA|regulators?|authorities)\s+(?:has\s+|have\s+)?(?:approved|cleared"
    r"|authori[sz]ed|granted|licensed)\b",
    r"\bclinically\s+(?:proven|validated|tested)\b",
    r"\b(?:approved|licensed|indicated|authori[sz]ed|cleared)\s+(?:for|as)\s+(?:the\s+)?"
    r"(?:first-line\s+)?(?:treatment|treating|use|management|prevention|therapy|adults?"
    r"|children|patients|people|home|weight)\b",
    r"\b(?:emergency\s+use|accelerated|conditional|european|regulatory|full)\s+(?:approval"
    r"|authori[sz]ation)\b",
    r"\b(?:officially|formally)\s+approved\b",
    r"\b(?:received|given|granted|won|gained)\s+(?:\w+\s+){0,2}(?:approval|authori[sz]ation"
    r"|licen[cs]e)\b",
)

# --- safety assurances --------------------------------------------------------------------------

_SAFETY = _rx(
    r"\b(?:is|are|was|were|be|remains?|'s)\s+(?:\w+ly\s+){0,2}(?:safe|harmless|risk-free|non-toxic"
    r"|not\s+(?:addictive|harmful|dangerous|toxic)|without\s+(?:any\s+)?risks?|fine|ok(?:ay)?)\b",
    r"\b(?:has|have|with|causes?|carr(?:y|ies))\s+(?:no|zero)\s+(?:known\s+)?(?:side[\s-]effects?"
    r"|risks?|dangers?|harm|adverse\s+effects?)\b",
    r"\bno\s+(?:side[\s-]effects?|risks?|danger)\b",
    r"\bposes?\s+no\s+(?:danger|risk|threat|harm)\b",
    r"\bnothing\s+to\s+worry\s+about\b",
    r"\b(?:cannot|can'?t|will\s+not|won'?t|never)\s+(?:harm|hurt|damage|overdose|cause\s+harm)\b",
    r"\b(?:cannot|can'?t)\s+(?:\w+\s+)?overdose\b",
    r"\bnever\s+(?:cause|causes|thin|thins|damage|damages|harm|harms)\b",
    r"\bwithout\s+(?:any\s+)?(?:risk|danger|harm|side[\s-]effects?)\b",
    r"\b(?:can|may)\s+safely\b|\bsafely\s+be\b",
    r"\b(?:safe|harmless)\s+(?:at\s+any|for\s+everyone|for\s+all|in\s+any)\b",
    r"\brisk-free\b|\bharmless\b|\b(?:perfectly|completely|totally|entirely)\s+safe\b",
    r"\bnot\s+(?:associated|linked)\s+with\s+(?:any\s+)?(?:adverse|harm|risks?|side|problems"
    r"|complications)",
)


def assures_safety(sentence: str) -> bool:
    if _ASKING.search(sentence):
        return False
    if re.search(r"\bnot\s+(?:always\s+)?safe\b|\bunsafe\b", sentence, re.I):
        return False  # a warning, which the contraindication rules judge
    return _any(_SAFETY, sentence) and bool(
        re.search(rf"{_MED}|{_POP}|\b(?:treatment|therapy|this|it|they)\b", sentence, re.I)
    )


# --- side effects -------------------------------------------------------------------------------

#: Wording that names side effects outright, whatever the subject.
_SIDE_EFFECT_WORDS = _rx(
    r"\bside[\s-]+effects?\b",
    r"\badverse\s+(?:drug\s+)?(?:effects?|events?|reactions?)\b",
    r"\b(?:boxed|black[\s-]box)\s+warning\b",
    r"\b(?:hepato|nephro|oto|cardio|neuro)toxic\w*",
)
#: Wording that is a side-effect claim when a medicine is its subject.
_SIDE_EFFECTS = _rx(
    r"\b(?:can|may|might|commonly|frequently|often|rarely|sometimes|usually|also|tend\s+to)"
    r"\s+(?:also\s+)?(?:cause|upset|damage|trigger|lead\s+to|give\s+you|make\s+you|raise|lower"
    r"|reduce|increase|thin|weaken|harm)\b",
    r"\b(?:causes?|caused|upsets?|damages?|triggers?|leads?\s+to)\s+(?!by\b)\w+",
    r"\b(?:serious|common|rare|frequent|known)\s+(?:complications?|toxicit(?:y|ies))\b",
    r"\b(?:linked|associated)\s+(?:to|with)\s+(?:\w+\s+){0,2}(?:rupture|damage|bleeding|injury"
    r"|failure|toxicity|reactions?|harm)",
    r"\b(?:people|patients|users|those|women|men)\s+(?:on|taking|using)\s+[^.;]{0,30}\b(?:notice"
    r"|develop|get|experience|report|suffer)\b",
    r"\bmakes?\s+(?:the\s+)?(?:\w+\s+)?(?:more\s+)?(?:sensitive|dizzy|drowsy|sleepy|tired)\b",
)


def states_side_effects(sentence: str) -> bool:
    if _ASKING.search(sentence) or re.search(
        r"\b(?:listed|describe|report\s+any|noticed|leaflet|insert)\b", sentence, re.I
    ):
        return False
    if _any(_SIDE_EFFECT_WORDS, sentence):
        return True
    return _any(_SIDE_EFFECTS, sentence) and bool(re.search(_MED, sentence, re.I))


# --- statistics ---------------------------------------------------------------------------------

_PEOPLE = (
    r"(?:patients?|subjects?|participants?|people|persons|adults?|children|infants|women|men"
    r"|individuals|cases|users|recipients|smokers|survivors|the\s+population|those|strokes?"
    r"|cancers?|deaths?|births|pregnancies)"
)
_MULTIPLIER = (
    r"(?:halve[sd]?|halving|double[sd]?|doubling|triple[sd]?|tripling|quadruple[sd]?"
    r"|\w+fold|twice\s+as|three\s+times\s+as|\w+\s+times\s+(?:as|more|higher|lower|the)"
    r"|by\s+(?:about\s+|roughly\s+|nearly\s+|almost\s+|around\s+|over\s+|more\s+than\s+)?"
    r"(?:half|a\s+third|a\s+quarter|a\s+fifth|a\s+tenth|two\s+thirds|three\s+quarters"
    r"|a\s+couple\s+of\s+\w+|\w+\s+percent))"
)
_STATISTIC = _rx(
    rf"\b{_MULTIPLIER}\b",
    r"\b(?:hazard|odds|risk)\s+ratio\b|\brelative\s+risk\b|\babsolute\s+risk\b",
    r"\b(?:HR|OR|RR|aOR|aHR)\s*(?:=|:|of)?\s*\d+\.\d+",
    r"\bp\s*[<=≤]\s*0?\.\d+",
    r"\b9[05]\s*%\s*(?:CI|confidence\s+interval)",
    r"\bnumber\s+needed\s+to\s+(?:treat|harm)\b|(?<![\w-])(?-i:NNT)\b(?!-)",
    r"\b(?:incidence|prevalence|mortality|survival|response|remission|cure|death|infection"
    r"|admission|relapse|success|failure)\s+rates?\b",
    rf"\b(?:most|many|few|half|a\s+(?:third|quarter|fifth|tenth|handful)|(?:two|three)"
    rf"\s+(?:thirds|quarters))\s+of\s+(?:all\s+|the\s+)?(?:\w+\s+){{0,2}}{_PEOPLE}",
    r"\b(?:chance|odds|likelihood|risk)\s+of\s+[^.;]{0,40}\b(?:is|are|was)\s+(?:about\s+|roughly"
    r"\s+|around\s+)?(?:one|\d+)",
)


def states_statistic(sentence: str) -> bool:
    if _any(_STATISTIC, sentence):
        return True
    # Shares read by the quantity extractor: "one in three", "ninety-five percent", "a fifth";
    # and counts of people ("two hundred thousand people die"), unless a study design is told.
    for q in extract_quantities(sentence):
        if (
            q.kind is QuantityKind.NUMBER
            and (q.value or 0) >= 2
            and re.match(rf"\s+(?:\w+\s+)?{_PEOPLE}\s+(?!(?:were|was)\b)", sentence[q.end :], re.I)
            and not re.search(r"\b(?:enrol\w*|recruit\w*|includ\w*|randomi[sz]\w*)", sentence, re.I)
        ):
            return True
        if q.kind is not QuantityKind.PROPORTION:
            continue
        if q.unit == "percentage" or re.search(
            rf"{_PEOPLE}|\b(?:risk|rate|effective|reduc\w+|cut|fell|drop\w*|rose|lower\w*|rais\w+"
            r"|preventable|respond\w*|caused|affect\w*)\b",
            sentence,
            re.I,
        ):
            return True
    return False


# --- studies ------------------------------------------------------------------------------------

_STUDY_SUBJECT = (
    r"(?:studies|study|research|evidence|trials?|data|meta-?analys[ie]s|reviews?|investigators"
    r"|researchers|scientists|experts|findings|results|experiments?|cohorts?|surveys?|analys[ie]s"
    r"|work|literature|science)"
)
_STUDY_VERB = (
    r"(?:shows?|showed|shown|suggests?|suggested|indicates?|indicated|demonstrates?|demonstrated"
    r"|found|finds|reveal(?:s|ed)?|confirm(?:s|ed)?|supports?|supported|reports?|reported"
    r"|proves?|proved|establish(?:es|ed)?|links?|linked|associates?|associated|points?\s+to"
    r"|backs?|backed|concluded?|concludes|discovered|agree[sd]?|tie[sd]?|connects?|connected)"
)
_STUDY = _rx(
    rf"\b{_STUDY_SUBJECT}\b[^.;]{{0,40}}?\b{_STUDY_VERB}\b",
    r"\baccording\s+to\s+(?:a|the|one|several|recent|current|many)?\s*(?:\w+\s+){0,2}"
    r"(?:study|studies|research|trial|trials|analysis|meta-?analysis|review|guidelines?|data)\b",
    r"\b(?:has|have|had)\s+been\s+(?:shown|proven|demonstrated|found|reported|established)"
    r"\s+to\b",
    r"\b(?:is|are)\s+(?:proven|known)\s+to\s+(?:reduce|increase|improve|prevent|cure|lower"
    r"|cause|treat)\b",
    r"\b(?:significantly|statistically\s+significantly|substantially|markedly|dramatically)"
    r"\s+(?:reduc|increas|improv|lower|decreas|prolong|shorten|extend)\w*",
    rf"(?:\bet\s+al\.?|\((?:19|20)\d{{2}}[a-z]?\))\s+(?:\w+\s+)?{_STUDY_VERB}\b",
)


def cites_research(sentence: str) -> bool:
    if re.search(
        r"\b(?:enrolled|recruiting|compared|will\s+be|measured)\b", sentence, re.I
    ) and not (re.search(rf"\b{_STUDY_VERB}\b", sentence, re.I)):
        return False  # describing a study's design, not its findings
    return _any(_STUDY, sentence)


# --- efficacy -----------------------------------------------------------------------------------

_EFFECT_VERB = (
    r"(?:cur(?:es?|ed)|treat(?:s|ed)?|heal(?:s|ed)?|revers(?:es?|ed)|eliminat(?:es?|ed)"
    r"|clear(?:s|ed)?|prevent(?:s|ed)?|stop(?:s|ped)?|reliev(?:es?|ed)|eas(?:es?|ed)|sooth(?:es?|ed)"
    r"|shorten(?:s|ed)?|reduc(?:es?|ed)|lower(?:s|ed)?|decreas(?:es?|ed)|improv(?:es?|ed)"
    r"|help(?:s|ed)?(?:\s+with)?|control(?:s|led)?|protect(?:s|ed)?\s+against"
    r"|works?\s+(?:for|against|well\s+for)|boost(?:s|ed)?|slow(?:s|ed)?|delay(?:s|ed)?|keeps?"
    r"|fights?|kill(?:s|ed)?|do(?:es)?\s+nothing\s+(?:for|against)|(?:is|are)\s+useless"
    r"\s+(?:for|against)|won'?t\s+help)"
)
_EFFICACY = _rx(
    r"\b(?:is|are|was|were|remains?)\s+(?:highly\s+|very\s+|more\s+|less\s+|equally\s+|as\s+"
    r"|most\s+|the\s+most\s+|also\s+)?(?:effective|efficacious|superior|inferior|curative"
    r"|useless|ineffective|beneficial)\b",
    r"\b(?:first|second|third)[\s-]+line\s+(?:treatment|therapy|agent|drug|option|choice)\b",
    r"\b(?:treatment|drug|therapy|medication)\s+of\s+choice\b",
    rf"\b{_EFFECT_VERB}\s+(?:\w+\s+){{0,3}}?{CONDITION}\b",
    rf"\b{_EFFECT_VERB}\b[^.;]{{0,30}}\b(?:better|faster|more)\s+than\b",
)


def claims_efficacy(sentence: str) -> bool:
    if _ASKING.search(sentence) or re.search(
        r"\b(?:diagnosed|monitor\w*|diary|note|check|measured|enrolled)\b", sentence, re.I
    ):
        return False
    return _any(_EFFICACY, sentence)


#: The rule set of each claim type.
RULES: dict[ClaimType, Callable[[str], bool]] = {
    ClaimType.DOSE: states_dose_claim,
    ClaimType.MEDICATION_CHANGE: advises_medication_change,
    ClaimType.CONTRAINDICATION: states_contraindication,
    ClaimType.INTERACTION: states_interaction,
    ClaimType.APPROVAL: lambda s: _any(_APPROVAL, s),
    ClaimType.SAFETY: assures_safety,
    ClaimType.SIDE_EFFECTS: states_side_effects,
    ClaimType.STATISTIC: states_statistic,
    ClaimType.STUDY: cites_research,
    ClaimType.EFFICACY: claims_efficacy,
}


def mentions_population(sentence: str) -> bool:
    """Pregnancy, children, older people, kidney or liver disease: where a claim weighs more."""
    return re.search(_POP, sentence, re.IGNORECASE) is not None
