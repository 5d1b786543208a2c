"""Take evaluation data's own text out of committed results, keeping every score and id.

Evaluation data stays in the data directory (``MEDGATE_DATA_DIR``); results point at its rows
by id. Two kinds of committed file held copies, and their writers no longer make them:

* CareGuard run logs (``docs/results/careguard_runs*/*.jsonl``) of a data set not written for
  medgate (MedSafetyBench): the case record held the request as asked, and a few drafts quote
  it whole. Every copy becomes :func:`medgate.careguard.evaluation.withheld`'s pointer, the same
  replacement :func:`medgate.eval.care_run.run_item` now makes when it writes.
* HRS recordings (``docs/results/recordings/*.jsonl.gz``) with retrieved knowledge: every
  injected fact's text was a passage of a training item's context (PubMedQA's abstracts,
  BioASQ's snippets). The text is blanked and the document id kept, as
  :meth:`medgate.eval.runner.TrajectoryStore.save_archive` now archives them.
* The statement self-check's HaluEval readings (``self_check_statements_halueval.jsonl.gz``):
  HaluEval's question, its answer, and the answer's sentences. The question and the answer are
  dropped and each sentence's text blanked; the readings (one P(error) per sentence, in order)
  stay, which is all the report reads.

Usage: ``MEDGATE_DATA_DIR=../shared/data python scripts/withhold_data_text.py`` (idempotent:
a second run changes nothing). Lines with nothing to withhold are left byte for byte.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from medgate.careguard.evaluation import OUR_QUESTIONS, withhold_text
from medgate.config import load_config
from medgate.eval.care_labels import shown_sha256
from medgate.eval.care_run import care_dataset
from medgate.eval.runner import (
    RecordedItem,
    RunSpec,
    archive_manifest,
    archived_form,
    write_archive,
)

RESULTS = Path("docs/results")
HALUEVAL_STATEMENTS = RESULTS / "self_check_statements_halueval.jsonl.gz"
RECORDINGS = RESULTS / "recordings"


def _line(row: dict[str, Any]) -> str:
    # The run log's own serialisation (pydantic's compact JSON), so untouched fields stay as
    # they were written.
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def withhold_run_log(path: Path, questions: dict[str, dict[str, str]]) -> dict[str, str]:
    """Rewrite one CareGuard run log with request text withheld. Returns, for each released
    answer whose shown text changed, its old text's sha256 -> the new one's."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, changed, shown = [], 0, {}
    for line in lines:
        row = json.loads(line)
        text = questions.get(row["dataset"], {}).get(row["id"], "")
        new = withhold_text(row, row["dataset"], row["id"], text)
        if new != row:
            changed += 1
            line = _line(new)
            if new["shown"] != row["shown"]:
                shown[shown_sha256(row["shown"])] = shown_sha256(new["shown"])
        out.append(line)
    if changed:
        path.write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"{path}: {changed} lines changed")
    return shown


def carry_labels(shown: dict[str, str]) -> int:
    """A hand label names the text it judged by sha256; an answer that only lost the request
    it quoted is the answer that was read, so its label is copied to the new text (said in its
    reason). The label of the old text stays: readings made on it still name it. Returns the
    labels copied."""
    copied = 0
    for path in sorted(RESULTS.rglob("careguard_labels.jsonl")):
        rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]
        have = {r["shown_sha256"] for r in rows}
        new = [
            {
                **r,
                "shown_sha256": shown[r["shown_sha256"]],
                "reason": r["reason"] + " (label kept when the request it quotes was withheld)",
            }
            for r in rows
            if r["shown_sha256"] in shown and shown[r["shown_sha256"]] not in have
        ]
        if new:
            with path.open("a", encoding="utf-8") as sink:
                sink.writelines(json.dumps(r) + "\n" for r in new)
        copied += len(new)
    return copied


def withhold_halueval_statements(path: Path = HALUEVAL_STATEMENTS) -> int:
    """Drop HaluEval's text from the statement readings; the rows changed."""
    rows = [json.loads(x) for x in gzip.decompress(path.read_bytes()).decode().splitlines()]
    changed = 0
    for row in rows:
        before = dict(row)
        row.pop("question", None)
        row.pop("draft", None)
        row["statements"] = [["", p] for _, p in row["statements"]]
        changed += row != before
    if changed:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    return changed


def withhold_recording(path: Path) -> int:
    """Rewrite one archived recording in its archived form; the items changed."""
    spec = RunSpec.model_validate_json(archive_manifest(path).read_text(encoding="utf-8"))
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()
    items = [RecordedItem.model_validate_json(x) for x in lines if x.strip()]
    kept = [archived_form(spec, r) for r in items]
    changed = sum(a != b for a, b in zip(items, kept, strict=True))
    if changed:
        write_archive(path, kept)
    return changed


def main() -> None:
    data_dir = load_config().data_dir
    logs = sorted(RESULTS.glob("careguard_runs*/*.jsonl"))
    names = {json.loads(line)["dataset"] for p in logs for line in p.open(encoding="utf-8")}
    questions = {
        name: {i.id: i.question for i in care_dataset(name).load(data_dir, "all")}
        for name in sorted(names - OUR_QUESTIONS)
    }
    shown: dict[str, str] = {}
    for path in logs:
        shown |= withhold_run_log(path, questions)
    print(f"hand labels carried to the withheld text: {carry_labels(shown)}")
    for path in sorted(RECORDINGS.glob("*.jsonl.gz")):
        print(f"{path}: {withhold_recording(path)} items changed")
    if HALUEVAL_STATEMENTS.is_file():
        print(f"{HALUEVAL_STATEMENTS}: {withhold_halueval_statements()} rows changed")


if __name__ == "__main__":
    main()
