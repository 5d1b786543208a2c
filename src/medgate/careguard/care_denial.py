"""Unfair denial of care: a request for help to deny, delay, ration or worsen care for people
named by what they can pay, what they cost, their status or prejudice, to put paying or
favoured patients ahead of sicker ones, or for content arguing that some people should not
have care.

The request screens read the topic of a request, and these requests share their topic with
the people they are done to ("turned away because he had no insurance, what can I do?"): on a
set written blind for it the screens let 16 of 40 through (careguard_runs_v38). This keyword
rule, a harmful-request rule in :mod:`medgate.careguard.categories`, refuses them before any
draft. It reads co-occurrence rather than one phrase: a request to act or to produce
something; after it, within 160 characters, an act of denying care (or of putting someone
first); somewhere in the message the people it is done to (or for); and nowhere a word of
someone resisting, appealing or reporting, or asking about their own care or a relative's,
since people denied care ask in the same words. Written on one blind set's misses and read once
on two fresh ones with its condition written first (docs/results/careguard_runs_v38/NOTES.md,
scripts/care_denial_rule.py): 15 of 40 harmful requests matched, 8 of them requests nothing
else refused before a draft; 1 of 40 benign messages (a nurse asking how to raise a colleague's
refusal to treat a transgender patient; "raise this" was added to the vetoes after the read).
"""

from __future__ import annotations

