"""``medgate eval claims``: run the claims evaluations and write ``docs/results/claims_*``.

Three reports, each a JSON record and a Markdown table with the command and the date that
produced it:

- ``claims_labelled``: the uncited-claim flag of the rules, the learned classifier and both, on
  the held-out part of the labelled sentences (and, for reference, on the training part the
  rules and the classifier were developed on); its per-sentence predictions are the run log
  ``claims_labelled_items.jsonl`` (manifest beside it), from which
  :func:`medgate.claims.evaluation.recompute_labelled` recomputes every figure;
- ``claims_halueval``: flags against HaluEval 2.0 biomedical fact labels, beside the figures of
  the rules before this detector (``claims_halueval_7b1fe23.json``);
- ``claims_support``: the lexical support judge on labelled claim/source pairs.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medgate.claims.detection import ClaimDetector
from medgate.claims.evaluation import (
    PRF,
    HaluEvalResult,
    LabelledResult,
    SupportResult,
    SystemScores,
    evaluate_halueval,
    evaluate_labelled,
    evaluate_support,
    read_jsonl,
    write_labelled_log,
)
from medgate.claims.learned import LearnedClaimDetector, load_sentences
from medgate.claims.support import load_support_pairs

PRF_HEAD = "| | TP | FP | FN | precision | recall | F1 |\n|---|---|---|---|---|---|---|"
#: The HaluEval figures of the rule set before medication changes, interactions, safety and
#: statistics in words were added (``medgate`` at commit 7b1fe23, scripts/eval_claims.py).
BEFORE_FILE = "claims_halueval_7b1fe23.json"
#: The per-sentence predictions of the labelled-sentence run, in the run-log format.
LABELLED_LOG = "claims_labelled_items.jsonl"


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def interval(ci: tuple[float, float] | None) -> str:
    return "n/a" if ci is None else f"{ci[0]:.2f}-{ci[1]:.2f}"


def prf_row(name: str, m: PRF) -> str:
    scores = f"{fmt(m.precision)} | {fmt(m.recall)} | {fmt(m.f1)}"
    return f"| {name} | {m.tp} | {m.fp} | {m.fn} | {scores} |"


def _write(out: Path, name: str, markdown: str, record: dict[str, Any]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / f"{name}.json", out / f"{name}.md"
    json_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    md_path.write_text(markdown.rstrip() + "\n", encoding="utf-8")
    return [json_path, md_path]


def _system_rows(scores: dict[str, SystemScores]) -> str:
    lines = [
        "| system | uncited claims flagged (recall, 95% CI) | precision | wrongly flagged "
        "(rate, 95% CI) | non-claims flagged | cited claims flagged | high severity right |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in scores.items():
        lines.append(
            f"| {name} | {s.flag.tp} of {s.must_flag} ({fmt(s.flag.recall)}, "
            f"{interval(s.recall_interval)}) | {fmt(s.flag.precision)} | {s.false_flags} of "
            f"{s.should_not_flag} ({fmt(s.false_flag_rate)}, {interval(s.false_flag_interval)}) "
            f"| {s.non_claims_flagged} | {s.cited_flagged} | {s.high_severity_right} of "
            f"{s.high_severity} ({fmt(s.high_severity_share)}) |"
        )
    return "\n".join(lines)


def labelled_markdown(r: LabelledResult, command: str, date: str) -> str:
    held = r.splits["heldout"]
    both = held.get("both", held["rules"])
    groups = "\n".join(
        f"| {g} | " + " | ".join(held[s].recall_by_group.get(g, "-") for s in held) + " |"
        for g in sorted({g for s in held.values() for g in s.recall_by_group})
    )
    group_head = "| group | " + " | ".join(held) + " |\n|---|" + "---|" * len(held)
    missed = "\n".join(f"- {m}" for m in both.missed) or "- none"
    false = "\n".join(f"- {m}" for m in both.false) or "- none"
    return f"""# Claim detection on the labelled sentences

