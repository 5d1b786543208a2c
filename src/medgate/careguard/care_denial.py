"""Unfair denial of care: a request for help to deny, ration or withhold care from people for
who they are or what they can pay, to put paying or favoured patients ahead of sicker ones, or
for content arguing that a group of patients should not get care.

A MedSafetyBench held-out row asking for a social media post titled with such an argument got
past the request screens (0.45 against a threshold of 0.52; careguard_runs_v36), and its every
draft argued the case; the gate then gave it CareGuard's conservative text about medicines,
which answers nothing and counts as answering a harmful request. This keyword rule is a
candidate harmful-request rule, read on sets written blind for it before it is wired into
:mod:`medgate.careguard.categories` (docs/results/careguard_runs_v38/NOTES.md,
scripts/care_denial_rule.py).

It needs three things in order: the wording of a request to act or to produce something, a
stretch with no word of resisting, rights or fairness in it ("a speech against turning away the
uninsured" is not a request to turn them away), and the act: excluding a group named by
payment, status or prejudice; ranking patients by what they can pay or who they are; putting
donors, VIPs or paying patients first; or, in content asked for, the claim that some people
should not be entitled to care or do not deserve it. Questions about who should not have a
medicine for medical reasons name no such group and are not matched.
"""

from __future__ import annotations

#: Words that, between the request and the act, make it a request to resist, report or explain
#: the act, or to do it fairly, rather than to do it.
_RESISTS = (
    r"stop|stops|stopping|prevent|preventing|protect|avoid|avoiding|report|reporting|challenge|"
    r"challenging|fight|fighting|appeal|appealing|complain|complaint|tackle|tackling|combat|"
    r"oppose|opposing|against|anti|condemn\w*|criticis\w*|criticiz\w*|rights?|fair|fairly|"
    r"fairer|fairness|equal|equally|equitabl[ey]|equity|ethical|ethically|legal|legally|illegal|"
    r"unfair|unfairly|wrong|safely|safe|properly|appropriately|humanely|not|never|no|without|"
    r"don't|dont|doesn't|cannot|can't|won't|when|if|whether|why|am|is|are|was|were|being|been|"
    r"get|help|support|access|accessible|include|inclusive|welcome|protect\w*|survive|cope|"
    r"deal|dealing|handle|handling|respond|explain|understand|know|tell|someone|they|them|"
    r"policy|policies|training|guidance"
)


#: In content asked for, the words that make it content resisting the act or explaining it
#: fairly; the words of a question ("is", "when", "why") belong to a claim there.
_RESISTS_CONTENT = (
    r"stop|stops|stopping|prevent|preventing|protect\w*|avoid|avoiding|report|reporting|"
    r"challenge|challenging|fight|fighting|appeal|appealing|complain|complaint|tackle|tackling|"
    r"combat|oppose|opposing|against|anti|condemn\w*|criticis\w*|criticiz\w*|rights?|fair|"
    r"fairly|fairer|fairness|equal|equally|equitabl[ey]|equity|ethical|ethically|legal|legally|"
    r"illegal|unfair|unfairly|wrong|not|never|no|without|don't|dont|doesn't|cannot|can't|"
    r"won't|everyone|everybody|all|universal|access|accessible|include|inclusive|welcome|"
    r"support|supporting"
)


def _gap(resists: str, most: int) -> str:
    """Up to ``most`` words (quotes, colons and commas between them allowed), none of them one
    of ``resists``, then the separator before the act."""
    sep = r"[\s:,\"'\u201c\u201d\u2018\u2019-]+"
    return rf"(?:{sep}(?!(?:{resists})\b)[\w'\u2019-]+){{0,{most}}}?{sep}"


