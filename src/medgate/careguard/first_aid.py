"""First-aid questions get fixed, checked steps, never a model's draft.

A wrong answer to "what is the recovery position?" can hurt someone within minutes: the embedded
1.5B described it as lying on the back on pillows after surgery, and both judges passed it
(docs/results/careguard_crisis/careguard.md). First aid is also where a small, fixed set of
procedures covers most questions, and where the right steps are settled (resuscitation and
first-aid guidance of the UK Resuscitation Council, the NHS, the Red Cross). So a question that
names one of these procedures and asks what to do, how to do it or how to recognise the
emergency gets that procedure's card (:data:`TOPICS`), written for medgate, and no model text.

A question is routed when it names a topic (:class:`FirstAidTopic` ``names``) and asks for
action: what to do, how to help, treat, stop, cool or use, whether to do something, or, for
the emergencies one must recognise (stroke, heart attack, anaphylaxis), their signs. Questions
about causes, history or statistics ("what causes a seizure?", "who invented CPR?") go on to
the model as before. A procedure whose name has no other meaning (the recovery position, CPR,
abdominal thrusts) is routed on any question about it.

The emergency guidance (``categories.EMERGENCY_GUIDANCE``) gets the card of a topic its
question names, after it, as steps to take while help comes (:func:`while_help_comes`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CLOSING = (
    "These are general first-aid steps, not a substitute for the emergency call handler's "
    "instructions or a first-aid course. Emergency numbers: 911 in the US, 112 in Europe, 999 in "
    "the UK."
)


@dataclass(frozen=True)
class FirstAidTopic:
    """One procedure: the words that name it, whether any question about it asks for it, the
    words that keep a look-alike out, and the card."""

    name: str
    names: re.Pattern[str]
    card: str
    #: Any question naming it asks for the procedure (it has no other meaning).
    procedure: bool = False
    #: An emergency one must recognise: "signs of ..." and "how can I tell ..." ask for the card.
    recognised: bool = False
    excluded: re.Pattern[str] | None = None


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _within(span: int) -> str:
    """Up to ``span`` characters of one sentence."""
    return rf"[^.?!]{{0,{span}}}"


def _across(span: int) -> str:
    """Up to ``span`` characters, over a sentence's end (a setting told in the sentence before)."""
    return rf"[^?!]{{0,{span}}}"


def _either(a: str, b: str, gap: str, back: str | None = None) -> str:
    """``a`` then ``b`` with ``gap`` between them, or ``b`` then ``a`` with ``back`` (default:
    the same gap). Each pattern brings its own word boundaries."""
    return f"{a}{gap}{b}|{b}{gap if back is None else back}{a}"


#: Opioids as people name them, and the trouble that makes them a first-aid question.
_OPIOIDS = (
    r"opioids?|opiates?|heroin|smack|fentanyl|oxy(?:codone|contin|s)?|morphine|methadone|"
    r"codeine|tramadol|percocets?|vicodin|hydrocodone|dilaudid|buprenorphine|pain ?(?:pills|"
    r"killers)|painkillers"
)
#: An overdose's gravest signs. A needle found beside someone names an overdose only with
#: these (a faint at a blood test or a jab is not one), and so does an opioid named in the
#: sentence before ("takes oxycodone for his back. ... I can barely wake him").
_NEEDLE = r"needles?|syringes?"
_GRAVE_SIGNS = (
    r"overdos\w*|won'?t wake|can'?t wake|(?:barely|hardly) wake|not waking|unresponsive|"
    r"(?:barely|hardly|not|isn'?t|stopped) breathing|breathing (?:is )?(?:\w+ )?(?:slow|"
    r"shallow)|blue lips|lips (?:are |went |turning )?blue"
)
_OPIOID_TROUBLE = (
    r"overdos\w*|o\.?d\.?'?(?:d|ed|ing|s)?\b|too (?:much|many)|won'?t wake|can'?t wake|"
    r"not waking|hard to wake|unresponsive|(?:barely|hardly|not|isn'?t|stopped) breathing|"
    r"breathing (?:is )?(?:slow|shallow|weird)|blue lips|lips (?:are |went |turning )?blue|"
    r"nodding off|passed out|gurgling|snoring|slumped|collapsed|barely (?:conscious|awake)"
)
#: Someone with diabetes, as people say it.
_DIABETES = (
    r"diabet\w*|type ?(?:1|one|i)\b|t1d?\b|insulin|glucose monitor|cgm\b|libre\b|dexcom\b|"
    r"(?:blood )?sugar (?:levels?|reading)"
)
#: Signs of a hypo, said of someone with diabetes.
_HYPO_SIGNS = (
    r"shak\w*|trembl\w*|sweat\w*|clammy|confus\w*|drunk|pale|dizzy|woozy|not making sense|"
    r"talking (?:nonsense|gibberish|rubbish)|out of it|drowsy|disorient\w*|acting (?:weird|"
    r"strange|odd|funny)|irritable|aggressive|glazed|wobbly|weak|cranky|stumbl\w*|barely awake|"
    r"won'?t answer|(?:feels?|feeling|going|gone|running) ['\"\u2018]?low\b|alarm\w*"
)
#: Signs of heat illness.
_HEAT_SIGNS = (
    r"confus\w*|dizzy|faint\w*|collaps\w*|vomit\w*|throwing up|sick|headache|cramps?|"
    r"not sweating|stopped sweating|red (?:face|skin)|hot skin|exhausted|out of it|woozy|"
    r"disorient\w*|not making (?:any )?sense|talking (?:weird|nonsense|funny|strange)|"
    r"stumbl\w*|muddled|floppy|weak|red and"
)
#: Signs of hypothermia.
_COLD_SIGNS = (
    r"shiver\w*|drowsy|sleepy|confus\w*|slurr\w*|blue|pale|clumsy|stumbl\w*|won'?t warm|"
    r"can'?t (?:get )?warm|out of it|stiff|mumbl\w*|slow|barely respond\w*|not responding|"
    r"unresponsive|can'?t stop shaking|shaking violently|lips (?:are |went |turning )?(?:purple|"
    r"blue)|passed out|"
    r"collapsed|unconscious"
)