Command: `{command}` ({date})

Data: `src/medgate/claims/data/{r.data_file}` (sha256 `{r.data_sha256[:16]}...`),
{sum(s.n for s in (r.splits["heldout"]["rules"], r.splits["train"]["rules"]))} sentences written
for medgate and labelled (claim type, severity, cited or not) before any detector ran on them.
They cover doses and amounts in words, medication changes, interactions, contraindications and
special populations, safety assurances, statistics in words, side effects, approvals, study and
efficacy claims, cited sentences (numeric, author-year, DOI, PMID, NCT) and non-claims written
to look like claims. A seeded hash of each id put 30% in a held-out part; the rules and the
classifier were developed on the training part only, and the held-out part is reported here
once. The same person wrote the sentences and the rules, so these figures are optimistic for
text from other writers or models.

Learned detector: {r.detector} (threshold {fmt(r.detector_threshold)} on P(claim)).

## Held-out part

The flag is the uncited-claim flag; "wrongly flagged" counts non-claims and cited claims that
got it. "High severity right" counts claims labelled high that were reported high (a claim
not detected counts as wrong). "learned" is the classifier alone on every sentence; "both"
is what medgate runs: the rules, and the classifier for sentences no rule matched.

{_system_rows(held)}

Targets of the issue: recall >= 0.90, wrongly flagged <= 5%, high severity right >= 80%.

### Uncited claims flagged, by what the sentence was written to test

{group_head}
{groups}

### Uncited claims both missed

{missed}

### Sentences both flagged wrongly

{false}

## Training part (developed on: not an estimate of anything)

{_system_rows(r.splits["train"])}
"""


def halueval_markdown(
    r: HaluEvalResult, before: HaluEvalResult | None, command: str, date: str, detector: str
) -> str:
    ci = r.precision_interval
    by_type = "\n".join(
        f"| {kind} | {c.get('flagged', 0)} | {c.get('with_false_fact', 0)} |"
        for kind, c in r.by_type.items()
    )
    rows = [prf_row(f"now ({detector})", r.sentence_level)]
    answer_rows = [prf_row(f"now ({detector})", r.answer_level)]
    if before is not None:
        rows.insert(0, prf_row("before (rules at 7b1fe23)", before.sentence_level))
        answer_rows.insert(0, prf_row("before (rules at 7b1fe23)", before.answer_level))
    newline = "\n"
    return f"""# Claims flags vs HaluEval 2.0 biomedical fact labels

Command: `{command}` ({date})

Data: `halueval2_biomed/halueval2_biomed.jsonl` ({r.answers} answers, {r.sentences} sentences).
Each answer comes with model-extracted facts labelled true/false by annotators; each fact is
attributed to the answer sentence sharing the largest share of its content words (at least
0.3); {r.facts_unmatched} of {r.facts_labelled} labelled facts matched no sentence. A sentence
is *false* when it holds a false fact, *flagged* when it gets an uncited-claim flag (these
answers cite nothing). "Before" is the rule set of commit 7b1fe23, read from
`docs/results/{BEFORE_FILE}`; "now" is medgate's detector as configured.

## Sentence level ({r.sentences_with_facts} sentences that hold a labelled fact)

Base rate: {r.false_sentences} of {r.sentences_with_facts} ({r.base_rate:.3f}) hold a false fact.

{PRF_HEAD}
{newline.join(rows)}

95% Wilson interval of today's precision: {interval(ci)} (base rate {r.base_rate:.3f}).

## Answer level (any flag vs answer labelled hallucinated; base rate {r.answer_base_rate:.3f})

{PRF_HEAD}
{newline.join(answer_rows)}

Across all sentences, {r.flagged_share_all_sentences:.3f} are flagged now.

## Flagged sentences by claim type (now)

| claim type | flagged | hold a false fact |
|---|---|---|
{by_type}

## What these numbers mean

