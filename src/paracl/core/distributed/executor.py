"""Map a per-shard function over tasks with a local process pool or a Ray cluster.

Why one small abstraction instead of each stage talking to multiprocessing or Ray: the
stages need the same three things from either engine, and the result must not depend
on which one ran (byte-identical artifacts):

- results in task order, whatever finished first (so outputs never depend on timing);
- tasks drawn lazily with a bounded number in flight (bounded memory on a big input,
  and a consumer can stop early, e.g. at a sentence cap, without wasting the cluster);
- a per-worker initializer (seeds, model loading) that runs before the worker's tasks.

Tasks may also be `Done(result)`: a result already known (a shard a previous,
interrupted run finished), handed out in its place without being submitted.

Ray is used through plain remote tasks (`ray.remote`), which give exactly this ordered,
lazy, early-stoppable map; the function and the task payloads travel through Ray's
object store, so workers need no shared filesystem, only `paracl` installed. Model
stages ask for `actors=True`: a pool of Ray actors, each running the initializer once
(loading the model onto its GPU, `num_gpus` per actor) and then batch inference on the
shards it is handed, round robin; an actor runs its calls in order, so results still
come back in task order.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from paracl.core.params import ParamsError

log = logging.getLogger(__name__)

EXECUTORS = ("local", "ray")
AHEAD = 2  # tasks in flight per worker: one running, one queued


@dataclass(frozen=True)
class Done:
    """A task whose result is already known; `Executor.map` yields `result` in its turn."""

    result: Any


def _run_with_init(init: Callable | None, init_args: tuple, fn: Callable, task: Any) -> Any:
    """Ray worker side: (re)apply the initializer, then run the task. Initializers must
    be idempotent and cheap to repeat (setting a seed); costly state belongs in a
    module-level cache of the worker process, which Ray reuses across tasks."""
    if init is not None:
        init(*init_args)
    return fn(task)


class Executor:
    """Ordered, lazy, bounded `map(fn, tasks)`; see the module docstring."""

    kind = "base"
    ahead = AHEAD

    def __init__(self, workers: int):
        self.workers = workers

    def map(self, fn: Callable, tasks: Iterable, in_flight: int | None = None) -> Iterator:
        """Yield fn(task) for each task, in task order. Closing the iterator early
        cancels the tasks not yet handed out."""
        limit = max(1, in_flight or self.ahead * self.workers)
        pending: deque = deque()
        try:
            for task in tasks:
                pending.append(task if isinstance(task, Done) else self._submit(fn, task))
                if len(pending) >= limit:
                    yield self._result(pending.popleft())
            while pending:
                yield self._result(pending.popleft())
        finally:
            for handle in pending:
                if not isinstance(handle, Done):
                    self._cancel(handle)

    def _result(self, handle: Any) -> Any:
        return handle.result if isinstance(handle, Done) else self._get(handle)

    def _submit(self, fn: Callable, task: Any) -> Any:
        raise NotImplementedError

    def _get(self, handle: Any) -> Any:
        raise NotImplementedError

    def _cancel(self, handle: Any) -> None:
        raise NotImplementedError


class InlineExecutor(Executor):
    """workers=1: everything in this process (no start-up cost, easy to debug)."""

    kind = "local"
    ahead = 1  # a result is handed on as soon as it exists (nothing runs ahead)

    def _submit(self, fn: Callable, task: Any) -> Any:
        return Done(fn(task))

    def _get(self, handle: Any) -> Any:  # never called: _submit returns Done
        return handle.result

    def _cancel(self, handle: Any) -> None:
        pass


class PoolExecutor(Executor):
    """A local process pool (concurrent.futures)."""

    kind = "local"

    def __init__(self, pool: ProcessPoolExecutor, workers: int):
        super().__init__(workers)
        self.pool = pool

    def _submit(self, fn: Callable, task: Any) -> Any:
        return self.pool.submit(fn, task)

    def _get(self, handle: Any) -> Any:
        return handle.result()

    def _cancel(self, handle: Any) -> None:
        handle.cancel()


class _Actor:
    """A Ray actor: runs the initializer once, then tasks (a model stays loaded)."""

    def __init__(self, init: Callable | None, init_args: tuple):
        if init is not None:
            init(*init_args)

    def run(self, fn: Callable, task: Any) -> Any:
        return fn(task)


class RayActorExecutor(Executor):
    """A pool of Ray actors (model stages): `workers` actors, `num_gpus` GPUs each."""

    kind = "ray"

    def __init__(self, workers: int, init: Callable | None, init_args: tuple, num_gpus: float):
        import ray

        super().__init__(workers)
        self.ray = ray
        actor = ray.remote(num_cpus=1, num_gpus=num_gpus)(_Actor)
        self.actors = [actor.remote(init, init_args) for _ in range(workers)]
        self.submitted = 0

    def _submit(self, fn: Callable, task: Any) -> Any:
        actor = self.actors[self.submitted % len(self.actors)]
        self.submitted += 1
        return actor.run.remote(fn, task)

    def _get(self, handle: Any) -> Any:
        return self.ray.get(handle)

    def _cancel(self, handle: Any) -> None:
        self.ray.cancel(handle)

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)


class RayExecutor(Executor):
    """Plain Ray tasks, one CPU each, on an existing cluster or a local one."""

    kind = "ray"

    def __init__(self, workers: int, init: Callable | None, init_args: tuple):
        import ray

        super().__init__(workers)
        self.ray = ray
        self.init, self.init_args = init, init_args
        self.remote = ray.remote(num_cpus=1, max_retries=2)(_run_with_init)

    def _submit(self, fn: Callable, task: Any) -> Any:
        return self.remote.remote(self.init, self.init_args, fn, task)

    def _get(self, handle: Any) -> Any:
        return self.ray.get(handle)

    def _cancel(self, handle: Any) -> None:
        self.ray.cancel(handle)


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ParamsError(
            "'executor: ray' needs Ray: pip install 'paracl[ray]' (or pip install 'ray[data]')"
        ) from None
    return ray


@contextlib.contextmanager
def make_executor(
    kind: str = "local",
    workers: int = 1,
    init: Callable | None = None,
    init_args: tuple = (),
    ray_address: str | None = None,
    actors: bool = False,
    num_gpus: float = 0.0,
) -> Iterator[Executor]:
    """An executor for the duration of a `with` block.

    local: `workers` processes (1 = this process). ray: connect to `ray_address`
    ("auto", "ray://head:10001", …), or start a local Ray with `workers` CPUs when it is
    None; Ray is shut down on exit only if this call started or connected it. With Ray
    the number of tasks in flight is `workers` × 2 as well, so on a cluster set
    `workers` to the CPUs you want the stage to use. `actors=True` (model stages): Ray
    runs `workers` long-lived actors with `num_gpus` GPUs each instead of tasks; locally
    it changes nothing (the model is loaded once per process either way).
    """
    if kind not in EXECUTORS:
        raise ParamsError(f"'executor' must be one of {', '.join(EXECUTORS)}, got {kind!r}")
    if kind == "local":
        if workers <= 1:
            if init is not None:
                init(*init_args)
            yield InlineExecutor(1)
            return
        with ProcessPoolExecutor(workers, initializer=init, initargs=init_args) as pool:
            yield PoolExecutor(pool, workers)
        return
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        if ray_address is None:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=ray_address, log_to_driver=False)
        log.info("ray: %s", ray.cluster_resources())
    try:
        if actors:
            if num_gpus and not ray.cluster_resources().get("GPU"):
                log.warning("ray: the cluster has no GPU; model actors run on CPU")
                num_gpus = 0.0
            pool = RayActorExecutor(workers, init, init_args, num_gpus)
            try:
                yield pool
            finally:
                pool.close()
        else:
            yield RayExecutor(workers, init, init_args)
    finally:
        if started:
            ray.shutdown()
