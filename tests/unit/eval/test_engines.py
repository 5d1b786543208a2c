"""Recording engines without a model: the Ray driver loop against a stand-in for Ray, the error
when Ray is missing, the actors' configurations, and the shared call cache under several
writing processes."""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from medgate.config import load_config
from medgate.errors import ConfigError, PrerequisiteError, RecordingError
from medgate.eval import engines
from medgate.eval.cache import CallCache
from medgate.eval.data import EvalItem, stratified_split
from medgate.eval.engines import LocalEngine, RayEngine, Returned, make_engine, worker_configs
from medgate.eval.runner import ItemFailure, RecordedItem, build_runtime, record_split
from medgate.records import LabelSet

from .helpers import recorded


def _items(n: int) -> list[EvalItem]:
    return [
        EvalItem(
            id=f"i{k}",
            question=f"Is treatment {k} effective?",
            context=f"Context {k}.",
            gold="yes" if k % 2 == 0 else "no",
            labels=LabelSet.YES_NO_MAYBE,
        )
        for k in range(n)
    ]


class _ActorDied(Exception):
    pass


class _TaskFailed(Exception):
    pass


class _Ref:
    def __init__(self, outcome: Callable[[], Any], order: int) -> None:
        self.outcome, self.order = outcome, order


class _Method:
    def __init__(self, actor: _Actor) -> None:
        self.actor = actor

    def remote(self, item: EvalItem) -> _Ref:
        return self.actor.fake.submit(self.actor, item)


class _Actor:
    def __init__(self, fake: _FakeRay, behave: Callable[[EvalItem], Any]) -> None:
        self.fake, self.behave = fake, behave
        self.record = _Method(self)


class _FakeRay:
    """Just what the driver loop uses of Ray: remote calls, wait, get and the exceptions.
    Results arrive in the reverse of submission order among those pending, as real workers
    finish out of order."""

    class exceptions:  # the names of ray.exceptions
        RayError = Exception
        RayActorError = _ActorDied

    def __init__(self) -> None:
        self.n = 0

    def submit(self, actor: _Actor, item: EvalItem) -> _Ref:
        self.n += 1
        return _Ref(lambda: actor.behave(item), self.n)

    def wait(self, refs: list[_Ref], num_returns: int) -> tuple[list[_Ref], list[_Ref]]:
        last = max(refs, key=lambda r: r.order)
        return [last], [r for r in refs if r is not last]

    def get(self, ref: _Ref) -> Any:
        return ref.outcome()


def _rec(item: EvalItem) -> RecordedItem:
    return recorded(item.id, item.gold, ("yes", 0.1, 0.1))


def _ok(item: EvalItem) -> Returned:
    return Returned(_rec(item), [])


def test_driver_reports_every_item_and_drops_a_dead_actor() -> None:
    fake = _FakeRay()

    def flaky(item: EvalItem) -> Any:
        if item.id == "i1":
            return ItemFailure(item_id=item.id, error="ModelError: boom", worker="worker 1")
        if item.id == "i3":
            raise _ActorDied("The actor died unexpectedly\nSegmentation fault")
        return _ok(item)

    good, bad = _Actor(fake, _ok), _Actor(fake, flaky)
    seen: list[str] = []
    failures = engines._drive(
        fake,
        [(good, "worker 0"), (bad, "worker 1")],
        _items(6),
        lambda r: seen.append(r.record.item_id),
    )
    assert sorted(f.item_id for f in failures) == ["i1", "i3"]
    died = next(f for f in failures if f.item_id == "i3")
    assert died.worker == "worker 1" and "Segmentation fault" in died.error
    # The dead actor's later items went to the one left; nothing recorded twice or lost.
    assert sorted(seen) == ["i0", "i2", "i4", "i5"]


def test_driver_reports_queued_items_when_every_actor_died() -> None:
    fake = _FakeRay()

    def dies(item: EvalItem) -> Any:
        raise _ActorDied("could not load the model")

    failures = engines._drive(fake, [(_Actor(fake, dies), "worker 0")], _items(3), print)
    assert failures[0].item_id == "i0"  # the item the actor held when it died
    assert sorted(f.item_id for f in failures) == ["i0", "i1", "i2"]
    assert all("could not load the model" in f.error for f in failures)