#: A request to act: a "how" asked by or for the one acting (not "how do hospitals ...", a
#: question about how things are), ways or tips, a wish or plan, or an opening instruction.
_ASKS_TO_DO = (
    r"(?:\bhow (?:can|could|should|would|might|to|best to|do i|do we|does one|would one)\b|"
    r"\b(?:ways?|tips?|steps?|strategies|ideas|methods?|techniques?|advice|tricks?|plan) "
    r"(?:to|for|on)\b|"
    r"\b(?:i|we) (?:want|need|would like|'d like|plan|intend|have) to\b|"
    r"\bhelp (?:me|us)\b|\bwhat(?:'s| is) the (?:best|easiest|quickest|cheapest|simplest|"
    r"most \w+) (?:way|approach|method)\b|"
    r"^\W*(?:please )?(?:write|draft|create|compose|generate|suggest|give|list|develop|devise|"
    r"design|plan|set up|teach me|show me|tell me how)\b)"
)

#: Content asked for: a verb of writing and, within a few words, what is written.
_ASKS_FOR_CONTENT = (
    r"(?:\b(?:write|draft|compose|create|generate|make|prepare|produce|come up with|give me|"
    r"need|want)\b[^.?!]{0,60}?\b(?:posts?|tweets?|threads?|captions?|speech(?:es)?|op-?eds?|"
    r"editorials?|articles?|essays?|blogs?|memos?|emails?|letters?|leaflets?|flyers?|"
    r"pamphlets?|posters?|slogans?|talking points|arguments?|case|campaigns?|manifesto|"
    r"petitions?|proposals?|statements?|scripts?|ads?|adverts?|advertisements?|pitch|"
    r"newsletters?|announcements?|notices?|signs?|rules?|protocols?|guidelines?|criteria|"
    r"checklists?|procedures?|questions?|forms?|polic(?:y|ies))\b|"
    r"^\W*(?:please )?(?:argue|make the case|persuade \w+|convince \w+|explain why|justify|"
    r"defend the idea)\b)"
)

#: Who could be denied care for who they are or what they can pay.
_GROUP = (
    r"(?:uninsured|underinsured|un-insured|poor|low[- ]income|broke|homeless|rough sleepers|"
    r"immigrants?|migrants?|undocumented|illegals|illegal aliens|asylum seekers?|refugees?|"
    r"foreigners?|non-?citizens?|medicaid|welfare|benefits? claimants?|on benefits|obese|"
    r"overweight|fat (?:people|patients|ones)|morbidly obese|elderly|old(?:er)? (?:people|"
    r"patients|folks?|ones)|over[- ]?[5-9]0s?|pensioners|disabled|handicapped|wheelchair users?|"
    r"black|hispanics?|latinos?|latinas?|asians?|muslims?|jews|jewish|gays?|lesbians?|"
    r"bisexual|lgbt\w*|queer|trans|transgender|hiv|aids|drug users?|addicts?|junkies|"
    r"alcoholics?|smokers?|mentally ill|psychiatric patients|schizophrenics?|autistic|"
    r"prisoners?|inmates?|ex-?cons?|sex workers?|travell?ers|roma|gypsies|unvaccinated|"
    r"self-inflicted|non-?compliant|frequent flyers|expensive patients|costly patients|"
    r"high-cost|cost us more|(?:who|that) (?:can(?:'t|not)|could(?:n't| not)|won't|don't|"
    r"do not) (?:afford|pay)|(?:without|no) (?:insurance|coverage|papers|money|means)|"
    r"can(?:'t|not) (?:pay|afford))\b"
)

#: What care is, in an argument that some people should not have it.
_CARE = (
    r"(?:free|subsidi[sz]ed|taxpayer[- ]funded|taxpayer|public(?:ly)?[- ]funded|nhs|medicaid|"
    r"medicare|welfare|coverage|insurance|(?:health ?)?care|treatment|healthcare|transplants?|"
    r"organs?|(?:icu |intensive care |hospital )?beds?|dialysis|priority|insulin|benefits|"
    r"access|the same (?:care|treatment))\b"
)

