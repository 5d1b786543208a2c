"""The one run-log format of medgate's evaluations.

A run is one JSONL file with a record per item, appended as each item finishes, and a manifest
beside it (the same name, ``.json``) that says exactly what the run is: the spec whose digest
names the file. An interrupted run resumes where it stopped (an item already in the file is not
run again; a line cut short by the interruption is run again), and every headline number can be
recomputed from the committed per-item records. The HRS recordings
(:class:`medgate.eval.runner.TrajectoryStore`) and the gate evaluations
(:mod:`medgate.eval.gate_run`) are run logs, and so are the claims layer's labelled-sentence
predictions (:func:`medgate.claims.evaluation.write_labelled_log`); so is any new evaluation.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel

from medgate.errors import ConfigError
from medgate.records import Record

Item = TypeVar("Item", bound=BaseModel)


def spec_key(spec: Record) -> str:
    """A short digest of everything in ``spec``, which names the run's files."""
    text = json.dumps(spec.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class RunLog(Generic[Item]):
    """One run: per-item records of type ``item_type`` (each with an ``item_id``) in ``path``,
    its ``spec`` beside it."""

    def __init__(self, path: Path, item_type: type[Item], spec: Record) -> None:
        self.path = path
        self.item_type = item_type
        self.spec = spec
        self.manifest = path.with_suffix(".json")
        path.parent.mkdir(parents=True, exist_ok=True)
        if not self.manifest.is_file():
            self.manifest.write_text(spec.model_dump_json(indent=2))

    def load(self) -> dict[str, Item]:
        """Every complete record, by item id (a later record of an item wins)."""
        out: dict[str, Item] = {}
        if not self.path.is_file():
            return out
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    try:
                        item = self.item_type.model_validate_json(line)
                    except ValueError:
                        continue  # a line cut short by an interrupted write is run again
                    out[str(getattr(item, "item_id"))] = item  # noqa: B009 - any record type
        return out

    def append(self, item: Item) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(item.model_dump_json() + "\n")


def matching_log(path: Path, item_type: type[Item], spec: Record) -> RunLog[Item]:
    """The run log at ``path``; refuses to resume one recorded under other settings (its
    manifest holds another ``spec``), naming the fields that differ, rather than mix the two."""
    manifest = path.with_suffix(".json")
    if manifest.is_file():
        kind = type(spec)
        recorded = kind.model_validate_json(manifest.read_text(encoding="utf-8"))
        if recorded != spec:
            changed = sorted(
                k for k in kind.model_fields if getattr(recorded, k) != getattr(spec, k)
            )
            raise ConfigError(
                f"{path} was recorded under other settings ({', '.join(changed)} differ); "
                "give another --runs folder, or remove that log to record it again"
            )
    return RunLog(path, item_type, spec)