class _OutOfOrder:
    """An engine that finishes items in reverse and cannot record one of them."""

    name = "test"
    workers = 2

    def record(
        self, runtime: Any, items: Any, on_item: Callable[[RecordedItem], None]
    ) -> list[ItemFailure]:
        for item in reversed(items):
            if item.id != "i2":
                on_item(_rec(item))
        return [ItemFailure(item_id="i2", error="ModelError: boom", worker="worker 1")]


def test_record_split_stores_what_came_back_and_raises_for_the_rest(tmp_path: Path) -> None:
    config = load_config(cache_dir=tmp_path, model="fake:answerer")
    items = _items(10)
    split = stratified_split(items, 4, None, seed=1)
    runtime = build_runtime(config, "toy", split, "test", cache=CallCache(tmp_path / "c.sqlite"))
    todo = items[:5]
    with pytest.raises(RecordingError) as err:
        record_split(runtime, todo, tmp_path, engine=_OutOfOrder())
    assert err.value.failed == ["i2"] and "worker 1: ModelError: boom" in str(err.value)
    stored = set(runtime_store_ids(tmp_path))
    assert stored == {i.id for i in todo} - {"i2"}
    # Run again: only the failed item is sent, and the records come back in items order.
    sent: list[str] = []

    class Rest(_OutOfOrder):
        def record(self, runtime: Any, items: Any, on_item: Any) -> list[ItemFailure]:
            sent.extend(i.id for i in items)
            for item in reversed(items):
                on_item(_rec(item))
            return []

    records, summary, _ = record_split(runtime, todo, tmp_path, engine=Rest())
    assert sent == ["i2"]
    assert [r.item_id for r in records] == [i.id for i in todo]
    assert summary.engine == "test" and summary.recorded == len(sent)


def runtime_store_ids(root: Path) -> list[str]:
    import json

    (path,) = (root / "trajectories").glob("*.jsonl")
    return [json.loads(line)["item_id"] for line in path.read_text().splitlines()]


def test_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(PrerequisiteError, match=r"pip install 'medgate\[ray\]'"):
        make_engine("ray")
    assert isinstance(make_engine("local"), LocalEngine)


def test_engine_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="--engine ray"):
        make_engine("local", address="auto")
    with pytest.raises(ConfigError, match="local or ray"):
        make_engine("spark")


def test_each_actor_gets_one_thread_and_its_own_endpoint(tmp_path: Path) -> None:
    config = load_config(model="openai:served-hrs", cache_dir=Path("rel-cache"))
    urls = ["http://a:8000/v1", "http://b:8000/v1"]
    configs = worker_configs(config, 5, urls)
    assert [c.backend.api_base for c in configs] == urls
    assert all(c.backend.n_threads == 1 for c in configs)
    assert all(c.cache_dir.is_absolute() and c.model == config.model for c in configs)
    assert config.backend.api_base is None  # the driver's own settings are left alone
    local = worker_configs(load_config(), 3)
    assert len(local) == 3 and all(c.backend.n_threads == 1 for c in local)
    with pytest.raises(ConfigError, match="openai"):
        worker_configs(load_config(), 2, urls)
    engine = make_engine("ray", api_bases=urls) if _has_ray() else RayEngine(api_bases=tuple(urls))
    assert isinstance(engine, RayEngine) and engine.api_bases == tuple(urls)


def _has_ray() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def _writer(path: str, worker: int, n: int) -> None:
    cache = CallCache(Path(path))
    for k in range(n):
        cache.put(f"{worker}-{k}", "complete", "x" * 2000, 0.1)
        assert cache.get(f"{worker}-{k}") is not None
    cache.close()


def test_call_cache_takes_several_writing_processes(tmp_path: Path) -> None:
    # What the actors of one machine do: write the same SQLite file at once (WAL, busy timeout).
    path = tmp_path / "calls.sqlite"
    CallCache(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), w, 200)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert CallCache(path).size() == 800


def test_calls_made_on_another_machine_are_merged(tmp_path: Path) -> None:
    there = CallCache(tmp_path / "there.sqlite")
    there.journal = []
    there.put("k1", "complete", '{"text": "yes"}', 1.5)
    here = CallCache(tmp_path / "here.sqlite")
    here.put("k0", "complete", '{"text": "kept"}', 2.0)
    here.merge([*there.journal, ("k0", "complete", '{"text": "other"}', 9.0)])
    assert here.get("k1") == ('{"text": "yes"}', 1.5)
    assert here.get("k0") == ('{"text": "kept"}', 2.0)  # a call already here is kept
