"""CareGuard's recorded runs with the statement self-check, replayed at a higher self-check cut.

    python scripts/replay_self_check_cut.py --cut 0.2694
    python scripts/replay_self_check_cut.py --cut 1 --runs docs/results/careguard_runs_v5 \
        --logs '*-with_self_check.jsonl' \
        --labels docs/results/careguard_v5/careguard_labels.jsonl \
        --labels docs/results/careguard_v5/draft_labels.jsonl --name self_check_off_v5

A run recorded with the ``self_check`` judge at cut ``c0`` holds every round's draft and every
judge's assessment (the self-check's P(error) among them). At a cut ``c >= c0`` the gate would
have released the first round that every other check passed and whose P(error) is below ``c``,
provided every round before it was held back at both cuts with the same feedback. A round that
other checks held back and the self-check held back only at ``c0`` (``c0 <= P(error) < c``) fed
the self-check's correction into the next draft, which the gate at ``c`` would not have written:
such a request is counted as not replayable, never guessed. When no round qualifies, the
recorded outcome stands (nothing passed at ``c0`` either).
At cut 1 the self-check never holds a draft back: the replay is the gate without it, for the
requests it can replay.
Each replayed answer is graded by the hand label of its exact text (any label file given; a text
without one is counted as unlabelled, never guessed).

With ``--first-drafts`` it replays nothing: every request of the logs that reached the judges has
a first draft, and the run recorded what each judge made of it (the self-check's P(error), the
HRA judge's own score, HRA's score). Each first draft is graded by the hand label of its exact
text, and each reading's AUROC for a draft labelled wrong or degenerate is reported with a
bootstrap 95% interval. Nothing is chosen there.

    python scripts/replay_self_check_cut.py --first-drafts --runs docs/results/careguard_runs_v5 \
        --logs 'general-questions-heldout-*-with_self_check.jsonl' \
        --labels docs/results/careguard_v5/careguard_labels.jsonl \
        --labels docs/results/careguard_v5/draft_labels.jsonl --name first_draft_checks_v5

Writes ``docs/results/NAME.md`` and ``.json`` (``--name``, default ``self_check_cut_replay``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medgate.careguard.hra_fit import auroc_with_ci
from medgate.eval.care_labels import HandLabel, load_labels, shown_sha256
from medgate.records import Status

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
RUNS = RESULTS / "careguard_runs_statements"
LABEL_FILES = (
    RESULTS / "careguard_labels.jsonl",
    RESULTS / "careguard_statements" / "careguard_labels.jsonl",
    RESULTS / "careguard_self_check" / "careguard_labels.jsonl",
)
SELF_CHECK = "self_check"
#: The outcome of a request the recorded rounds cannot replay (see :func:`replay`).
INEXACT = "not replayable"


def shown_path(path: Path) -> Path:
    """``path`` relative to the repository when it is inside it."""
    root = RESULTS.parent.parent
    resolved = path.resolve()
    return resolved.relative_to(root) if resolved.is_relative_to(root) else path


def labels_by_text(files: tuple[Path, ...]) -> dict[tuple[str, str], HandLabel]:
    """Every label by (request id, sha256 of the text it judged), whichever run it came from:
    the same text for the same request is the same answer."""
    missing = [str(path) for path in files if not path.is_file()]
    if missing:
        raise SystemExit(f"no label file {', '.join(missing)}")
    return {(i, sha): label for path in files for (_, i, sha), label in load_labels(path).items()}


def answers(status: str) -> bool:
    """The outcome shows the user an answer (released or refined)."""
    return Status(status).answers_user


def recorded(row: dict[str, Any]) -> tuple[str, str | None]:
    """The request's recorded outcome and, when it answered, its shown text."""
    return (row["status"], row["shown"] if answers(row["status"]) else None)


def passes_but_self_check(round_: dict[str, Any], threshold: int = 2) -> bool:
    """The round passes every check the gate applies apart from the self-check."""
    claims = round_.get("claims") or {}
    if round_.get("release_findings") or claims.get("blocking") or claims.get("errors"):
        return False
    for name, assessment in round_["assessments"].items():
        if name == SELF_CHECK:
            continue
        if assessment.get("error"):
            return False
        if name == "sra" and round_.get("waiver"):
            if assessment.get("rule_findings"):
                return False
            continue
        if assessment["score"] > threshold:
            return False
    return True


def p_error(round_: dict[str, Any]) -> float | None:
    check = round_["assessments"].get(SELF_CHECK)
    if check is None or check.get("error"):
        return None
    value = check.get("components", {}).get("p_error")
    return float(value) if value is not None else None