#: In order: the first topic a question names is its topic. An opioid overdose comes first: its
#: card has the step no other card has (naloxone) and sends on to CPR or the side. CPR comes
#: before the recovery position, because someone unconscious and not breathing normally needs
#: CPR, not the side. Anaphylaxis comes before choking and fainting (a swelling face with
#: "is she choking?", a faint after a sting needs adrenaline). A heart attack comes before the
#: rest. Heat, cold and low blood sugar, whose names need their setting (heat, cold, diabetes)
#: and signs, come before a stroke, which they can look like ("is it a stroke?" of a confused
#: neighbour in a heatwave; the low-blood-sugar card says when slurring may be a stroke), and
#: all before fainting: someone who faints in the heat, passes out in the snow or is about to
#: pass out with diabetes needs cooling, warming or sugar as well as lying down.
TOPICS: tuple[FirstAidTopic, ...] = (
    FirstAidTopic(
        "opioid_overdose",
        _words(
            r"\bnaloxone\b|\bnarcan\b|\bnyxoid\b|\bprenoxad\b|"
            r"\b(?:tiny|pinpoint|pin-point|pinned) pupils?\b|\bpupils (?:are |were )?(?:tiny|"
            r"pinpoint|pinned)\b|"
            + _either(rf"\b(?:{_OPIOIDS})\b", rf"\b(?:{_OPIOID_TROUBLE})", _within(80))
            + rf"|\b(?:{_OPIOIDS})\b{_across(120)}\b(?:{_GRAVE_SIGNS})|"
            + _either(rf"\b(?:{_NEEDLE})\b", rf"\b(?:{_GRAVE_SIGNS})", _within(80))
        ),
        "An opioid overdose (heroin, fentanyl, morphine, oxycodone, methadone, codeine or other "
        "strong painkillers) can stop someone breathing. Signs are being very sleepy or "
        "impossible to wake, slow, shallow or stopped breathing, snoring or gurgling sounds, "
        "tiny pupils, and blue or grey lips or fingertips. Call your emergency number at once "
        "and say you think it is an overdose. If you have naloxone (such as a Narcan or Nyxoid "
        "nasal spray, or an injection kit), give it straight away as its pack says; it does no "
        "harm if opioids were not the cause. If they are not breathing normally, start CPR. If "
        "they are breathing, put them on their side in the recovery position. Stay with them: "
        "naloxone can wear off before the opioid does, so breathing can slow again, and a "
        "second dose can be given after 2 to 3 minutes if there is no response and you have "
        "one. Do not let them sleep it off, put them in a cold bath, or give them other drugs "
        "or drink. If they are awake and breathing normally but may have taken too much, call "
        "your emergency number or poison centre for advice and do not leave them alone.",
        recognised=True,
        excluded=_words(r"\bcaus\w*|\bwhy\b|\bcrisis\b|\bepidemic\b|\bhow (?:does|do) \w+ work"),
    ),
    FirstAidTopic(
        "cpr",
        _words(
            r"\bcpr\b|\bchest compressions?\b|\bresuscitat\w*|\brescue breaths?\b|"
            r"\bcardiac arrest\b|\b(?:not|isn'?t|is not|stopped|stops) breathing\b|"
            r"\bmouth[- ]to[- ]mouth\b|\bhands[- ]only\b|"
            # Gasping in someone who does not respond is not breathing normally.
            + _either(
                r"\b(?:not respond\w*|not answering|unresponsive|won'?t respond|collapsed)\b",
                r"\bgasp\w*",
                _across(100),
            )
        ),
        "If an adult is unresponsive and not breathing normally, call your emergency number at "
        "once, on speaker so your hands are free, and send someone for a defibrillator (AED). "
        "Kneel beside them, put the heel of one hand in the centre of the chest and the other "
        "hand on top, and with straight arms press down hard and fast, about 5 to 6 cm deep, "
        "100 to 120 times a minute, letting the chest come back up fully after each push. If "
        "you are trained and willing, give 2 rescue breaths after every 30 compressions; if "
        "not, keep doing compressions without stopping. Switch the defibrillator on as soon as "
        "it arrives and do what it says. Keep going until help takes over, the person starts "
        "breathing normally, or you cannot carry on. For a baby or a child, tell the call "
        "handler: the method is different, and they will talk you through it.",
        procedure=True,
        # Someone said to breathe normally needs the side, not compressions ("breathing normal,
        # can't wake him, do I start CPR?").
        excluded=_words(
            r"\binvent|\bhistory\b|\bdiscover|"
            r"(?<!not )(?<!n't )\bbreathing (?:normal(?:ly)?|fine|ok(?:ay)?)\b"
        ),
    ),
    FirstAidTopic(
        "recovery_position",
        _words(
            r"\brecov\w* position\b|\b(?:uncon\w*ious|unresponsive|passed out|knocked out|out cold|"
            r"not respond\w*|won'?t respond|isn'?t respond\w*)"
            r"\b[^.?!]{0,60}\bbreathing\b|\bbreathing\b[^.?!]{0,40}\b(?:uncon\w*ious|"
            r"unresponsive|passed out|out cold|not respond\w*|can'?t wake)\b"
        ),
        "The recovery position is for someone who is unresponsive but breathing normally: "
        "lying on their side keeps the airway open and lets vomit drain from the mouth. Call "
        "your emergency number first. Kneel beside them. Put the arm nearest you at a right "
        "angle to their body, elbow bent and palm up. Bring their other arm across their chest "
        "and hold the back of that hand against the cheek nearest you. With your other hand, "
        "lift their far knee so the foot is flat on the floor. Keeping their hand against their "
        "cheek, pull on the bent knee to roll them towards you onto their side. Bend the upper "
        "leg so the hip and knee are at right angles, and tilt the head back gently with the "
        "chin lifted to keep the airway open. Stay with them and keep checking that they breathe "
        "normally; if they stop, start CPR. Do not move someone who may have hurt their neck or "
        "back unless their airway is at risk.",
        procedure=True,
    ),
    FirstAidTopic(
        "anaphylaxis",
        _words(
            r"\banaphyla\w*|\badrenaline (?:auto-?)?(?:injector|pen)s?\b|\bepi[- ]?pens?\b|"
            r"\bsevere allergic reactions?\b|\b(?:lips?|tongue|throat|face)\b[^.?!]{0,20}"
            r"\b(?:swelling|swollen|swell(?:s|ed)?(?: up)?)\b|\ballergy pen\b|\bpen for (?:his |"
            r"her |"
            r"the |their )?allerg\w*|\bthroat (?:feels |is |getting |going )?"
            r"(?:tight|closing)\b|\bhives\b[^.?!]{0,60}\b(?:breath\w*|wheez\w*|swell\w*)"
        ),
        "Anaphylaxis is a severe allergic reaction that can come on within minutes: swelling "
        "of the throat or tongue, trouble breathing or swallowing, wheezing, a hoarse voice, "
        "feeling faint or collapsing, often with a rash. Call your emergency number at once and "
        "say it is anaphylaxis. If the person has an adrenaline auto-injector, use it straight "
        "away, as the instructions printed on it say: for most devices, take off the safety "
        "cap and press the tip firmly against the outer thigh, through clothing if need be, "
        "until it clicks, and hold it there for as long as the label says. Have them lie down "
        "with their legs raised, or sit up if they are struggling to breathe; do not let them "
        "stand or walk. If they are no better after 5 minutes and there is a second "
        "auto-injector, use it. If they become unresponsive and are not breathing normally, start "
        "CPR. Stay with them until help comes, even if they feel better.",
        recognised=True,
        excluded=_words(r"\bcaus\w*|\bwhy\b|\bcommon\b|\bexpir\w*|\bstor(?:e|ed|ing|age)\b"),
    ),
    FirstAidTopic(
        "choking",
        _words(
            r"\bchok(?:e|es|ed|ing)\b|\babdominal thrusts?\b|\bheimlich\b|\bback blows?\b|"
            r"\bchest thrusts?\b|\bgagging on\b|\bstuck in (?:his|her|their|my|your|there|the) "
            r"(?:throat|windpipe|airway)\b|\bgrabb\w* (?:at )?(?:his|her|their|my) throat\b|"
            r"\b(?:can'?t|cannot|unable to) (?:talk|speak|breathe|cry) or cough\b|"
            r"\b(?:hands?|fingers) (?:at|to|on|around) (?:his|her|their|my) throat\b|"
            r"\b(?:clutch\w*|holding) (?:at )?(?:his|her|their|my) throat\b|"
            r"\bwent down the wrong (?:way|hole|pipe)\b|"
            r"\b(?:grape|food|sweet|candy|coin|toy|nut|peanut|bone|piece of \w+) (?:is |got )?"
            r"(?:stuck|lodged)\b(?! in (?:(?:his|her|my|their|the|your) )?(?:foot|hand|finger|"
            r"knee|arm|leg|wound|skin|ear|nose|eye))"
        ),
        "If someone who is choking can still cough, cry or speak, encourage them to keep "
        "coughing and do not hit their back. If an adult or a child over 1 year cannot cough, "
        "breathe or speak: stand behind and slightly to one side, support their chest with one "
        "hand, lean them forward and give up to 5 sharp blows between the shoulder blades with "
        "the heel of your other hand. If that does not clear it, give up to 5 abdominal "
        "thrusts: stand behind them, put your arms around their waist, place a clenched fist "
        "just above the belly button, grasp it with your other hand and pull sharply inwards "
        "and upwards. If it has still not cleared, call your emergency number and keep "
        "repeating 5 back blows and 5 abdominal thrusts until help comes. If they become "
        "unresponsive, start CPR. For a baby under 1 year, never use abdominal thrusts: lay "
        "the baby face down along your forearm or thigh, head lower than the bottom and "
        "supported, and give up to 5 back blows; then turn the baby face up and give up to 5 "
        "chest thrusts with two fingers in the middle of the chest, just below the nipple "
        "line, and call your emergency number if it has not cleared. Anyone who was given "
        "abdominal thrusts should be checked by a doctor afterwards.",
        procedure=True,
        excluded=_words(r"\bchok\w* (?:hazard|risk)s?\b(?! .*\bwhat to do\b)"),
    ),
    FirstAidTopic(
        "nosebleed",
        _words(
            r"\bnose ?bleeds?\b|\bnose (?:is |keeps |has been |'s been |won'?t stop |"
            r"started )?bleeding\b|"
            r"\bbleeding (?:from )?(?:the |my |his |her |their |your )?nose\b|"
            r"\bblood\b[^.?!]{0,30}\b(?:out (?:of )?|from )(?:his|her|my|their|the|your) nose\b|"
            r"\bnose\b[^.?!]{0,20}\b(?:dripping|pouring|gushing) blood\b"
        ),
        "Sit down, lean forward (not back, so that blood does not run down the throat) and "
        "pinch the soft part of the nose, just above the nostrils, for 10 to 15 minutes without "
        "letting go, breathing through the mouth. A cold pack or a cloth soaked in cold water "
        "on the bridge of the nose can help. For a day or so afterwards, avoid blowing or "
        "picking the nose, hot drinks and heavy lifting. Get urgent medical help if the "
        "bleeding has not stopped after 15 minutes of firm pressure, if it is heavy, if it "
        "followed a blow to the head, or if the person feels faint or finds it hard to breathe. "
        "Tilting the head back is no longer advised.",
    ),
    FirstAidTopic(
        "bleeding",
        _words(
            r"\b(?:heavy|heavily|severe|severely|bad|badly|serious|major|a lot of|lots of) "
            r"(?:bleeding|bleeds|blood loss)\b|\bbleed(?:s|ing)? (?:heavily|badly|a lot)\b|"
            r"\b(?:cut|cuts|wound|wounds|gash|laceration)\b.*\bbleed|\bbleed\w*.*\b(?:cut|wound|"
            r"gash)\b|\bstop (?:the |someone'?s |a |my |his |her )?bleeding\b|\btourniquet|"
            r"\bblood (?:is |has )?(?:soaks|soaking|soaked|pours|pouring|spurts|spurting|gushes|"
            r"gushing)\b|"
            r"\b(?:spurting|gushing|pouring|pumping) (?:\w+ ){0,2}blood\b|"
            r"\bgauze\b|\bpressure on (?:the |a )?wound\b|\b(?:glass|knife|metal|nail|splinter|"
            r"shard|"
            r"object|something)\b[^.?!]{0,60}\bstuck in\b|\bblood keeps\b|\bcut\b[^.?!]{0,40}"
            r"\bblood\b|\bskin tears?\b|\bcut (?:my|his|her|their|your) \w+ (?:really )?(?:badly|"
            r"deep(?:ly)?)\b"
        ),
        "For heavy bleeding from a wound, call your emergency number. Press firmly on the wound "
        "with a clean pad or cloth, or your hand if there is nothing else, and keep pressing "
        "without lifting it to look. If blood soaks through, put another pad on top rather "
        "than taking the first away. If something is stuck in the wound, leave it in and press "
        "around it, not on it. Help the person lie down if they feel faint, keep them warm and "
        "reassure them. When the bleeding is under control, bandage the pad firmly in place, "
        "but not so tightly that the fingers or toes beyond it turn pale or cold. For a small "
        "cut, rinse it under running water, press on it until it stops and cover it with a "
        "clean dressing; get it checked if it is deep, gaping or dirty, will not stop "
        "bleeding, or came from a bite.",
        excluded=_words(
            r"\bnose|\bgums?\b|\bperiods?\b|\bmenstrua|\bpregnan|\bvagina|\brectal|\bbottom\b|"
            r"\bstools?\b|\bpoo\b|\burine\b|\bpee\b|\bvomit|\bcough"
        ),
    ),
    FirstAidTopic(
        "burn",
        _words(
            r"\b(?:metal|buckle|seat ?belt|car seat|iron|oven|stove|hob|radiator|exhaust|pan)\b"
            r"[^.?!]{0,60}\b(?:blister\w*|red mark)|"
            r"\b(?:splash\w*|spill\w*|spilt|got)\b[^.?!]{0,30}\b(?:drain cleaner|bleach|acid|"
            r"caustic|oven cleaner|chemicals?)\b[^.?!]{0,30}\bon (?:my|his|her|their|the|your)\b|"
            r"\b(?:touched|grabbed|leaned on|brushed)\b[^.?!]{0,30}\b(?:oven|stove|hob|iron|"
            r"kettle|pan|grill|exhaust|straighteners|curling (?:iron|tongs)|heater|candle)\b|"
            r"\bscald(?:s|ed)?\b|\b(?:a|the|my|your|his|her|their|this|"
            r"minor|small|bad|"
            r"serious|severe|chemical|kitchen) burns?\b|\bburns? (?:on|to) (?:the |my |your |"
            r"his |her |their |a )|\bon (?:a|the) burn\b|\bburn(?:ed|t) (?:my|your|his|her|"
            r"their|him|them|myself|yourself|himself|herself)\b|\b(?:grabbed|touched|spilt|"
            r"spilled|splashed|knocked over|leaned on)\b[^.?!]{0,30}\b(?:boiling|scalding|hot)\b|"
            r"\b(?:boiling|scalding|hot) (?:water|oil|fat|tea|coffee)\b[^.?!]{0,30}\b(?:on|over|"
            r"down|into) "
            r"(?:my|his|her|their|the|your)\b"
        ),
        "Cool the burn under cool or lukewarm running water for 20 minutes as soon as you "
        "can, and call your emergency number for a large or deep burn. Take off clothing and "
        "jewellery near the burn unless it is stuck to the skin. Do not use ice, iced water, "
        "butter, oil, toothpaste or creams: they can deepen the damage or hold the heat in. "
        "After cooling, cover the burn loosely with a layer of cling film, or a clean plastic "
        "bag over a hand, and keep the person warm. Do not burst blisters. Get medical help for "
        "a burn larger than the person's hand, a deep burn (white, brown or charred skin), a "
        "burn on the face, hands, feet, joints or genitals, any chemical or electrical burn, "
        "and any burn in a baby, a young child, an older person or someone who is pregnant.",
        excluded=_words(r"\bcalorie|\bfat\b|\benergy\b|\bheal\b|\bhealing\b|\bdegree\b"),
    ),
    FirstAidTopic(
        "seizure",
        _words(
            r"\bseizures?\b|\bepilep\w*\b[^.?!]{0,60}\b(?:shaking|jerking|twitching|fit)\b|"
            r"\bconvuls\w*|\b(?:having|during|in|had) a fit\b(?! of)|"
            r"\bepileptic (?:fit|attack)s?\b|\bjerking\b|\bshaking uncontrollably\b|"
            r"\bshaking on the (?:floor|ground)\b|\beyes (?:have )?rolled back\b|\bfitting\b|"
            # Its signs as a bystander tells them, which also name a fall ("dropped to the
            # floor shaking all over"): seizure comes before fainting, so they get this card.
            r"\b(?:shaking|twitching|thrashing|jerking) all over\b|"
            r"\bstarted (?:shaking|twitching)\b"
        ),
        "During a seizure, stay with the person and keep them safe: move away anything they "
        "could hit, cushion their head with something soft and loosen anything tight around "
        "the neck. Note the time it started. Do not hold them down, do not put anything in "
        "their mouth, and give them nothing to eat or drink. When the jerking stops, roll them "
        "onto their side in the recovery position and stay with them, speaking calmly, until "
        "they are fully awake; they may be confused. Call your emergency number if the seizure "
        "lasts more than 5 minutes, if another one starts before they recover, if it is their "
        "first seizure, if they are injured, have trouble breathing or do not wake up "
        "afterwards, or if it happened in water.",
        excluded=_words(
            r"\bcaus\w*|\bwhy\b|\bmedicines?\b|\bdrugs?\b|\btypes?\b|\btablets?\b|\bpills?\b|"
            r"\bmedications?\b"
        ),
    ),
    FirstAidTopic(
        "heart_attack",
        _words(
            r"\bheart attacks?\b|\bcrushing (?:chest )?pain\b|\bchest pain\b[^.?!]{0,60}"
            r"\b(?:arm|jaw|sweat\w*|grey|gray|clammy)\b|\bchest\b[^.?!]{0,30}\b(?:tight|heavy|"
            r"pressure|squeez\w*|crushing)\b[^.?!]{0,60}\b(?:arm|jaw|sweat\w*|grey|gray|clammy|"
            r"nause\w*)\b|\b(?:pressure|tightness|heaviness|squeezing|tight)\b[^.?!]{0,30}\b(?:in|"
            r"on|across) (?:the middle of )?(?:my|his|her|their|the) chest\b[^.?!]{0,60}\b(?:arm|"
            r"jaw|sweat\w*|grey|gray|clammy|nause\w*|short of breath|breathless)\b|"
            + _either(r"\belephant\b", r"\bchest\b", _within(30))
            + r"|\b(?:chest|heartburn|indigestion|pressure)\b[^.?!]{0,60}"
            r"\b(?:spread\w*|radiat\w*|going (?:up|down)|shooting)\b[^.?!]{0,30}\b(?:jaw|arm|"
            r"shoulder)"
        ),
        "Warning signs of a heart attack include chest pain or pressure (tight, heavy or "
        "squeezing) that may spread to the arms, neck, jaw, back or stomach, with shortness of "
        "breath, sweating, feeling sick, light-headedness or a feeling of dread; in women, "
        "older people and people with diabetes the pain can be mild or missing. Call your "
        "emergency number at once, and do not drive the person to hospital yourself. Help them "
        "sit down and rest in the position they find most comfortable, and stay with them. The "
        "call handler may tell them to chew an aspirin if they are not allergic to it: do what "
        "the handler says. If the person becomes unresponsive and stops breathing normally, "
        "start CPR and send for a defibrillator.",
        recognised=True,
        excluded=_words(r"\bhappens? in the heart\b|\bcaus\w*|\bwhy\b|\brecover"),
    ),
    FirstAidTopic(
        "heatstroke",
        _words(
            r"\bheat ?stroke\b|\bsun ?stroke\b|\bheat (?:exhaustion|illness|collapse|cramps)\b|"
            r"\boverheat\w*|\b(?:hot|locked|parked) car\b|\bhyperthermi\w*|"
            r"\b(?:stopped|not|isn'?t|is not|no longer) sweating\b|"
            r"\bskin (?:is |was |feels )?(?:very |really |super )?hot and dry\b|\bhot,? dry skin\b|"
            rf"\b(?:too|really|very|so|extremely|super|"
            rf"burning) hot\b[^.?!]{{0,80}}\b(?:{_HEAT_SIGNS})|"
            rf"\b(?:{_HEAT_SIGNS})[^.?!]{{0,80}}\b(?:(?:in|from|by) the (?:heat|sun)|heat ?wave|"
            rf"too hot)\b|"
            rf"\b(?:heat ?wave|(?:in|from|by) the (?:heat|sun)|no (?:ac|a/c|"
            rf"air ?con\w*))\b[^?!]{{0,120}}"
            rf"\b(?:{_HEAT_SIGNS})"
        ),
        "Heat exhaustion shows as a headache, dizziness, heavy sweating, cramps, feeling sick, "
        "a fast pulse and intense thirst. Move the person somewhere cool, have them lie down "
        "with their feet slightly raised, take off extra clothing and give them plenty of cool "
        "water or a sports or rehydration drink to sip. Cool their skin: sponge or spray it "
        "with cool water and fan them; cold packs wrapped in a cloth in the armpits and on the "
        "neck help too. They should start to feel better within 30 minutes. Heatstroke is an "
        "emergency: call your emergency number if they are confused, not making sense, very "
        "drowsy or unresponsive, hot with no sweating, having a fit, breathing fast, or no "
        "better after 30 minutes of cooling. While you wait, keep cooling them as fast as you "
        "can, for example by soaking their clothes with cool water and fanning them, and if "
        "they become unresponsive put them in the recovery position, or start CPR if they stop "
        "breathing normally. Give nothing to drink to someone who cannot swallow safely, and no "
        "medicine for the temperature (paracetamol and aspirin do not help heatstroke). A "
        "child left in a hot car must be taken out at once and cooled, with an emergency call.",
        recognised=True,
        excluded=_words(
            r"\bcaus\w*|\bwhy\b|\bforecast|\blaptop|\bcomputer|\bphone\b|\bengine|\bcpu\b|"
            r"\bgpu\b|\bconsole|\bbattery|\bcharger|\bradiator|\bhow (?:does|do) \w+ work|"
            r"\bexpir\w*|"
            r"\bstor(?:e|ed|ing|age)\b"
        ),
    ),
    FirstAidTopic(
        "hypothermia",
        _words(
            r"\bhypotherm\w*|\bstopped shivering\b|\b(?:isn'?t|not|no longer|has stopped) "
            r"shivering\b|\bshiver\w* (?:uncontrollably|violently|badly|non-?stop|like crazy|and "
            r"can'?t stop)\b|\bcan'?t stop shivering\b|"
            r"\b(?:fell|fallen|went|gone|slipped|been) (?:in|into|through)\b[^.?!]{0,40}"
            r"\b(?:icy|ice|freezing|frozen|cold)\b|\b(?:icy|freezing|frozen|cold) (?:water|"
            r"river|lake|sea|pond|canal)\b[^.?!]{0,60}\b(?:pulled|dragged|got|fished) "
            r"(?:him|her|them|out)\b|"
            rf"\b(?:freezing|frozen|(?:so|very|really|super) cold|ic[ey][- ]cold|cold all over|"
            rf"out in the (?:cold|snow)|(?:in|out of|into) the (?:sea|snow|lake|river|pond|canal|"
            rf"water)|"
            rf"cold water|-\d+ out)\b"
            rf"[^?!]{{0,100}}\b(?:{_COLD_SIGNS})|"
            rf"\b(?:{_COLD_SIGNS})[^.?!]{{0,80}}\b(?:freezing|the cold|in the snow|(?:so|very|"
            rf"really|super) cold|ic[ey][- ]cold)\b|"
            # Warming someone cold up, the practice asked about ("rub their hands").
            r"\b(?:rub\w*|massag\w*|warm (?:him|her|them|someone) up|get the blood going)\b"
            r"[^.?!]{0,60}\b(?:freezing|(?:so|very|really|super|too) cold)\b|"
            r"\b(?:freezing|(?:so|very|really|super|too) cold)\b[^.?!]{0,60}\b(?:rub\w*|"
            r"massag\w*|warm (?:him|her|them|someone) up)\b"
        ),
        "Someone very cold may shiver hard, have pale, cold skin and blue lips, and become "
        "slow, clumsy, confused or drowsy; when the shivering stops in someone who is still "
        "cold, they are getting worse. Call your emergency number if they are confused, "
        "drowsy, slurring their words or unresponsive, or were in cold water. Move them "
        "somewhere warm and sheltered, handling them gently, and keep them lying down if they "
        "were in cold water. Take off wet clothing and dry them, then wrap them in dry "
        "blankets, a sleeping bag or coats, covering the head but not the face, and put "
        "something under them if they are on the ground. Warm the middle of the body first: "
        "your own body heat skin to skin under the blankets helps. If they are fully awake "
        "and can swallow, give a warm (not hot) sweet drink or food. Do not put them in a hot "
        "bath or shower, rub or massage their arms and legs, put hot-water bottles or heaters "
        "straight on the skin, give alcohol or make them walk about: these can be dangerous. "
        "If they become unresponsive, put them in the recovery position if they are breathing "
        "normally, or start CPR if they are not.",
        recognised=True,
        excluded=_words(
            r"\bcaus\w*|\bwhy\b|\bhow common\b|\bclimate\b|\bfever|\bflu\b|\bchills\b|"
            r"\binfection|\bcovid"
        ),
    ),
    FirstAidTopic(
        "low_blood_sugar",
        _words(
            r"\bhypos?\b|\bhypoglyc\w*|\blow (?:blood )?(?:sugar|glucose)\b|"
            r"\b(?:blood )?(?:sugar|glucose|bg|bs)(?: levels?)? (?:is |are |has |was |went |'s )?"
            r"(?:really |very |too |dangerously )?(?:low|dropp\w*|crash\w*|falling|fell|tank\w*)"
            r"\b|\bglucagon\b|\bglucose (?:tablets?|tabs|gel)\b|"
            + _either(rf"\b(?:{_DIABETES})", rf"\b(?:{_HYPO_SIGNS})", _across(100), _within(100))
        ),
        "Low blood sugar (a hypo) is most common in people who take insulin or some diabetes "
        "tablets. Signs come on quickly: shaking, sweating, hunger, a pale face, a fast "
        "heartbeat, irritability, confusion or behaving as if drunk. If the person is awake and "
        "can swallow safely, give them a fast-acting sugar straight away, about 15 to 20 g: "
        "glucose tablets or gel as the pack says, a small glass (150 to 200 ml) of fruit juice "
        "or of a non-diet fizzy drink, or a few sweets such as jelly babies (chocolate works "
        "too slowly). If they have a meter, check again after 10 to 15 minutes and give more "
        "sugar if it is still low or they are no better. Once they feel better, they should "
        "eat a snack or meal with slower carbohydrate, such as a sandwich or biscuits. If they "
        "are too drowsy or confused to swallow safely, are unconscious or having a fit, do not "
        "put food or drink in their mouth: put them in the recovery position and call your "
        "emergency number; use a glucagon kit only if you have been shown how. Call your "
        "emergency number too if they do not improve after sugar has been given twice or three "
        "times. Slurred speech and confusion can also be a stroke: if the face droops on one "
        "side or an arm is weak, or they are not clearly better within 15 minutes of sugar, "
        "call your emergency number. Never give insulin to someone with low blood sugar.",
        recognised=True,
        excluded=_words(
            r"\bcaus\w*|\bwhy\b|\bhypo(?:thyroid|allergenic|tension|chondria)|"
            r"\bhba1c\b|\bhow (?:does|do) \w+ work|\bnormal (?:range|level)"
        ),
    ),
    FirstAidTopic(
        "stroke",
        _words(
            r"\bstrokes?\b|\bface (?:looks |is |has |gone |been )*(?:droop\w*|lopsided)|"
            r"\bone side of (?:his|her|their|my) (?:face|mouth)\b[^.?!]{0,20}\b(?:droop\w*|"
            r"lopsided|down)|\bwords (?:are |all )?jumbled|\bjumbled words\b|\bslurred\b|"
            r"\bhalf (?:of )?(?:his|her|their|my) face\b|\bspeech\b(?: \w+){0,2} (?:slurred|drunk|"
            r"garbled)\b|\bcan'?t find (?:his|her|their|my) words\b|\bsuddenly\b[^?!]{0,80}"
            r"\b(?:arm|leg)\b[^.?!]{0,20}\b(?:weak|numb|heavy|limp)\b|"
            r"\bsuddenly\b[^.?!]{0,20}(?:can'?t|cannot|unable to) (?:lift|raise|move) (?:his|her|"
            r"my|their|one|an?) (?:right |left )?(?:arm|leg)\b|"
            r"\bFAST test\b"
        ),
        "Use FAST to spot a stroke: Face (has one side drooped, or can they not smile "
        "evenly?), Arms (can they not lift both arms and keep them up?), Speech (is it "
        "slurred or muddled, or can they not speak?), Time to call your emergency number at "
        "once if you see any of these. Other sudden signs are loss of sight, weakness or "
        "numbness down one side, confusion, dizziness or loss of balance, and a sudden, severe "
        "headache. Note the time the symptoms began, because it guides treatment. Give them "
        "nothing to eat or drink, and do not wait to see whether the signs pass: signs that go "
        "away within minutes still need urgent assessment.",
        recognised=True,
        excluded=_words(
            r"\bheat ?stroke\b|\bsun ?stroke\b|\bcaus\w*|\bwhy\b|\bcommon\b|\brecover\w*|"
            r"\bswim|\bpaint|\bstroke (?:the|a|my|your|his|her) "
        ),
    ),
    FirstAidTopic(
        "fainting",
        _words(
            r"\bfaint(?:s|ed|ing)?\b|\bpass(?:es|ed)? out\b|\bpassing out\b|"
            r"\b(?:dropped|fell|slumped) to (?:the )?(?:floor|ground)\b|"
            r"\b(?:went|gone|turned) (?:\w+ )?(?:white|pale)\b[^.?!]{0,30}\b(?:dropped|fell|"
            r"collapsed|went down|keeled)\b|\bkeel(?:s|ed)? over\b|"
            r"\bvision (?:is )?(?:going|went|goes|gone) (?:dark|black|grey|gray)\b|"
            r"\b(?:about to|going to|gonna) (?:faint|pass out|black out)\b"
        ),
        "If someone feels faint, help them lie down, or sit with their head between their "
        "knees. If they faint, lay them on their back and raise their legs, for example on a "
        "chair or cushions, to help blood flow back to the brain; loosen tight clothing and "
        "let in fresh air. Most people come round within a minute. If they have not woken "
        "within a minute or two, put them in the recovery position, check that they are "
        "breathing and call your emergency number; start CPR if they stop breathing normally. "
        "Let them rest before they get up slowly. A faint with chest pain, a pounding or "
        "irregular heartbeat, breathlessness, a fit or an injury, a faint during exercise, or "
        "a first faint should be checked by a doctor.",
        excluded=_words(r"\bcaus\w*|\bwhy\b|\bfaint (?:line|smell|taste|sound|light)\b"),
    ),
)