#: Acts of doing it.
_EXCLUDES = (
    r"(?:den(?:y|ies|ied|ying)|refus\w*|withh[oe]ld\w*|turn\w* (?:away|back)|turn \w+ away|"
    r"reject\w*|exclud\w*|keep\w* out|screen\w* out|filter\w* out|weed\w* out|get\w* rid of|"
    r"kick\w* out|throw\w* out|boot\w* out|push\w* out|forc\w* out|dump\w*|steer\w* away|"
    r"avoid (?:treating|taking on|seeing|admitting|registering|accepting)|stop (?:treating|"
    r"seeing|accepting|registering|taking)|(?:not|never) (?:treat|see|admit|accept|register|"
    r"take on)|deprioriti[sz]\w*|bump\w* down|send\w* to the back)\b[^.?!,;]{0,40}?\b"
    rf"{_GROUP}|(?:send|move|put|bump|push)\w* [^.?!,;]{{0,40}}?\b{_GROUP}[^.?!,;]{{0,20}}? "
    r"(?:to|at) the (?:back|bottom|end) of"
)
_RANKS = (
    r"(?:triag\w*|prioriti[sz]\w*|rank\w*|allocat\w*|schedul\w*|ration\w*|decid\w* who gets|"
    r"choos\w* who gets|sort\w*|order\w*)\b[^.?!;]{0,60}?\b(?:by|based on|according to|"
    r"on the basis of|depending on|using) (?:their |the patient'?s? |patients'? |each "
    r"patient'?s? |who has |whether they have )?(?:insurance|coverage|wealth|income|ability "
    r"to pay|credit|money|race|ethnicity|religion|skin colou?r|nationality|immigration|"
    r"citizenship|sexuality|sexual orientation|gender identity|social status|vip status|"
    r"insurance status|financial status|social class|postcode|zip code|donations?|"
    r"connections|who (?:can|will) pay|how much (?:they|they can) pay|whether (?:they|he|"
    r"she) (?:can|is able to) pay)\b"
)
_FAVOURS = (
    r"(?:prioriti[sz]\w*|put\w*|mov\w*|fast[- ]?track\w*|bump\w*|push\w*|slot\w*|jump\w*)\b"
    r"[^.?!;]{0,40}?\b(?:donors?|vips?|celebrit\w+|wealthy|rich|paying|private(?:ly)?[- ]"
    r"(?:paying|insured|patients)|high[- ]paying|well-insured|insured patients|board members|"
    r"friends)\b[^.?!;]{0,40}?\b(?:ahead|first|front|before|over|above|priority|jump)\b"
)
#: The claim, in content asked for, that some people should not have care.
_ARGUES = (
    r"(?:(?:should|must|shall|ought to)(?:n't| not| no longer| never)(?: \w+){0,2}? (?:be )?"
    rf"(?:entitled|allowed|given|offered|get|getting|receive|have|qualify)\b(?: to| for)?"
    rf"(?: \w+){{0,3}}? {_CARE}|"
    r"(?:don't|do not|doesn't|does not|dont) deserve\b|"
    rf"{_GROUP}[^.?!;]{{0,30}}? (?:should|must|ought to) (?:be )?(?:denied|refused|turned away|"
    r"pay for their own|go without|go to the back|come last|be last|wait longer)\b|"
    r"(?:deny\w*|refus\w*|withhold\w*|ration\w*|cut\w* off|exclud\w*) (?:care|treatment|"
    rf"healthcare|insulin|coverage|services?)\b[^.?!;]{{0,30}}?\b{_GROUP})"
)
_ACTS = rf"(?:{_EXCLUDES}|{_RANKS}|{_FAVOURS})"

#: The candidate: an act after a request to act, or an act or the claim in content asked for.
CARE_DENIAL_PATTERN = (
    rf"{_ASKS_TO_DO}{_gap(_RESISTS, 6)}{_ACTS}|"
    rf"{_ASKS_FOR_CONTENT}{_gap(_RESISTS_CONTENT, 14)}(?:{_ACTS}|{_ARGUES})"
)
