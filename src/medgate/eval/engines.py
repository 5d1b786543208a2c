"""Where a recording's items are recorded: in this process, or spread over Ray actors.

An engine records the items of one run (:class:`medgate.eval.runner.Runtime`) and calls back once
per finished item; :func:`medgate.eval.runner.record_split` appends each item to the trajectory
store in that callback, so this process is the store's only writer, whatever the engine.

- :class:`LocalEngine` records the items one after another with the runtime it is given (what
  ``record_split`` always did; it lives in :mod:`medgate.eval.runner`, which uses it by
  default, and is re-exported here).
- :class:`RayEngine` starts actors (``num_cpus=1``), each assembling its own runtime from the
  run's :class:`~medgate.eval.runner.RuntimeRecipe`: its own model on one thread (or an
  OpenAI-compatible endpoint of its own), its own connection to the call cache. Each actor is
  given one item at a time, so a dead actor loses only the item it held; that item, and any
  item whose recording raised, comes back as an :class:`~medgate.eval.runner.ItemFailure`
  instead of being dropped.

The call cache is one SQLite file in WAL mode opened with a 60 s busy timeout
(:class:`medgate.eval.cache.CallCache`): the actors on the driver's machine read and write it
together, each write its own short transaction, so they share every call already made. An actor
on another machine of a cluster uses that machine's cache file (at the same path) and sends the
calls it made with each item, which the driver adds to its own: the driver's cache ends up with
every call of the run, as after a local run.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from medgate.backends.registry import split_spec
from medgate.config import MedgateConfig
from medgate.errors import ConfigError, PrerequisiteError
from medgate.eval.cache import CallRow
from medgate.eval.data import EvalItem
from medgate.eval.runner import (
    Engine,
    ItemFailure,
    LocalEngine,
    RecordedItem,
    Runtime,
    RuntimeRecipe,
    record_item,
)

__all__ = ["Engine", "LocalEngine", "RayEngine", "make_engine", "require_ray", "worker_configs"]

#: The object store holds only items and their records (a few MB at most): a small one starts
#: fast and leaves the machine's memory to the models.
OBJECT_STORE_BYTES = 100 * 1024 * 1024
#: A model actor holds one CPU, so its model runs one thread.
ACTOR_THREADS = 1


def require_ray() -> Any:
    """The ``ray`` module, or a :class:`PrerequisiteError` naming the extra that installs it."""
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise PrerequisiteError(
            f"the ray engine needs Ray, which is not installed ({exc}); install it with: "
            "pip install 'medgate[ray]'"
        ) from None


def worker_configs(
    config: MedgateConfig, workers: int, api_bases: Sequence[str] = ()
) -> list[MedgateConfig]:
    """The configuration of each actor: one model thread each (an actor holds one CPU), paths
    made absolute (an actor's working directory is Ray's, not ours) and, given endpoints, one
    actor per endpoint with ``backend.api_base`` set to it."""
    base = config.model_copy(
        update={"cache_dir": config.cache_dir.resolve(), "data_dir": config.data_dir.resolve()}
    )
    if api_bases:
        if split_spec(config.model)[0] != "openai":
            raise ConfigError(
                f"--api-base serves an openai: answering model, not {config.model!r}; "
                "set --model openai:NAME"
            )
        return [_backend(base, n_threads=ACTOR_THREADS, api_base=url) for url in api_bases]
    return [_backend(base, n_threads=ACTOR_THREADS) for _ in range(workers)]


def _backend(config: MedgateConfig, **options: object) -> MedgateConfig:
    return config.model_copy(update={"backend": config.backend.model_copy(update=options)})


@dataclasses.dataclass
class Returned:
    """What an actor sends back for an item it recorded: the record and, from an actor on
    another machine, the calls it added to that machine's cache."""

    record: RecordedItem
    calls: list[CallRow]


class Recorder:
    """One Ray actor: a runtime of its own, recording the items it is sent one at a time.

    A plain class, made remote only when the engine starts, so that medgate imports without
    Ray; actors find it by its module path (medgate must be installed on every node).
    """

    def __init__(
        self, recipe: RuntimeRecipe, expected_key: str, worker: str, driver_node: str
    ) -> None:
        self.worker = worker
        # On the driver's machine the cache file is the driver's: nothing to send back.
        self.remote = require_ray().get_runtime_context().get_node_id() != driver_node
        self.runtime = recipe.build()
        key = self.runtime.spec.key()
        if key != expected_key:
            # Another spec would record items that do not belong in the driver's store.
            raise ConfigError(
                f"{worker} assembled recording {key}, not the driver's {expected_key}: the "
                "node's model, data or settings differ"
            )

    def record(self, item: EvalItem) -> Returned | ItemFailure:
        cache = self.runtime.cache
        cache.journal = [] if self.remote else None
        try:
            return Returned(record_item(self.runtime, item), cache.journal or [])
        except Exception as exc:  # reported to the driver with the item, never dropped
            return ItemFailure(item_id=item.id, error=_describe(exc), worker=self.worker)
        finally:
            cache.journal = None


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    # An actor that died while starting carries the whole remote traceback; its last line
    # says what went wrong.
    last = text.splitlines()[-1].strip() if text else ""
    return f"{type(exc).__name__}: {last[:300]}" if last else type(exc).__name__


