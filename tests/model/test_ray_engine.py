"""The Ray engine records, with the real embedded model in two actors, exactly the trajectories
the local engine records in this process."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from medgate.config import load_config
from medgate.eval.cache import CallCache
from medgate.eval.data import load_jsonl, stratified_split
from medgate.eval.engines import RayEngine
from medgate.eval.runner import RecordedItem, build_runtime, record_split
from medgate.records import LabelSet

from .conftest import DATA, MECHANICS_MODEL

pytestmark = pytest.mark.model

#: Wall-clock fields, which differ between any two runs.
TIMES = {"timings", "seconds", "wall_seconds", "model_seconds", "recorded_at"}


def _without_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def _recorded(rec: RecordedItem) -> Any:
    out = _without_times(rec.model_dump(mode="json"))
    # Hits and misses depend on which calls an earlier item of the same worker made.
    out.pop("cache_hits"), out.pop("cache_misses")
    return out


def test_ray_engine_records_what_the_local_engine_records(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    data = Path(os.environ["MEDGATE_DATA_DIR"]) if os.environ.get("MEDGATE_DATA_DIR") else DATA
    source = data / "pubmedqa" / "pqal.jsonl"
    if not source.is_file():
        pytest.skip(f"evaluation data not found at {source}")
    rows = [json.loads(line) for line in source.read_text().splitlines()[:12]]
    path = tmp_path / "mini.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    split = stratified_split(load_jsonl(path, LabelSet.YES_NO_MAYBE), 2, None, seed=1)
    items = split.test[:2]
    # One knowledge round for every item, so a retrieval round is compared too; one thread, as
    # each actor has. Model files stay in the user's cache; the call caches are the test's own
    # and separate, so both engines really call the model.
    config = load_config(model=MECHANICS_MODEL, hrs={"max_iterations": 1}, backend={"n_threads": 1})

    def runtime(cache: str) -> Any:
        return build_runtime(
            config, "mini", split, "test", rounds="all", cache=CallCache(tmp_path / cache)
        )

    local, _, _ = record_split(runtime("local.sqlite"), items, tmp_path / "local")
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024 * 1024)
    try:
        remote, summary, store = record_split(
            runtime("ray.sqlite"), items, tmp_path / "ray", engine=RayEngine()
        )
    finally:
        ray.shutdown()
    assert summary.engine == "ray" and summary.workers == 2 and summary.recorded == 2
    assert summary.cache_misses > 0  # the actors called the model, not the local run's cache
    assert [r.item_id for r in remote] == [i.id for i in items]
    assert any(len(r.trajectory.iterations) == 2 for r in remote)
    for a, b in zip(local, remote, strict=True):
        assert _recorded(b) == _recorded(a)
    # The driver wrote every item to the store, and a run over it records nothing again.
    assert set(store.load()) == {i.id for i in items}
