"""Evaluate the claims layer and write docs/results/claims_*.{md,json}.

    PYTHONPATH=src MEDGATE_DATA_DIR=/path/to/shared/data python scripts/eval_claims.py all

Subcommands: ``halueval`` (flags vs HaluEval 2.0 biomedical fact labels), ``labelled`` (the
labelled sentence set shipped in medgate/claims/data), ``support`` (the lexical support judge on
labelled claim/source pairs), ``all``. Everything is deterministic and runs in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from medgate.claims.evaluation import (
    PRF,
    HaluEvalResult,
    LabelledResult,
    SupportResult,
    evaluate_halueval,
    evaluate_labelled,
    evaluate_support,
    load_labelled,
    read_jsonl,
)
from medgate.claims.support import load_support_pairs
from medgate.config import load_config

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "results"
COMMAND = "PYTHONPATH=src MEDGATE_DATA_DIR=../shared/data python scripts/eval_claims.py"


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def prf_row(name: str, m: PRF) -> str:
    scores = f"{fmt(m.precision)} | {fmt(m.recall)} | {fmt(m.f1)}"
    return f"| {name} | {m.tp} | {m.fp} | {m.fn} | {scores} |"


PRF_HEAD = "| | TP | FP | FN | precision | recall | F1 |\n|---|---|---|---|---|---|---|"


def write(
    name: str, markdown: str, record: HaluEvalResult | LabelledResult | SupportResult
) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.md").write_text(markdown, encoding="utf-8")
    (OUT / f"{name}.json").write_text(
        json.dumps(record.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8"
    )
    print(f"wrote {OUT / name}.md and .json")


def halueval(data_dir: Path) -> None:
    path = data_dir / "halueval2_biomed" / "halueval2_biomed.jsonl"
    r = evaluate_halueval(read_jsonl(path))
    by_type = "\n".join(
        f"| {kind} | {c.get('flagged', 0)} | {c.get('with_false_fact', 0)} |"
        for kind, c in r.by_type.items()
    )
    ci = r.precision_interval
    interval = f"{ci[0]:.3f} to {ci[1]:.3f}" if ci else "n/a"
    if ci is None:
        verdict = "Nothing was flagged, so precision is undefined."
    elif ci[0] > r.base_rate:
        verdict = (
            f"The interval lies above the base rate ({r.base_rate:.3f}): flagged sentences are "
            "more often false than sentences in general."
        )
    else:
        verdict = (
            f"The interval includes the base rate ({r.base_rate:.3f}): on this data the flags do "
            "not pick out false sentences better than chance."
        )
    md = f"""# Claims flags vs HaluEval 2.0 biomedical fact labels

Command: `{COMMAND} halueval`

Data: `halueval2_biomed/halueval2_biomed.jsonl` ({r.answers} answers, {r.sentences} sentences
after splitting). Each answer comes with model-extracted facts labelled true/false by annotators.
The facts paraphrase the answer, so each fact is attributed to the answer sentence sharing the
largest share of its content words (at least 0.3); {r.facts_unmatched} of {r.facts_labelled}
labelled facts matched no sentence and {r.facts_unlabelled} facts had no label. A sentence is
*false* when it holds at least one false fact. A sentence is *flagged* when the claims layer
raises an uncited-claim flag on it (none of these answers cites anything, so every detected
claim is uncited).

The detector's output on these answers was read during development, and two pattern bugs found
that way were fixed ("NNT" inside a tool name taken for a statistic; "studies have consistently
demonstrated" missed); the patterns were not otherwise tuned to this data.

## Sentence level (the {r.sentences_with_facts} sentences that hold a labelled fact)

Base rate: {r.false_sentences} of {r.sentences_with_facts} ({r.base_rate:.3f}) hold a false fact;
{r.flagged_sentences} are flagged. Precision above the base rate means flags concentrate on false
facts; recall is the share of false sentences flagged.

{PRF_HEAD}
{prf_row("flag vs false sentence", r.sentence_level)}

95% Wilson interval of that precision: {interval}. {verdict}

## Fact level and answer level

{PRF_HEAD}
{prf_row("fact's sentence flagged vs false fact", r.fact_level)}
{prf_row("answer has a flag vs answer hallucinated", r.answer_level)}

Base rates: {r.fact_base_rate:.3f} of matched labelled facts are false; {r.answer_base_rate:.3f} of
answers are labelled hallucinated.

Across all sentences, {r.flagged_share_all_sentences:.3f} are flagged.

## Flagged sentences by claim type

| claim type | flagged | hold a false fact |
|---|---|---|
{by_type}

## Reading

The flags are a citation check, not a fact check: they fire on sentences phrased as medical
claims (study findings, statistics, doses, approvals, side effects) and say nothing about the
many false definitions, synonyms, gene and tool descriptions in this set, which carry no claim
wording. Recall against false facts is therefore low by construction, and a data set where
{r.answer_base_rate:.0%} of answers are hallucinated and {r.base_rate:.0%} of fact-bearing sentences
are false leaves little room for precision above the base rate. What the flags do is make claims
checkable; whether a cited claim is true is the job of citation verification, which this data
set cannot exercise because its answers cite nothing.
"""
    write("claims_halueval", md, r)


def labelled() -> None:
    r = evaluate_labelled(load_labelled())
    rows = "\n".join(prf_row(kind, m) for kind, m in r.per_type.items())
    errors = "\n".join(f"- {e}" for e in r.errors) or "- none"
    md = f"""# Claim detection on the labelled sentence set

Command: `{COMMAND} labelled`

Data: `src/medgate/claims/data/labelled_sentences.jsonl`, {r.n} sentences written for medgate
and labelled with the claim type they make (or none) and whether they carry a citation. Claims
with and without citations of every type, and negatives (definitions, patient descriptions,
lab values, strengths of tablets, look-alike wording such as "approved for the next fiscal year").
The set was written by the same person who wrote the patterns, before its first measurement,
and the patterns were not tuned on it; numbers on sentences written by the pattern author are
optimistic compared with text from other writers or models.

## Per claim type (predicted type = the most dangerous type detected)

{PRF_HEAD}
{rows}

## Overall

{PRF_HEAD}
{prf_row("any claim vs none", r.any_claim)}
{prf_row("uncited-claim flag", r.uncited_flag)}

Citation presence (cited vs uncited) correct on {r.citation_accuracy:.3f} of sentences.

## Sentences got wrong

{errors}
"""
    write("claims_labelled", md, r)


def support() -> None:
    r = evaluate_support(load_support_pairs())
    c = r.calibration
    md = f"""# Lexical support judge on labelled claim/source pairs

Command: `{COMMAND} support`

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
    write("claims_support", md, r)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["halueval", "labelled", "support", "all"])
    parser.add_argument("--data", type=Path, default=None, help="evaluation data directory")
    args = parser.parse_args(argv)
    data_dir = args.data or Path(os.environ.get("MEDGATE_DATA_DIR") or load_config().data_dir)
    if args.what in ("halueval", "all"):
        halueval(data_dir)
    if args.what in ("labelled", "all"):
        labelled()
    if args.what in ("support", "all"):
        support()
    return 0


if __name__ == "__main__":
    sys.exit(main())