@dataclasses.dataclass
class RayEngine:
    """Items spread over Ray actors, each with its own model (or endpoint).

    ``address``: a running cluster (``ray start --head`` prints it; ``auto`` finds one on this
    machine); None starts a local instance with this machine's cores, shut down afterwards. When
    Ray is already initialised in this process (a test, a notebook) that instance is used and
    left running. ``workers``: actors, default the CPUs Ray reports, never more than the items
    to record. ``api_bases``: one actor per OpenAI-compatible endpoint instead.
    """

    address: str | None = None
    requested_workers: int = 0
    api_bases: tuple[str, ...] = ()
    name: str = dataclasses.field(default="ray", init=False)
    workers: int = dataclasses.field(default=1, init=False)
    threads: int | None = dataclasses.field(default=ACTOR_THREADS, init=False)

    def record(
        self,
        runtime: Runtime,
        items: Sequence[EvalItem],
        on_item: Callable[[RecordedItem], None],
    ) -> list[ItemFailure]:
        if runtime.recipe is None:
            raise ConfigError("the ray engine needs a runtime made by build_runtime")
        ray = require_ray()
        started = False
        if not ray.is_initialized():
            if self.address:
                ray.init(address=self.address, include_dashboard=False)
            else:
                ray.init(
                    num_cpus=os.cpu_count() or 1,
                    include_dashboard=False,
                    object_store_memory=OBJECT_STORE_BYTES,
                )
            started = True
        actors: list[Any] = []
        try:
            configs = worker_configs(
                runtime.recipe.config, self._count(ray, len(items)), self.api_bases
            )
            self.workers = len(configs)
            # A model actor holds one CPU for its life; an endpoint actor only waits on HTTP.
            cpus = 0 if self.api_bases else 1
            remote = ray.remote(Recorder).options(num_cpus=cpus, max_restarts=0)
            key = runtime.spec.key()
            node = ray.get_runtime_context().get_node_id()
            names = []
            for n, cfg in enumerate(configs):
                names.append(f"worker {n}" + (f" ({self.api_bases[n]})" if self.api_bases else ""))
                recipe = dataclasses.replace(runtime.recipe, config=cfg)
                actors.append(remote.remote(recipe, key, names[-1], node))
            cache = runtime.cache

            def returned(out: Returned) -> None:
                if out.calls:
                    cache.merge(out.calls)
                on_item(out.record)

            return _drive(ray, list(zip(actors, names, strict=True)), items, returned)
        finally:
            for actor in actors:
                ray.kill(actor)
            if started:
                ray.shutdown()

    def _count(self, ray: Any, n_items: int) -> int:
        if self.api_bases:
            return len(self.api_bases)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        wanted = self.requested_workers or cpus
        if wanted > cpus:
            # An actor that cannot get its CPU would hold its item forever.
            print(
                f"ray: {wanted} workers asked for, {cpus} CPUs in the cluster: using {cpus}",
                file=sys.stderr,
            )
            wanted = cpus
        return max(1, min(wanted, n_items))


def _drive(
    ray: Any,
    actors: Sequence[tuple[Any, str]],
    items: Sequence[EvalItem],
    on_item: Callable[[Returned], None],
) -> list[ItemFailure]:
    """Give each idle actor (with its name) the next item until none is left; report each
    result as it arrives (completion order), drop actors that die and report what they held."""
    queue = deque(items)
    idle = list(actors)
    pending: dict[Any, tuple[tuple[Any, str], EvalItem]] = {}
    failures: list[ItemFailure] = []
    last_death = ""
    while queue or pending:
        while idle and queue:
            actor, item = idle.pop(0), queue.popleft()
            pending[actor[0].record.remote(item)] = (actor, item)
        if not pending:
            break
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            actor, item = pending.pop(ref)
            try:
                out = ray.get(ref)
            except ray.exceptions.RayActorError as exc:
                # The actor is gone (its model failed to load, its process died): its item is
                # reported and the others go to the actors left.
                last_death = _describe(exc)
                failures.append(ItemFailure(item_id=item.id, error=last_death, worker=actor[1]))
                continue
            except ray.exceptions.RayError as exc:
                failures.append(ItemFailure(item_id=item.id, error=_describe(exc), worker=actor[1]))
            else:
                if isinstance(out, ItemFailure):
                    failures.append(out)
                else:
                    on_item(out)
            idle.append(actor)
    # Every actor died with items still queued: each of them is reported too.
    failures.extend(
        ItemFailure(item_id=item.id, error=f"not started: every worker died ({last_death})")
        for item in queue
    )
    return failures


def make_engine(
    engine: str,
    address: str | None = None,
    workers: int | None = None,
    api_bases: Sequence[str] = (),
) -> Engine:
    """The engine the command-line options name."""
    if engine == "local":
        if address or workers or api_bases:
            raise ConfigError("--address, --workers and --api-base need --engine ray")
        return LocalEngine()
    if engine == "ray":
        if workers is not None and workers < 1:
            raise ConfigError("--workers must be at least 1")
        if workers and api_bases:
            raise ConfigError("with --api-base there is one worker per endpoint: drop --workers")
        require_ray()  # fail before anything is loaded
        return RayEngine(address, workers or 0, tuple(api_bases))
    raise ConfigError(f"unknown engine {engine!r}: use local or ray")
