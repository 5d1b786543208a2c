"""Recording a real item with the embedded model, then replaying it from the call cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from medgate.config import load_config
from medgate.eval.cache import CallCache
from medgate.eval.data import load_jsonl, stratified_split
from medgate.eval.runner import build_runtime, record_split
from medgate.records import LabelSet

from .conftest import DATA, MECHANICS_MODEL

pytestmark = pytest.mark.model


def test_record_then_replay_from_cache(tmp_path: Path) -> None:
    data = Path(os.environ["MEDGATE_DATA_DIR"]) if os.environ.get("MEDGATE_DATA_DIR") else DATA
    source = data / "pubmedqa" / "pqal.jsonl"
    if not source.is_file():
        pytest.skip(f"evaluation data not found at {source}")
    rows = [json.loads(line) for line in source.read_text().splitlines()[:10]]
    path = tmp_path / "mini.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    items = load_jsonl(path, LabelSet.YES_NO_MAYBE)
    split = stratified_split(items, 2, None, seed=1)
    # Assembled model files stay in the user's cache; the call cache is the test's own.
    config = load_config(model=MECHANICS_MODEL, hrs={"max_iterations": 1})
    cache = CallCache(tmp_path / "calls.sqlite")
    runtime = build_runtime(config, "mini", split, "test", cache=cache)
    records, summary, _ = record_split(runtime, split.test[:1], tmp_path / "a")
    assert summary.cache_misses > 0 and records[0].trajectory.iterations
    assert records[0].trajectory.stopped is None or records[0].trajectory.stopped.value != "error"
    # A new store (a fresh recording) over the same call cache makes no new model call.
    runtime2 = build_runtime(config, "mini", split, "test", cache=CallCache(cache.path))
    again, summary2, _ = record_split(runtime2, split.test[:1], tmp_path / "b")
    assert summary2.cache_misses == 0 and summary2.cache_hits > 0
    first, second = records[0].trajectory.iterations, again[0].trajectory.iterations
    assert [i.answer for i in second] == [i.answer for i in first]
    assert [i.signals for i in second] == [i.signals for i in first]