#: A request to act or to produce something.
_ASKS = (
    r"(?:\bhow (?:can|could|should|would|might|to|best to|do i|do we|does one|would one|can we|"
    r"can our|could we|should we|would we|would a|could a|should a|can a|do you)\b|"
    r"\bwh?at(?:'s| is| are|s)? (?:the |a |some )?(?:best|easiest|quickest|cheapest|simplest|"
    r"safest|subtle|smart|good|clever|legal|quiet|discreet|most \w+) (?:way|ways|approach|"
    r"method|wording|excuses?|reasons?|tactics?|criteria|language)\b|"
    r"\bis there (?:a|any) (?:way|wording|trick|loophole)\b|"
    r"\b(?:ways?|tips?|steps?|strategies|strategy|ideas|methods?|techniques?|advice|tricks?|"
    r"tactics|excuses|wording|phrasing|language|criteria|a system|a plan|a policy|a script|"
    r"a points system|a scoring system|loopholes?|arguments?) (?:to|for|on|that|which|i|we|"
    r"our|so)\b|"
    r"\bwhat (?:excuses|wording|reasons|criteria|questions|language|policy|rules) (?:can|could|"
    r"should|would|do|might)\b|\bwhich (?:wording|criteria|questions|excuses|rules)\b|"
    r"\b(?:i|we) (?:want|need|would like|'d like|plan|intend|have) (?:to|a|an|some)\b|"
    r"\bwants? (?:me |us )?to\b|\bhelp (?:me|us)\b|"
    r"\bcan (?:you|u) (?:help|write|draft|give|list|suggest|tell|make)\b|"
    r"^\W*(?:\w+ ){0,3}?(?:please |pls |ok |so |hey |quick q\W* )?(?:write|draft|create|compose|"
    r"generate|suggest|give|list|develop|devise|design|plan|set up|outline|put together|"
    r"produce|prepare|tell me|show me|teach me|make|help|argue|persuade|convince|explain why|"
    r"justify)\b)"
)
#: People denied care for who they are or what they can pay (or cost).
_DENIED = (
    r"(?:uninsured|underinsured|un-insured|no insurance|without insurance|public insurance|"
    r"(?:the )?poor\b|poorer|low[- ]income|deprived|council estates?|broke|homeless|"
    r"rough sleepers|immigrants?|migrants?|undocumented|illegals|illegal aliens|"
    r"asylum seekers?|refugees?|foreigners?|non-?citizens?|don'?t speak (?:the|english)|"
    r"non-english|medicaid|medicare|welfare|on benefits|benefits claimants?|obese|overweight|"
    r"fat (?:people|patients|ones)|morbidly|elderly|old(?:er)? (?:people|patients|folks?|ones|"
    r"residents)|over[- ]?[5-9]\d(?!\s*(?:mg|ml|days?|hours?|minutes?|mins?|weeks?|months?|%|"
    r"kg|lbs?|mmhg|bpm|units?|pounds?|dollars?|percent))s?|pensioners|disabled|disabilit\w+|"
    r"handicapped|wheelchair users?|learning disabilit\w+|down'?s? syndrome|autistic|black|"
    r"hispanics?|latin[oa]s?|asians?|muslims?|jews|jewish|roma|gypsies|travell?ers|gays?|"
    r"lesbians?|bisexual|lgbt\w*|queer|trans(?:gender)?(?: people| patients| women| men)?|hiv|"
    r"aids|drug users?|addicts?|addiction patients|junkies|alcoholics?|smokers?|mentally ill|"
    r"mental illness|schizophreni\w*|psychiatric patients|dementia|sickle cell|"
    r"chronically ill|prisoners?|inmates?|sex workers?|unvaccinated|on expensive (?:meds|"
    r"medications?|medicines?|drugs|treatments?)|(?:expensive|costly|high-cost) (?:patients|"
    r"members|residents|cases)|cost(?:s)? (?:us )?too much|cost us more|"
    r"(?:who|that|whose \w+) (?:can(?:'t|not)|could(?:n't| not)|won't|don't|do not|doesn't) "
    r"(?:afford|pay|cover)|can(?:'t|not) (?:pay|afford))\b"
)
#: People put first for money or favour.
_FAVOURED = (
    r"(?:donors?|vips?|vip wing|celebrit\w+|wealthy|rich (?:patients|people|clients)|"
    r"paying (?:patients|clients|customers)|self-pay\w*|private[- ]pay\w*|privately insured|"
    r"private patients|insured patients|well-insured|gated communities|subscribers?|"
    r"board members?|friends of|university degrees?)\b"
)
#: Acts of denying, delaying, rationing or worsening care, or the claim that some should not
#: have it.
_DENIES = (
    r"(?:den(?:y|ies|ied|ying)|refus\w* (?:to (?:treat|see|admit|register|book|take|give|"
    r"prescribe|refer|accept|serve|cover|fund|pay|operate)|(?:\w+ ){0,3}?(?:treatment|care|"
    r"admission|appointments?|services?|them|patients|people|claims?|cover(?:age)?|insulin|"
    r"surgery|transplants?|dialysis|beds?))|stop taking (?:on )?(?:\w+ ){0,2}(?:patients|"
    r"people|clients|them|referrals)|withh[oe]ld\w*|turn\w* (?:\w+ )?(?:away|back)|reject\w*|"
    r"exclud\w*|keep\w* (?:\w+ ){0,3}(?:out|away|from)|screen\w* out|filter\w* out|"
    r"weed\w* out|get\w* rid of|kick\w* out|throw\w* out|push\w* out|forc\w* out|dump\w*|"
    r"steer\w* (?:\w+ )?away|off (?:the|our|my) (?:ward|list|books|register)|"
    r"drop\w* (?:\w+ ){0,3}from|remov\w* (?:\w+ ){0,8}(?:from|off)|discourag\w*|"
    r"deter(?:s|red|ring)?\b|avoid (?:treating|taking on|seeing|admitting|registering|"
    r"accepting|referring)|stop (?:treating|seeing|accepting|prescribing|offering|referring|"
    r"giving|booking|registering)|(?:not|never|n't|dont|don't) (?:to )?(?:treat|see|admit|"
    r"accept|book|register|refer|offer|give|mention|tell|bring up|prescribe|take on)|"
    r"deprioriti[sz]\w*|lower priority|low priority|bottom of|back of the (?:queue|line|list)|"
    r"longest wait|end of the (?:queue|line|list)|wait longer|skip\w* (?:calls|patients|"
    r"people|them)|ration\w* (?!(?:out )?(?:my|it|our own)\b)|"
    r"cut\w* (?!(?:down |back )?(?:on )?(?:my|our own)\b)(?:\w+ ){0,2}(?:pain|medication|care|"
    r"staff|staffing|nurs\w+|treatment|services|budget|beds|access)|less (?:attention|care|"
    r"pain relief|treatment|time|staff)|waste of|don'?t deserve|doesn'?t deserve|"
    r"do not deserve|(?:should|must|ought to)(?:n'?t| not| no longer| never) (?:\w+ ){0,2}"
    r"(?:get|receive|have|be (?:given|entitled|allowed|offered|sent|treated|admitted))|"
    r"(?:should|must|ought to) (?:\w+ ){0,1}(?:pay for|pay full|be refused|be denied|"
    r"be turned away|go without|wait)|not be (?:entitled|allowed|given|offered|treated|"
    r"admitted)|no longer (?:get|receive|qualify)|stop getting|full price|pay upfront|"
    r"pay for their own|too hard|nobody qualifies|no one qualifies|almost nobody|"
    r"clos\w* (?:\w+ ){0,3}(?:units?|clinics?|services?|wards?)|"
    r"(?:sen[dt]|discharg\w*) (?:\w+ ){0,3}(?:off|home|away|out|back)\w* (?:early|"
    r"to the street)|(?:sen[dt]|discharg\w*) (?:\w+ ){0,4}early)"
)
#: Acts of putting someone ahead of others.
_FAVOURS = (
    r"(?:prioriti[sz]\w*|fast[- ]?track\w*|first in line|front of the (?:queue|line)|"
    r"over (?:sicker|other)|instead of (?:sicker|other)|ahead of|first access|extra points|"
    r"bump\w* (?:\w+ ){0,4}up|jump the (?:queue|list)|regardless of (?:clinical )?need)"
)
#: Words of someone resisting, appealing or reporting, or asking for themselves or a relative.
_VETO = (
    r"\b(?:(?:not|never|n't) (?:be )?(?:denied|refused|turned away|excluded)|ensur\w*|"
    r"appeal\w*|complain\w*|rights|report\w*|challenge\w*|raise (?:this|it|concerns?)|"
    r"professional standards|whistle-?blow\w*|is (?:that|it|this) (?:even )?legal|"
    r"illegal(?! (?:immigrants?|aliens?|migrants?))|fair|fairly|fairness|equitabl\w*|equity|"
    r"against|prevent\w*|protect\w*|accessible|inclusive|welcome|ethical\w*|unfair\w*|"
    r"discriminated|barriers|stigma|my (?:dad|mum|mom|mother|father|son|daughter|husband|wife|"
    r"partner|uncle|aunt|brother|sister|grandmother|grandfather|grandma|grandpa|kid|child|baby|"
    r"friend|patient)|my (?:own )?(?:insulin|meds|medication|medicine|pills|inhaler|"
    r"prescriptions?|treatment|doses?|care)|i was|i've been|i am being|i'm being|we were|"
    r"they refused|they denied|was refused|was denied|been refused|been denied|"
    r"told (?:me|us|him|her)|how (?:do|does|did) (?:hospitals|insurers|they|the nhs|doctors)|"
    r"why (?:do|does|did|can't|cant)|explain how|what happens|what are my|where can|"
    r"who can (?:i|we|help)|can i still|options)\b"
)
#: The rule, one pattern (matched case-insensitively, as every rule is): no veto
#: word anywhere; then the people denied somewhere and, after a request, an act of denying
#: within 160 characters; or the people put first somewhere and, after a request, an act of
#: putting them first.
CARE_DENIAL_PATTERN = (
    rf"(?s)^(?!.*{_VETO})(?:(?=.*\b{_DENIED}).*?{_ASKS}.{{0,160}}?\b{_DENIES}|"
    rf"(?=.*\b{_FAVOURED}).*?{_ASKS}.{{0,160}}?\b{_FAVOURS})"
)
