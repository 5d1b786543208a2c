"""Words the claim rules need to know: medicines, the people a claim is about, and conditions.

Regular-expression fragments (no groups that capture), shared by the rule sets in
:mod:`medgate.claims.rules`. The medicine fragment recognises the generic words ("tablets",
"your blood pressure medication"), drug classes, and international non-proprietary names by
their stems ("-pril", "-statin", "-mab"), so a drug the lists do not name is still found when its
name follows the naming conventions. Whatever the lists miss, the learned detector is there for.
"""

from __future__ import annotations

_GENERIC = (
    r"medicines?|medications?|meds|drugs?|tablets?|pills?|capsules?|tabs|doses?|prescriptions?"
    r"|inhalers?|injections?|jabs?|patch(?:es)?|syrups?|suspensions?|drops|creams?|ointments?"
    r"|supplements?|vaccines?|remed(?:y|ies)|painkillers?|blood\s+thinners?|water\s+tablets?"
    r"|antibiotics?|antidepressants?|antihistamines?|antipsychotics?|antacids?|steroids?"
    r"|statins?|beta[\s-]?blockers?|ace\s+inhibitors?|nsaids?|opioids?|insulin|chemotherapy"
    r"|contraceptives?|the\s+pill|laxatives?|decongestants?|diuretics?|anticoagulants?"
    r"|benzodiazepines?|sleeping\s+(?:tablets|pills)|triptans?|ssris?|preventers?|relievers?"
    r"|anticonvulsants?|antiepileptics?|sedatives?|hormones?|vitamins?|herbal\s+\w+"
    r"|(?:\w+\s+)?inhibitors?|blockers?|agonists?|antagonists?"
    r"|(?:blood\s+pressure|thyroid|cholesterol|diabetes|heart|seizure|asthma|pain)\s+"
    r"(?:medicines?|medications?|tablets?|pills?|drugs?)"
)
#: Stems of international non-proprietary names.
_STEMS = (
    r"\w+(?:pril|sartan|olol|alol|statin|azole|cillin|mycin|micin|cycline|floxacin|prazole"
    r"|tidine|dipine|gliflozin|gliptin|glutide|tide|parin|xaban|gatran|mab|nib|zepam|zolam"
    r"|triptan|oxetine|aline|setron|profen|fenac|coxib|dronate|lukast|sonide|asone"
    r"|olone|afil|tadine|pramine|triptyline|peridol|apine|idone|barbital|caine|vir|conazole"
    r"|formin|glinide|gliclazide|amide|thiazide|semide|etine|oxacin|thromycin|ximab|zumab"
    r"|umab|lamide|trexate|thioprine|lamine)"
)
_NAMES = (
    r"paracetamol|acetaminophen|aspirin|ibuprofen|naproxen|codeine|tramadol|morphine"
    r"|oxycodone|fentanyl|metformin|insulin|warfarin|heparin|clopidogrel|apixaban|digoxin"
    r"|lithium|levothyroxine|thyroxine|prednisone|prednisolone|hydrocortisone|dexamethasone"
    r"|methotrexate|amoxicillin|penicillin|doxycycline|ciprofloxacin|trimethoprim"
    r"|nitrofurantoin|metronidazole|allopurinol|colchicine|gabapentin|pregabalin|sertraline"
    r"|fluoxetine|citalopram|paroxetine|venlafaxine|mirtazapine|diazepam|lorazepam"
    r"|melatonin|cetirizine|loratadine|salbutamol|albuterol|furosemide|spironolactone"
    r"|amlodipine|lisinopril|ramipril|bisoprolol|atenolol|propranolol|simvastatin"
    r"|atorvastatin|omeprazole|lansoprazole|ranitidine|loperamide|isotretinoin|valproate"
    r"|carbamazepine|levetiracetam|lamotrigine|phenytoin|tamoxifen|sildenafil|nitrates?"
    r"|nitroglycerin|ginkgo|st\.?\s+john'?s\s+wort|ivermectin|hydroxychloroquine|iron"
    r"|calcium|magnesium|potassium|zinc|vitamin\s+[a-k]\d*|fish\s+oil|cannabis(?:\s+oil)?"
    r"|cbd|rifampicin|fluconazole|clarithromycin|erythromycin|azathioprine|tamsulosin"
    r"|finasteride|amiodarone|semaglutide|tirzepatide|ozempic|sumatriptan|ergotamine"
    r"|domperidone|ondansetron|epinephrine|adrenaline|naloxone|benadryl|tylenol|advil"
    r"|nurofen|calpol|motrin|aleve|xanax|valium|zoloft|prozac"
)
#: A medicine, supplement or vaccine, named or generic.
MEDICINE = rf"(?:{_GENERIC}|{_NAMES}|{_STEMS})"