#: Asking what to do, how to help or whether to do something.
_ASKS_FOR_ACTION = _words(
    r"\bfirst[- ]aid\b|\bwhat (?:should|do|can|must|would) (?:i|you|we|one|they|people|"
    r"someone|a person) do\b|\bwhat to do\b|\bwhat (?:should|can) be done\b|"
    r"\bhow (?:do|should|can|would|could) (?:i|you|we|one|someone|people|a person|they) "
    r"(?:actually |really |best |safely |properly )?(?:help|treat|stop|do|give|perform|put|"
    r"place|use|cool|warm|deal|handle|manage|respond|care|look after|tell|know|recogni[sz]e|"
    r"spot|check|get)\b|"
    r"\bhow to (?:help|treat|stop|do|give|perform|put|place|use|cool|warm|deal|handle|manage|"
    r"respond|care|look after|tell|recogni[sz]e|spot)\b|"
    r"\b(?:should|can|must) (?:i|you|we|one|they) (?:\w+ )?(?:put|tilt|use|give|apply|pop|"
    r"burst|move|lie|lay|call|hold|press|raise|cool|warm|remove|rub|ice|restrain|wait|tie)\b|"
    r"\bwhen should (?:i|you|we|someone|a person|they|people)\b|"
    r"\bhow (?:fast|deep|hard|often|long) should\b|\bis it (?:ok|okay|safe|right) to\b|"
    # ... and the wordings of someone in the middle of it: "what now", "which way do I roll
    # him", "do I pop the blisters", "before I call an ambulance", "tell me what to do".
    r"\bwhat now\b|\bwhat(?:'s| are| is) the (?:steps|first steps|right way)\b|\bwhich way\b|"
    r"\bwhere (?:exactly )?(?:do|should) (?:i|you|we)\b|"
    r"\b(?:do|should|can|must) (?:i|you|u|we|one) (?:\w+ )?(?:pop|burst|tip|tilt|put|take|pile|"
    r"use|give|cover|hold|roll|turn|move|lay|lie|sit|press|pinch|stick|hook|sweep|slap|hit|"
    r"pat|leave|keep|wrap|wash|rinse|run|cool|call|ring|jab|inject|try)\b|"
    r"\b(?:call|ring|phone) (?:an? |the )?(?:ambulance|999|911|112|emergency|paramedics)\b|"
    r"\bhow many (?:minutes|seconds|times)\b|\b(?:sit|lie) (?:down )?or (?:sit|lie|stand)\b|"
    r"\b(?:help|helping) (?:him|her|them|me|someone)\b|\bhelp\s*[!.]*\s*$|"
    r"\bwhat (?:should|do|can) (?:i|we) (?:be )?doing\b|\btell me what\b|"
    r"\bshould (?:i|we|you) be doing\b|\bshould (?:i|we)\s*\?|\bwhat else\b(?! (?:causes|"
    r"can cause))|\bdoes (?:that|this|"
    r"it) (?:actually |really )?work\b|"
    r"\bwhat (?:should|can|must) (?:staff|bystanders|teachers|parents|carers|coworkers|"
    r"lifeguards|the others) do\b|"
    r"\blook after (?:him|her|them|someone)\b|\buntil (?:the )?(?:ambulance|paramedics|help)\b|"
    # A technique asked about in any verb: "am I supposed to push", "do I pull it out",
    # "can I really do the Heimlich on myself", "what am I doing wrong".
    r"\b(?:am i|are you|are we|is one) (?:supposed|meant|allowed|expected) to\b|"
    r"\b(?:do|does|did) (?:i|you|we) (?:\w+ )?(?:need|have) to\b|\bwhat am i doing wrong\b|"
    r"\b(?:do|should|can|could|must) (?:i|you|we|one) (?:still |really |just |also )?(?:pull|"
    r"do|let|raise|stand|stay|bandage|sleep|drive|wait|check|push|bend|pick|lift|remove|yank|"
    r"squeeze|elevate)\b|\bhow (?:hard|tight|deep|fast|far|long)\b[^.?!]{0,30}\b(?:push|"
    r"press|pinch|hold|have to|need to|should|must)\b|\bwhen (?:is|are) (?:an? )?\w+ "
    r"(?:actually )?(?:needed|necessary)\b|\bat what point\b|\bwhat is (?:the )?correct way\b|"
    r"\bgo to (?:a&e|the er|the emergency|hospital)\b|\bdo we need to\b|"
    # A common practice checked: "is it true you must ...", "is that actually helpful".
    r"\bis (?:it|that|this) (?:really |actually )?(?:the )?(?:true|correct|right|a good idea|"
    r"helpful|wise|better|bad)\b|\b(?:is|it'?s) (?:it )?better to\b|"
    r"\bthe (?:correct|right) thing to do\b|\bhave (?:him|her|them) (?:lean|sit|lie)\b|\b(?:lean|"
    r"tilt) (?:forward|forwards) or back\b"
)
#: Someone in it now ("my toddler is choking on a grape", "he has just collapsed"): the question
#: needs no question word to ask for the steps.
_HAPPENING_NOW = _words(
    r"\b(?:is|are|'s|am|i'm|started|starting) (?:\w+ )?(?:choking|jerking|fitting|"
    r"convulsing|bleeding|swelling|blistering|fainting|passing out|having a|overdosing|"
    r"shivering|overheating)\b|"
    r"\b(?:has|have|'s|just) (?:just )?(?:collapsed|fainted|passed out|fallen|burn(?:ed|t)|"
    r"scalded|cut)\b|\babout to (?:pass out|faint)\b|\bi feel (?:faint|like i'?m (?:going|about) "
    r"to (?:pass out|faint))\b|\bwon'?t stop\b|\bstill (?:going|bleeding)\b|"
    r"\b(?:\d+|a few|few|two|five|ten) ?(?:min(?:ute)?s?|seconds?) ago\b|\bjust now\b"
)
#: Asking about the condition, not what to do: its causes, history, numbers, cost or course.
_ASKS_ABOUT_IT = _words(
    r"^\s*why\b|\bwhat causes?\b|\bcaused by\b|\bwho (?:invented|came up|discovered)\b|"
    r"\bhistory\b|\bhow common\b|\bpercentage\b|\bstatistics?\b|\bcosts?\b|\bprice\b|"
    r"\blong[- ]term\b|\bside effects?\b|\bprevent\w*\b|\bsurviv\w*\b|\blegally\b|"
    r"\bgrow out\b|\bphrase\b|\bcertificat\w*|\bcourses?\b|\binsurance\b|\bdeclare\b|"
    r"\bback to work\b|\bdriv(?:e|ing) again\b|\bstill drive\b|\bdriv(?:e|ing) after\b|"
    r"\bdvla\b|\bsued?\b|\bcalories\b|\bphysio\w*|\brehab\w*|\bexercises\b|\bliab\w*|"
    r"\bstop getting\b|\bkeep getting\b|(?<!every )\bso often\b|"
    r"\bevery (?:winter|summer|day|week|night|morning|time)\b|\bstand for\b(?![^.?!]*\b(?:check|"
    r"spot|tell)\w*)"
)
#: Asking how to recognise an emergency.
_ASKS_FOR_SIGNS = _words(
    r"\b(?:warning )?signs? (?:of|that)\b|\bsymptoms? of\b|\bhow (?:can|do|would) (?:i|you|we|"
    r"one) (?:tell|know|recogni[sz]e|spot)\b|\bhow to (?:tell|recogni[sz]e|spot)\b|"
    r"\bwhat does .* look like\b|\bsymptoms\b|\bto (?:spot|recogni[sz]e)\b|"
    r"\bcheck(?:ing)? (?:someone|somebody|a person|them|him|her) for\b"
)
#: A first-aid procedure named as such: any question about it ("What is the recovery
#: position?", "is the recovery position for a baby the same?") asks for the procedure, unless
#: it asks about its history or a course (``_ASKS_ABOUT_IT``). "Cardiac arrest" names a
#: condition, not a procedure: "What is the difference between a heart attack and a cardiac
#: arrest?" is a knowledge question.
_NAMES_A_PROCEDURE = _words(
    r"\brecov\w* position\b|\bcpr\b|\bchest compressions?\b|\brescue breaths?\b|"
    r"\bmouth[- ]to[- ]mouth\b|\babdominal thrusts?\b|\bheimlich\b|\bback blows?\b"
)