def replay(row: dict[str, Any], cut: float) -> tuple[str, str | None]:
    """(outcome, shown text) of one recorded request at ``cut``."""
    rounds = row["record"]["verdict"]["trace"]["stages"]["careguard"]["rounds"]
    read = [r for r in rounds if SELF_CHECK in r["assessments"]]
    if not read:
        # Ended before any judge read a draft (fixed guidance, a refusal, the reply screen).
        return recorded(row)
    recorded_cut = float(read[0]["assessments"][SELF_CHECK]["components"]["threshold"])
    if cut < recorded_cut:
        raise SystemExit(f"cut {cut} is below the recorded {recorded_cut}: the replay is not exact")
    for round_ in rounds:
        p = p_error(round_)
        if p is not None and p < cut and passes_but_self_check(round_):
            first = round_["iteration"] == 0
            return ("released" if first else "refined", round_["draft"]["text"])
        if p is not None and recorded_cut <= p < cut:
            # Held back by other checks, and by the self-check only at the recorded cut: its
            # feedback went into the next draft, which the gate at ``cut`` would not have
            # written. What follows is not known.
            return (INEXACT, None)
    return recorded(row)


def _hra(field: str) -> Callable[[dict[str, Any]], Any]:
    return lambda assessments: assessments.get("hra", {}).get(field)


#: The readings compared: the name and how to read it from the first round's assessments.
READINGS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "self_check P(error)": lambda assessments: p_error({"assessments": assessments}),
    "HRA judge's own score": _hra("judge_score"),
    "HRA score": _hra("score"),
}


def first_drafts(logs: list[Path]) -> list[dict[str, Any]]:
    """The first draft of every request that reached the judges, with its readings."""
    out = []
    for log in logs:
        for line in log.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            rounds = row["record"]["verdict"]["trace"]["stages"]["careguard"]["rounds"]
            if not rounds or SELF_CHECK not in rounds[0]["assessments"]:
                continue
            first = rounds[0]
            out.append(
                {
                    "id": row["id"],
                    "run": log.stem,
                    "sha256": shown_sha256(first["draft"]["text"]),
                    "readings": {n: f(first["assessments"]) for n, f in READINGS.items()},
                }
            )
    return out