#: What a medicine is taken with that can change its effect.
COMBINABLE = rf"(?:{MEDICINE}|alcohol|grapefruit(?:\s+juice)?|tea|coffee|milk|dairy|food|juice)"

#: People for whom the same statement carries more risk: a claim that something is safe for
#: them is high severity.
POPULATION = (
    r"(?:pregnan\w*|expecting\s+mothers?|breast-?\s?feed\w*|nursing\s+mothers?|lactat\w*"
    r"|childbearing|newborns?|neonates?|bab(?:y|ies)|infants?|toddlers?|child(?:ren)?|kids?"
    r"|teen(?:ager)?s?|adolescents?|paediatric|pediatric|under\s+(?:\w+|\d+)\s*(?:years?|months?)?"
    r"|elderly|older\s+(?:adults?|people|patients?|persons?)|over\s+(?:65|sixty-five|70|75|80)"
    r"|the\s+old|seniors?|(?:kidney|renal|liver|hepatic|heart|cardiac)\s+(?:disease|problems?"
    r"|failure|impairment|function|damage)|(?:poor|reduced|impaired)\s+(?:kidney|renal|liver)"
    r"|cirrhosis|dialysis|frail)"
)

#: Diseases, symptoms and outcomes an efficacy claim is about.
CONDITION = (
    r"(?:\w+itis|\w+osis|\w+(?:a)?emia|\w+pathy|\w+algia|\w+oma|pain|aches?|headaches?"
    r"|migraines?|colds?|flu|influenza|fever|cough|infections?|insomnia|sleep|anxiety"
    r"|depression|asthma|wheez\w*|diabetes|cancers?|tumou?rs?|symptoms?|blood\s+(?:pressure"
    r"|sugar)|cholesterol|eczema|psoriasis|acne|cramps?|nausea|sickness|vomiting|clots?"
    r"|thrombosis|diarrho?ea|constipation|heart\s+(?:attacks?|disease|failure)|strokes?"
    r"|dementia|alzheimer'?s|memory|weight|obesity|ulcers?|reflux|heartburn|allergies"
    r"|hay\s+fever|rash|itch\w*|wounds?|scars?|fractures?|osteoporosis|mortality|deaths?"
    r"|survival|relapse|recurrence|progression|outcomes?|hospitali[sz]ations?|admissions"
    r"|risk|covid(?:-19)?|viruses?|bacteria|sore\s+throats?|colic|teething|jet\s+lag|mood"
    r"|stress|fatigue|tiredness|immunity|infertility|erectile\s+dysfunction|seizures?"
    r"|epilepsy|angina|arrhythmias?|palpitations|gout|arthritis|back\s+pain|disease"
    r"|conditions?|illness(?:es)?|disorders?|syndromes?|(?:kidney|renal|liver|heart)\s+failure"
    r"|decline|bleeding|injur(?:y|ies))"
)

#: Pointing the reader to a clinician: a sentence that does this is advice to ask, not a claim.
REFERRAL = (
    r"(?:without\s+(?:first\s+)?(?:talking|speaking|checking|asking|consulting|discussing)"
    r"|(?:ask|talk\s+to|speak\s+to|check\s+with|consult|tell)\s+(?:your|a|the)\s+(?:doctor"
    r"|pharmacist|gp|clinician|prescriber|nurse|midwife|healthcare)"
    r"|only\s+(?:a|your)\s+(?:doctor|pharmacist|clinician|prescriber)"
    r"|(?:doctor|pharmacist|clinician|prescriber)\s+(?:can|will|should|must)\s+(?:decide|tell"
    r"|check|explain|advise))"
)
