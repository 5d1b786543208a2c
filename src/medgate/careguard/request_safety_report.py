"""The shipped request-safety classifier measured on the parts it was not fitted on.

``medgate eval request-safety`` rebuilds the labelled requests exactly as the fit did, scores the
validation and test parts with the shipped artifact, repeats the leave-one-category-out check
of the design, times the classifier one request at a time as the gate calls it, and writes
``STEM.{json,md}`` and one line per scored request (``STEM_items.jsonl``; the stem is the
artifact's file name, ``request_safety`` for the shipped one),
so every figure can be recomputed from the items.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from pydantic import Field

from medgate.careguard.request_safety import RequestSafetyClassifier, SplitMetrics
from medgate.careguard.request_safety_fit import (
    CategoryRecall,
    Corpus,
    Part,
    leave_one_category_out,
    part_metrics,
)
from medgate.errors import InputError
from medgate.records import Record


class ScoredItem(Record):
    """One request of the validation or test part, scored by the shipped classifier."""

    id: str
    source: str
    part: Part
    category: int | None
    harmful: bool
    score: float
    refused: bool
    question: str = Field(default="", description="Only for requests written for medgate.")


class Latency(Record):
    """Seconds the classifier adds to one request (embedding and scoring, one at a time)."""

    requests: int
    median_s: float
    p95_s: float = Field(description="95th percentile (linear interpolation between requests).")
    max_s: float
    load_average: float | None = Field(
        default=None,
        description="The machine's 1-minute load average while it was timed (other work on "
        "the same cores slows it), the mean of a reading before and after.",
    )


class RequestSafetyReport(Record):
    created: str
    command: str
    artifact: str
    threshold: float
    regularisation_c: float
    heldout_categories: list[int]
    validation: dict[str, SplitMetrics]
    heldout: dict[str, SplitMetrics]
    leave_one_category_out: list[CategoryRecall] = Field(
        default_factory=list,
        description="A check of the design, not of the shipped model: each category in turn "
        "left out of fitting (C as shipped, threshold chosen on validation as shipped).",
    )
    latency: Latency | None = None


def measure_latency(screen: Callable[[str], object], questions: Sequence[str]) -> Latency:
    """Seconds to score each request on its own, as the gate does."""
    if not questions:
        raise InputError("no requests to time")
    before = _load()
    seconds = []
    for question in questions:
        t0 = time.perf_counter()
        screen(question)
        seconds.append(time.perf_counter() - t0)
    ordered = sorted(seconds)
    after = _load()
    return Latency(
        requests=len(ordered),
        median_s=round(statistics.median(ordered), 4),
        # As every medgate report reads its p95 (medgate.careguard.evaluation): numpy's linear
        # interpolation, not the nearest rank.
        p95_s=round(float(np.percentile(ordered, 95)), 4),
        max_s=round(ordered[-1], 4),
        load_average=None if before is None or after is None else round((before + after) / 2, 2),
    )


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # not every platform has one
        return None


def evaluate_shipped(
    classifier: RequestSafetyClassifier,
    corpus: Corpus,
    *,
    command: str,
    latency_requests: int = 200,
    loco: bool = True,
    timed: RequestSafetyClassifier | None = None,
) -> tuple[RequestSafetyReport, list[ScoredItem]]:
    """Score the validation and test parts with ``classifier`` at its threshold; time
    ``timed`` (default ``classifier``), the same classifier with no cache of readings."""
    p = classifier.artifact.provenance
    digests = {f.name: f.sha256 for f in corpus.files}
    changed = [f.name for f in p.data if digests.get(f.name) != f.sha256]
    if changed:
        raise InputError(
            f"the data differ from what the classifier was fitted on ({', '.join(changed)}): "
            "refit it with `medgate fit-request-safety`, or point MEDGATE_DATA_DIR at that data"
        )
    requests = corpus.where(part="validation") + corpus.where(part="test")
    scores = classifier.scores([r.text for r in requests])
    threshold = classifier.threshold
    items = [
        ScoredItem(
            id=r.id,
            source=r.source,
            part=r.part,
            category=r.category,
            harmful=r.harmful,
            score=round(s, 6),
            refused=s >= threshold,
            question=r.text if r.shipped else "",
        )
        for r, s in zip(requests, scores, strict=True)
    ]
    unseen = corpus.heldout_categories

    def metrics(part: Part) -> dict[str, SplitMetrics]:
        chosen = [(r, s) for r, s in zip(requests, scores, strict=True) if r.part == part]
        return part_metrics([r for r, _ in chosen], [s for _, s in chosen], threshold, unseen)

    timed_requests = [r.text for r in corpus.where(part="test")][:latency_requests]
    report = RequestSafetyReport(
        created=datetime.now(UTC).strftime("%Y-%m-%d"),
        command=command,
        artifact=classifier.artifact_name,
        threshold=threshold,
        regularisation_c=p.regularisation_c,
        heldout_categories=unseen,
        validation=metrics("validation"),
        heldout=metrics("test"),
        leave_one_category_out=(
            leave_one_category_out(
                corpus,
                classifier.embedder,
                p.regularisation_c,
                p.max_false_refusal_rate,
                scale=classifier.artifact.ngrams.scale if classifier.artifact.ngrams else None,
                question_budget=p.max_question_false_refusal_rate,
            )
            if loco
            else []
        ),
        latency=(
            measure_latency((timed or classifier).assess, timed_requests)
            if latency_requests
            else None
        ),
    )
    return report, items


#: How each part is named in the Markdown report, in reading order.
LABELS = {
    "medsafetybench-unseen-categories": "MedSafetyBench, categories never seen (recall)",
    "medsafetybench-seen-categories": "MedSafetyBench, held-out rows of seen categories (recall)",
    "patient-questions-harmful": "patient questions, harmful requests (recall)",
    "written-harmful": "harmful requests written for medgate, seen categories (recall)",
    "written-harmful-unseen-categories": "harmful requests written for medgate, categories "
    "never seen (recall)",
    "harmful-questions": "harmful requests worded as questions, held-out rows (recall)",
    "harmful-questions-redteam": "harmful questions, red-team set written blind (recall)",
    **{
        f"harmful-questions-redteam-{n}": f"harmful questions, red-team set {n} written blind "
        "(recall)"
        for n in range(2, 8)
    },
    "harmful-questions-2": "harmful questions written blind to be fitted on, held-out rows "
    "(recall)",
    "harmful-questions-redteam-8": "harmful questions, red-team set 8 written blind, never "
    "fitted on (recall)",
    "clinician-requests-heldout": "clinician-style requests, held-out set (false refusals)",
    "clinician-requests": "clinician-style requests (false refusals)",
    "clinician-requests-lookalike": "benign look-alikes of harmful requests (false refusals)",
    "question-lookalikes": "benign questions on the topics of harmful ones (false refusals)",
    "benign-lookalikes": "benign questions sharing words with harmful ones, written blind "
    "(false refusals)",
    "benign-lookalikes-8": "benign questions sharing words with harmful ones, set 8 written "
    "blind, never fitted on (false refusals)",
    "practice-questions": "questions asking whether an unsafe practice is all right, written "
    "to fit the question screen on (refused; they deserve a direct no)",
    "pubmedqa-l": "PubMedQA PQA-L questions (false refusals)",
    "pubmedqa-a": "PubMedQA PQA-A questions (false refusals)",
    "bioasq": "BioASQ questions (false refusals)",
    "patient-questions": "patient questions, not harmful (false refusals)",
    "benign-questions": "general health questions, never fitted on (false refusals)",
    "general-questions-heldout": "general health questions of the held-out gate sets, never "
    "fitted on (false refusals)",
    "general-questions-heldout-18": "general health questions, set 18 written blind, never "
    "fitted on (false refusals)",
    "answerable-risky": "answerable risky questions, never fitted on (false refusals)",
    "dangerous-practices": "dangerous-practice questions (refused; they deserve a direct no)",
    "dangerous-practices-heldout": "more dangerous-practice questions, never fitted on (refused)",
    "dangerous-practices-heldout-2": "a third set of dangerous-practice questions, never fitted "
    "on (refused)",
}


def _label(key: str) -> str:
    if key.startswith("medsafetybench-category-"):
        return f"MedSafetyBench category {key.rsplit('-', 1)[1]}, never seen (recall)"
    return LABELS.get(key, key)


def _table(parts: dict[str, SplitMetrics]) -> list[str]:
    lines = ["| part | n | refused | share |", "|---|---:|---:|---:|"]
    order = [k for k in LABELS if k in parts] + sorted(k for k in parts if k not in LABELS)
    for key in order:
        m = parts[key]
        rate = "n/a" if m.rate is None else f"{m.rate:.3f}"
        lines.append(f"| {_label(key)} | {m.n} | {m.refused} | {rate} |")
    return lines


def _held_out(report: RequestSafetyReport) -> str:
    if report.heldout_categories:
        return str(report.heldout_categories)
    return (
        "none (every category is fitted on its train rows; recall on a kind of harm never "
        "seen is the leave-one-category-out table below)"
    )


def markdown(report: RequestSafetyReport, stem: str = "request_safety") -> str:
    lines = [
        "# The request-safety classifier on data it was not fitted on",
        "",
        f"Command: `{report.command}` ({report.created}). Artifact: `{report.artifact}`, "
        f"threshold {report.threshold:.4f}, C {report.regularisation_c:g}. MedSafetyBench "
        f"categories kept out of fitting and choosing: {_held_out(report)}. Every "
        f"figure is recomputed from `{stem}_items.jsonl` (one line per scored request).",
        "",
        "## Test (scored once with the shipped classifier)",
        "",
        *_table(report.heldout),
        "",
        "## Validation (the threshold and C were chosen here)",
        "",
        *_table(report.validation),
    ]
    if report.leave_one_category_out:
        recalls = [c.recall for c in report.leave_one_category_out]
        lines += [
            "",
            "## Leave one category out (a check of the design, not the shipped model)",
            "",
            "Each MedSafetyBench category in turn is left out of fitting; its rows are scored "
            "at a threshold chosen on the benign validation part as for the shipped model.",
            "",
            "| category | n | recall | threshold |",
            "|---:|---:|---:|---:|",
            *[
                f"| {c.category} | {c.n} | {c.recall:.3f} | {c.threshold:.4f} |"
                for c in report.leave_one_category_out
            ],
            "",
            f"Mean recall {statistics.fmean(recalls):.3f}, lowest {min(recalls):.3f}.",
        ]
    if report.latency is not None:
        lat = report.latency
        lines += [
            "",
            "## Added time per request",
            "",
            f"{lat.requests} test requests scored one at a time (embedding and scoring, one "
            f"thread): median {lat.median_s * 1000:.1f} ms, p95 {lat.p95_s * 1000:.1f} ms, "
            f"max {lat.max_s * 1000:.1f} ms"
            + (
                f" (1-minute load average {lat.load_average:.1f} on this machine's cores "
                "while it was timed)."
                if lat.load_average is not None
                else "."
            ),
        ]
    return "\n".join(lines) + "\n"


def write_report(
    report: RequestSafetyReport,
    items: Sequence[ScoredItem],
    out: Path,
    stem: str = "request_safety",
) -> list[Path]:
    """``stem``.json, .md and _items.jsonl under ``out`` (the stem is the artifact's name)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.json", out / f"{stem}.md", out / f"{stem}_items.jsonl"]
    paths[0].write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    paths[1].write_text(markdown(report, stem), encoding="utf-8")
    paths[2].write_text(
        "".join(json.dumps(i.model_dump(mode="json")) + "\n" for i in items), encoding="utf-8"
    )
    return paths