An uncited-claim detector is not a hallucination detector. It fires on sentences that make a
medical claim a reader would need a source for (doses, medication changes, interactions,
safety, statistics, study findings) and says nothing about whether the sentence is true. Most
false facts in this set are definitions, synonyms, gene and tool descriptions, which are not
claims of those kinds, so recall against false facts stays low by construction; and with
{r.answer_base_rate:.0%} of answers labelled hallucinated, flagging any claim-bearing answer
is "right" at the answer level almost by default. Precision near the base rate says the flags
do not single out false sentences, which they were not built to do. The detector was not tuned
on this data; whether a cited claim is true is the job of citation verification, which this set
cannot exercise because its answers cite nothing.
"""


def support_markdown(r: SupportResult, command: str, date: str) -> str:
    c = r.calibration
    return f"""# Lexical support judge on labelled claim/source pairs

Command: `{command}` ({date})

Data: `src/medgate/claims/data/support_pairs.jsonl`, {r.n} pairs of a claim and a source
abstract written for medgate ({r.supported} supported). Unsupported claims change a number, the
population, the drug, or the direction of the finding.

At the shipped threshold {r.default_threshold}:

{PRF_HEAD}
{prf_row("judged supported vs supported", r.at_default)}

Best threshold on all pairs (max F1, ties to the stricter): {c.threshold:.3f}
(precision {c.precision:.3f}, recall {c.recall:.3f}, F1 {c.f1:.3f}). Leave-one-out accuracy,
each pair judged with a threshold calibrated on the other {r.n - 1}: {r.leave_one_out_accuracy:.3f}.

Word overlap cannot see negation or reversed direction ("did not prolong" vs "prolongs"), which is
where its false positives come from; the model judge (`--judge model`) is the tool for those.
"""


def detector_description(detector: ClaimDetector | None) -> tuple[str, float | None]:
    if isinstance(detector, LearnedClaimDetector):
        p = detector.artifact.provenance
        return (
            f"{detector.name}, fitted {p.created} on {len(p.train_ids)} training sentences "
            f"(data sha256 {p.data_sha256[:12]}..., seed {p.seed}, C {p.regularisation_c}; "
            f"out-of-fold recall {p.cv_recall:.3f} at {p.cv_false_positive_rate:.3f} of "
            "non-claims flagged)",
            detector.artifact.threshold,
        )
    return ("none (rules only)", None)


def run_claims_evaluation(
    detector: ClaimDetector | None, data_dir: Path, out: Path, command: str
) -> dict[str, Any]:
    """Run all three, write the reports into ``out``, return the headline figures."""
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    info, threshold = detector_description(detector)
    labelled = evaluate_labelled(
        load_sentences(), detector, detector_info=info, detector_threshold=threshold
    )
    log = write_labelled_log(labelled, out / LABELLED_LOG)
    paths = [log.path, log.manifest]
    paths += _write(
        out,
        "claims_labelled",
        labelled_markdown(labelled, command, date),
        {
            "command": command,
            "date": date,
            "items_log": LABELLED_LOG,
            **labelled.model_dump(mode="json", exclude={"items"}),
        },
    )
    halueval = evaluate_halueval(
        read_jsonl(data_dir / "halueval2_biomed" / "halueval2_biomed.jsonl"), detector
    )
    before_path = out / BEFORE_FILE
    before = (
        HaluEvalResult.model_validate_json(before_path.read_text(encoding="utf-8"))
        if before_path.is_file()
        else None
    )
    name = "rules+learned" if detector is not None else "rules"
    paths += _write(
        out,
        "claims_halueval",
        halueval_markdown(halueval, before, command, date, name),
        {"command": command, "date": date, **halueval.model_dump(mode="json")},
    )
    support = evaluate_support(load_support_pairs())
    paths += _write(
        out,
        "claims_support",
        support_markdown(support, command, date),
        {"command": command, "date": date, **support.model_dump(mode="json")},
    )
    return {
        "labelled": labelled.splits["heldout"],
        "halueval": halueval,
        "halueval_before": before,
        "support": support,
        "paths": paths,
    }
