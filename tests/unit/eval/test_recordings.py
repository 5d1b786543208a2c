"""Recordings that travel with the repository, and the thread count a recording is made with."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from medgate.backends.base import ChatMessage
from medgate.backends.fake import FakeModel
from medgate.config import load_config
from medgate.eval.cache import CachedModel, CallCache
from medgate.eval.engines import RayEngine
from medgate.eval.runner import (
    LocalEngine,
    RecordedItem,
    RunSpec,
    TrajectoryStore,
    archive_manifest,
    archived_form,
    every_round_store,
    model_threads,
    recorded_threads,
    store_dir,
    with_engine_threads,
    with_recorded_threads,
    without_retrieved_text,
)
from medgate.hrs.knowledge import Fact
from medgate.hrs.orchestrator import Action, OrchestratorStep

from .helpers import recorded


def _spec(threads: int | None = 1) -> RunSpec:
    return RunSpec(
        dataset="toy",
        split="train",
        split_seed=42,
        model="embedded:tiny",
        model_fingerprint="abc",
        threads=threads,
        orchestrator="retrieval",
        orchestrator_fingerprint="corpus",
        hrs={"max_iterations": 2},
        centroid=None,
        rounds="all",
    )


def test_a_store_starts_from_its_archive_and_writes_every_item_back(tmp_path: Path) -> None:
    archive = tmp_path / "recordings"
    first = TrajectoryStore(tmp_path / "machine-a", _spec(), archive)
    first.append(recorded("a", "yes", ("yes", 0.2, 0.1)))
    first.append(recorded("b", "no", ("yes", 0.9, 0.5), ("no", 0.3, 0.2)))
    saved = first.save_archive()
    assert saved is not None and saved.name == first.path.name + ".gz"
    assert saved.with_name(first.path.stem + ".json").is_file()  # the spec beside it
    # Another machine's empty cache starts from the archive, and adds to it.
    second = TrajectoryStore(tmp_path / "machine-b", _spec(), archive)
    assert set(second.load()) == {"a", "b"}
    assert second.load()["b"].trajectory.iterations[1].run.answer == "no"
    second.append(recorded("c", "yes", ("no", 0.7, 0.4)))
    second.save_archive()
    with gzip.open(saved, "rt") as fh:
        assert [line[:20] for line in fh][-1].startswith('{"item_id":"c"')
    # Items the cache has and the archive lacks are kept: the two are merged, not replaced.
    assert set(TrajectoryStore(tmp_path / "machine-a", _spec(), archive).load()) == {"a", "b", "c"}


def test_the_archive_is_byte_identical_for_the_same_items(tmp_path: Path) -> None:
    archive = tmp_path / "recordings"
    store = TrajectoryStore(tmp_path / "cache", _spec(), archive)
    store.append(recorded("a", "yes", ("yes", 0.2, 0.1)))
    path = store.save_archive()
    assert path is not None
    before = path.read_bytes()
    again = TrajectoryStore(tmp_path / "other", _spec(), archive).save_archive()
    assert again == path and path.read_bytes() == before


def test_a_recording_past_the_gate_reuses_the_one_with_every_round(tmp_path: Path) -> None:
    archive = tmp_path / "recordings"
    ungated = _spec().model_copy(update={"rounds": "ungated", "recording_gate": (0.5, 0.4)})
    assert every_round_store(tmp_path / "cache", ungated, archive) is None  # nothing recorded
    full = TrajectoryStore(tmp_path / "machine-a", _spec(), archive)
    full.append(recorded("a", "yes", ("yes", 0.2, 0.1), ("yes", 0.2, 0.1)))
    full.save_archive()
    # Another machine finds them through the archive; the every-round spec itself reuses nothing.
    found = every_round_store(tmp_path / "machine-b", ungated, archive)
    assert found is not None and found.path.name == full.path.name
    assert set(found.load()) == {"a"}
    assert every_round_store(tmp_path / "machine-b", _spec(), archive) is None
    # A different spec in anything but the rounds is another recording.
    other = ungated.model_copy(update={"threads": 2})
    assert every_round_store(tmp_path / "machine-b", other, archive) is None


def test_no_archive_directory_writes_nothing(tmp_path: Path) -> None:
    store = TrajectoryStore(tmp_path, _spec())
    store.append(recorded("a", "yes", ("yes", 0.2, 0.1)))
    assert store.save_archive() is None
    assert not list(tmp_path.rglob("*.gz"))


def test_a_recording_with_another_thread_count_is_another_recording() -> None:
    assert _spec(1).key() != _spec(2).key()


def test_thread_count_of_in_process_llamacpp_models_only(tmp_path: Path) -> None:
    cfg = load_config(cache_dir=tmp_path, backend={"n_threads": 3})
    assert model_threads("embedded:qwen2.5-coder-0.5b", cfg) == 3
    assert model_threads("/models/x.gguf", cfg) == 3
    assert model_threads("openai:served", cfg) is None
    assert model_threads("fake:m", cfg) is None
    unset = load_config(cache_dir=tmp_path)
    threads = model_threads("embedded:qwen2.5-coder-0.5b", unset)
    assert threads is not None and threads >= 1


def test_the_ray_engine_records_with_its_actors_thread_count(tmp_path: Path) -> None:
    cfg = load_config(cache_dir=tmp_path, backend={"n_threads": 2})
    assert with_engine_threads(cfg, RayEngine()).backend.n_threads == 1
    assert with_engine_threads(cfg, LocalEngine()).backend.n_threads == 2
    assert with_engine_threads(cfg, None) is cfg


def test_cached_calls_are_keyed_by_their_numerics(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "calls.sqlite")
    fake = FakeModel("m")
    fake.script_chat("hi", "one thread")
    msgs = [ChatMessage(role="user", content="hi")]
    one = CachedModel(lambda: fake, "m", fake.fingerprint, cache, numerics="threads=1")
    assert one.chat(msgs).text == "one thread"
    two = CachedModel(lambda: FakeModel("m"), "m", fake.fingerprint, cache, numerics="threads=2")
    # Not replayed from the one-thread call: the unscripted model is asked and fails.
    with pytest.raises(Exception, match="unscripted"):
        two.chat(msgs)
    assert one.fingerprint == two.fingerprint == fake.fingerprint


def test_a_recording_writes_its_archive_as_it_goes_and_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from medgate.eval import runner
    from medgate.eval.data import stratified_split
    from medgate.eval.runner import build_runtime, record_split

    from .helpers import scripted_answerer
    from .test_cache_runner import _items

    config = load_config(
        cache_dir=tmp_path,
        model="fake:answerer",
        hrs={"signals": ["entropy", "perplexity"], "max_iterations": 1, "facts_per_iteration": 1},
    )
    split = stratified_split(_items(), 2, None, seed=1)
    fake = scripted_answerer()
    runtime = build_runtime(config, "toy", split, "train", cache=CallCache(tmp_path / "c.sqlite"))
    runtime.gate.answerer._factory = lambda: fake  # type: ignore[attr-defined]
    runtime.baseline_gate.answerer = runtime.gate.answerer
    archive = tmp_path / "recordings"
    seen: list[int] = []

    def lines(path: Path) -> int:
        with gzip.open(path, "rt") as fh:
            return len(fh.readlines())

    def archived_count(_: object) -> None:
        files = list(archive.glob("*.jsonl.gz"))
        seen.append(lines(files[0]) if files else 0)

    monkeypatch.setattr(runner, "ARCHIVE_EVERY", 2)
    items = split.train[:3]
    record_split(runtime, items, tmp_path / "cache", on_item=archived_count, archive=archive)
    assert seen == [0, 2, 2]  # written after the second item, then once more at the end
    (path,) = archive.glob("*.jsonl.gz")
    assert lines(path) == 3


def _archived(archive: Path, spec: RunSpec) -> None:
    store = TrajectoryStore(archive.parent / "cache-of-another-machine", spec, archive)
    store.append(recorded("a", "yes", ("yes", 0.2, 0.1)))
    store.save_archive()


def test_an_archived_recording_with_another_thread_count_is_found(tmp_path: Path) -> None:
    archive = tmp_path / "recordings"
    assert recorded_threads(_spec(2), archive) is None  # no archive yet
    _archived(archive, _spec(1))
    assert recorded_threads(_spec(2), archive) == 1
    # The every-round recording serves a run recorded past the gate, as it does for one thread.
    ungated = _spec(2).model_copy(update={"rounds": "ungated", "recording_gate": (0.5, 0.4)})
    assert recorded_threads(ungated, archive) == 1
    # Its own thread count archived: nothing to take.
    assert recorded_threads(_spec(1), archive) is None
    # Anything else different is another recording; no thread count (a served model) has none.
    assert recorded_threads(_spec(2).model_copy(update={"model_fingerprint": "x"}), archive) is None
    assert recorded_threads(_spec(None), archive) is None
    assert recorded_threads(_spec(2), None) is None


def test_a_configured_thread_count_is_never_replaced(tmp_path: Path) -> None:
    archive = tmp_path / "recordings"
    _archived(archive, _spec(1))
    explicit = load_config(cache_dir=tmp_path, recordings_dir=archive, backend={"n_threads": 2})
    assert with_recorded_threads(explicit, _spec(2)) is None
    unset = load_config(cache_dir=tmp_path, recordings_dir=archive)
    if unset.backend.n_threads is None:  # not set by the environment running the tests
        adopted = with_recorded_threads(unset, _spec(2))
        assert adopted is not None and adopted.backend.n_threads == 1


def test_a_run_without_a_thread_count_reads_the_recording_made_with_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from medgate.eval import runner
    from medgate.eval.data import dataset_split
    from medgate.eval.experiments import record
    from medgate.eval.runner import build_runtime

    from .helpers import write_dataset

    monkeypatch.delenv("MEDGATE_BACKEND__N_THREADS", raising=False)
    # The scripted model stands in for llama.cpp, whose thread count names its recordings.
    monkeypatch.setattr(runner, "LLAMACPP_BACKENDS", frozenset({"fake"}))
    rows = [
        {"id": f"q{i}", "question": f"Q{i}?", "context": "C.", "label": "yes"} for i in range(8)
    ]
    dataset = f"jsonl:{write_dataset(tmp_path / 'd.jsonl', rows)}::yes,no"
    archive = tmp_path / "recordings"
    made = load_config(
        cache_dir=tmp_path / "a", model="fake:m", data_dir=tmp_path, recordings_dir=archive,
        backend={"n_threads": 64},
    )  # fmt: skip
    parts = dataset_split(dataset, made.data_dir)
    spec = build_runtime(made, dataset, parts, "test", "retrieval", None, "all").spec
    assert spec.threads == 64
    store = TrajectoryStore(store_dir(made), spec, archive)
    for item in parts.test:
        store.append(recorded(item.id, item.gold, ("yes", 0.2, 0.1)))
    store.save_archive()
    # Another machine, thread count unset: the archived recording is read, nothing recorded.
    here = load_config(
        cache_dir=tmp_path / "b", model="fake:m", data_dir=tmp_path, recordings_dir=archive
    )
    rec = record(here, dataset, "test", rounds="ungated", use_centroid=False)
    assert rec.summary.recorded == 0 and rec.summary.reused == len(parts.test)
    assert rec.spec.threads == 64 and rec.config.backend.n_threads == 64
    assert rec.store.path.name == store.path.name
    # `medgate eval risk --recorded-only` reads it the same way.
    from medgate.eval.risk_run import recorded_items

    records, name, _ = recorded_items(here, dataset, "test", None, recorded_only=True)
    assert name == store.path.name and len(records) == len(parts.test)


def _with_facts(rec: RecordedItem, source: str) -> RecordedItem:
    fact = Fact(text="A passage of a training abstract.", source=source)
    step = OrchestratorStep(action=Action.CONTINUE, facts=[fact], withheld=[fact])
    its = [
        rec.trajectory.iterations[0],
        rec.trajectory.iterations[1].model_copy(update={"knowledge": [fact], "step": step}),
    ]
    trajectory = rec.trajectory.model_copy(update={"iterations": its, "final_step": step})
    return rec.model_copy(update={"trajectory": trajectory})


@pytest.mark.parametrize(
    ("orchestrator", "kept"), [("retrieval:bm25:train-contexts-x", False), ("self", True)]
)
def test_the_archive_keeps_a_retrieved_passage_by_its_id_not_its_text(
    tmp_path: Path, orchestrator: str, kept: bool
) -> None:
    spec = _spec().model_copy(update={"orchestrator": orchestrator})
    store = TrajectoryStore(tmp_path / "cache", spec, tmp_path / "recordings")
    item = _with_facts(recorded("b", "no", ("yes", 0.9, 0.5), ("no", 0.3, 0.2)), "train:7#2")
    store.append(item)
    path = store.save_archive()
    assert path is not None
    text = gzip.decompress(path.read_bytes()).decode()
    assert ("A passage of a training abstract." in text) is kept
    # knowledge, the step's facts and withheld ones, the final step's two
    assert text.count('"source":"train:7#2"') == 5
    back = TrajectoryStore(tmp_path / "other", spec, tmp_path / "recordings").load()["b"]
    # Everything a replay reads is as recorded: answers, signals, sources.
    assert back.trajectory.iterations[1].run == item.trajectory.iterations[1].run
    assert back.trajectory.iterations[1].signals == item.trajectory.iterations[1].signals
    assert [f.source for f in back.trajectory.iterations[1].knowledge] == ["train:7#2"]
    assert without_retrieved_text(without_retrieved_text(item)) == without_retrieved_text(item)


def test_committed_recordings_keep_no_retrieved_passage() -> None:
    archives = sorted(Path("docs/results/recordings").glob("*.jsonl.gz"))
    assert archives
    for path in archives:
        spec = RunSpec.model_validate_json(archive_manifest(path).read_text())
        for line in gzip.decompress(path.read_bytes()).decode().splitlines():
            rec = RecordedItem.model_validate_json(line)
            assert rec == archived_form(spec, rec), (path.name, rec.item_id)