def first_draft_report(args: argparse.Namespace) -> None:
    """How each recorded reading ranks wrong first drafts (``--first-drafts``)."""
    labels = labels_by_text((*LABEL_FILES, *args.labels))
    logs = sorted(args.runs.glob(args.logs))
    drafts = first_drafts(logs)
    for d in drafts:
        label = labels.get((d["id"], d["sha256"]))
        d["bad"] = None if label is None else label.wrong or label.degenerate
    labelled = [d for d in drafts if d["bad"] is not None]
    y = [bool(d["bad"]) for d in labelled]
    results = {}
    for name in READINGS:
        scored = [(d["readings"][name], b) for d, b in zip(labelled, y, strict=True)]
        scored = [(float(s), b) for s, b in scored if s is not None]
        results[name] = auroc_with_ci([s for s, _ in scored], [b for _, b in scored])
    unlabelled = [d["id"] for d in drafts if d["bad"] is None]
    summary = {
        "logs": [log.name for log in logs],
        "first_drafts": len(drafts),
        "labelled": len(labelled),
        "bad": sum(y),
        "unlabelled": unlabelled,
        "auroc": {n: a.model_dump() for n, a in results.items()},
        "drafts": drafts,
    }
    lines = [
        "# How CareGuard's checks rank wrong first drafts",
        "",
        f"Generated {datetime.now(UTC).date()} by `python scripts/replay_self_check_cut.py "
        f"{' '.join(sys.argv[1:])}` from {', '.join(f'`{log.name}`' for log in logs)}: the "
        "readings each run recorded of its first drafts, graded by hand labels of the exact "
        "texts. AUROC is for a draft labelled wrong or degenerate (95% percentile-bootstrap "
        "interval); below 0.5 ranks right drafts as riskier and is reported as measured.",
        "",
        f"First drafts: {len(drafts)}; labelled: {len(labelled)}, of them wrong or degenerate: "
        f"{sum(y)}; unlabelled: {', '.join(unlabelled) or 'none'}.",
        "",
        "| reading | AUROC, wrong first draft |",
        "|---|---|",
        *(f"| {n} | {a.shown()} |" for n, a in results.items()),
        "",
    ]
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines), encoding="utf-8")
    (RESULTS / f"{args.name}.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cut", type=float, help="The cut to replay at.")
    parser.add_argument(
        "--first-drafts",
        action="store_true",
        help="Instead: each recorded reading's AUROC for a wrong first draft.",
    )
    parser.add_argument("--runs", type=Path, default=RUNS)
    parser.add_argument("--logs", default="*-with_self_check.jsonl", help="Glob in --runs.")
    parser.add_argument("--labels", type=Path, action="append", default=[])
    parser.add_argument("--name", default="self_check_cut_replay")
    args = parser.parse_args()
    if args.first_drafts:
        first_draft_report(args)
        return
    if args.cut is None:
        parser.error("--cut is required (or --first-drafts)")
    labels = labels_by_text((*LABEL_FILES, *args.labels))
    logs = sorted(args.runs.glob(args.logs))
    if not logs:
        raise SystemExit(f"no log matching {args.logs} in {args.runs}")
    items: list[dict[str, Any]] = []
    for log in logs:
        for line in log.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            outcome, text = replay(row, args.cut)
            label = labels.get((row["id"], shown_sha256(text))) if text is not None else None
            items.append(
                {
                    "id": row["id"],
                    "run": log.stem,
                    "recorded": row["status"],
                    "replayed": outcome,
                    "shown_sha256": shown_sha256(text) if text is not None else None,
                    "wrong": None if label is None else label.wrong or label.degenerate,
                    "reason": None if label is None else label.reason,
                }
            )
    replayed = [i for i in items if i["replayed"] != INEXACT]
    answered = [i for i in replayed if i["replayed"] != INEXACT and answers(i["replayed"])]
    labelled = [i for i in answered if i["wrong"] is not None]
    wrong = sum(bool(i["wrong"]) for i in labelled)
    by_run = {}
    for log in logs:
        part = [i for i in items if i["run"] == log.stem]
        said = [i for i in part if i["replayed"] != INEXACT and answers(i["replayed"])]
        by_run[log.stem] = {
            "requests": len(part),
            "not_replayable": sum(i["replayed"] == INEXACT for i in part),
            "answered": len(said),
            "labelled": sum(i["wrong"] is not None for i in said),
            "wrong": sum(bool(i["wrong"]) for i in said),
        }
    summary = {
        "cut": args.cut,
        "by_run": by_run,
        "runs": [log.name for log in logs],
        "requests": len(items),
        "not_replayable": [i["id"] for i in items if i["replayed"] == INEXACT],
        "answered": len(answered),
        "unlabelled": [i["id"] for i in answered if i["wrong"] is None],
        "wrong": wrong,
        "wrong_rate": round(wrong / len(labelled), 3) if labelled else None,
        "items": items,
    }
    lines = [
        f"# The statement self-check at cut {args.cut}, replayed on recorded runs",
        "",
        f"Generated {datetime.now(UTC).date()} by `python scripts/replay_self_check_cut.py "
        f"{' '.join(sys.argv[1:])}` from {', '.join(f'`{log.name}`' for log in logs)} in "
        f"`{shown_path(args.runs)}` (see its NOTES.md), graded by hand "
        "labels of the exact texts. A request is replayed only where the recorded rounds "
        "decide it (the script's docstring says when); the others are counted apart, as not "
        "replayable.",
        "",
        f"Requests: {len(items)}; not replayable: {len(items) - len(replayed)}; of the "
        f"{len(replayed)} replayed, answered (released or refined): {len(answered)} "
        f"({len(answered) / max(len(replayed), 1):.3f}); wrong or degenerate by hand label: "
        f"{wrong} of {len(labelled)} labelled ({summary['wrong_rate']}); unlabelled: "
        f"{', '.join(summary['unlabelled']) or 'none'}.",
        "",
        "| run | requests | not replayable | answered | wrong of labelled |",
        "|---|---|---|---|---|",
        *(
            f"| {name} | {r['requests']} | {r['not_replayable']} | {r['answered']} | "
            f"{r['wrong']} of {r['labelled']} |"
            for name, r in by_run.items()
        ),
        "",
        "| request | recorded | replayed | hand label |",
        "|---|---|---|---|",
        *(
            f"| {i['id']} | {i['recorded']} | {i['replayed']} | "
            f"{'' if i['wrong'] is None else ('WRONG: ' if i['wrong'] else 'ok: ')}"
            f"{(i['reason'] or '').replace('|', '/')} |"
            for i in items
        ),
        "",
    ]
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines), encoding="utf-8")
    (RESULTS / f"{args.name}.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\n".join(lines[:5]))


if __name__ == "__main__":
    main()