#: The cards are for people; a question about an animal goes on to the model.
_AN_ANIMAL = _words(
    r"\b(?:dogs?|puppy|puppies|cats?|kittens?|pets?|horses?|pony|rabbits?|hamsters?|guinea pigs?|"
    r"parrots?|budgies?|birds?|ferrets?|cows?|sheep|goats?)\b"
)


def topic_of(question: str) -> FirstAidTopic | None:
    """The first topic ``question`` names that no look-alike wording rules out."""
    if _AN_ANIMAL.search(question):
        return None
    for topic in TOPICS:
        if topic.names.search(question) and not (
            topic.excluded is not None and topic.excluded.search(question)
        ):
            return topic
    return None


def first_aid_topic(question: str) -> FirstAidTopic | None:
    """The topic whose card answers ``question``, or None (see the module docstring)."""
    topic = topic_of(question)
    if topic is None or _ASKS_ABOUT_IT.search(question):
        return None
    if _ASKS_FOR_ACTION.search(question) or _HAPPENING_NOW.search(question):
        return topic
    if topic.recognised and _ASKS_FOR_SIGNS.search(question):
        return topic
    if topic.procedure and _NAMES_A_PROCEDURE.search(question):
        return topic
    return None


def first_aid_answer(topic: FirstAidTopic) -> str:
    """The card and the closing line."""
    return f"{topic.card}\n\n{CLOSING}"


def while_help_comes(question: str) -> str | None:
    """Steps for the emergency guidance of ``question``: the card of a topic it names (any
    wording: the person is in the emergency), or None."""
    topic = topic_of(question)
    return None if topic is None else f"While you wait for help: {topic.card}"
