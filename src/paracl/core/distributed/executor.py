"""Run a `ShardJob` over tasks with a local process pool or a Ray cluster.

Why one small protocol instead of each stage talking to multiprocessing or Ray: every
sharded stage needs the same things from either engine, and the result must not depend
on which one ran (byte-identical artifacts):

- a job says how a worker sets up (`setup()`: load a model, seed langdetect; once per
  worker) and how it handles one task (`process(state, task)`); the worker runner holds
  the state, so no module keeps worker state in a global;
- results in task order, whatever finished first (so outputs never depend on timing);
- tasks drawn lazily with a bounded number in flight (bounded memory on a big input,
  and a consumer can stop early, e.g. at a sentence cap, without wasting the cluster).

Tasks may also be `Done(result)`: a result already known (a shard a previous,
interrupted run finished), handed out in its place without being submitted.

Workers: `workers=1` locally runs the job in this process; more run as local processes,
each setting up once and then taking the tasks handed to it, round robin (a worker
answers in order, so results come back in task order). Ray runs the same loop as actors:
the job and the task payloads travel through Ray's object store, so workers need no
shared filesystem, only `paracl` installed. Model stages ask for `num_gpus` per actor.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import pickle
import queue
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from paracl.core.errors import ParamsError

log = logging.getLogger(__name__)

EXECUTORS = ("local", "ray")
AHEAD = 2  # tasks in flight per worker: one running, one queued
S = TypeVar("S")


class ShardJob(Protocol[S]):
    """What a sharded stage runs. It travels to every worker by pickle (a module-level
    class holding only params and paths); `setup` runs once per worker, before its
    first task, and its result is handed to every `process` call of that worker."""

    def setup(self) -> S: ...

    def process(self, state: S, task: Any) -> Any: ...


@dataclass(frozen=True)
class Done:
    """A task whose result is already known; `Executor.map` yields `result` in its turn."""

    result: Any


class Executor:
    """Ordered, lazy, bounded `map(tasks)` of one job; see the module docstring."""

    kind = "base"
    ahead = AHEAD

    def __init__(self, workers: int):
        self.workers = workers

    def map(self, tasks: Iterable, in_flight: int | None = None) -> Iterator:
        """Yield the job's result for each task, in task order. Closing the iterator
        early cancels the tasks not yet handed out."""
        limit = max(1, in_flight or self.ahead * self.workers)
        pending: deque = deque()
        try:
            for task in tasks:
                pending.append(task if isinstance(task, Done) else self._submit(task))
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

    def _submit(self, task: Any) -> Any:
        raise NotImplementedError

    def _get(self, handle: Any) -> Any:
        raise NotImplementedError

    def _cancel(self, handle: Any) -> None:
        pass


class InlineExecutor(Executor):
    """workers=1: the job runs in this process (no start-up cost, easy to debug)."""

    kind = "local"
    ahead = 1  # a result is handed on as soon as it exists (nothing runs ahead)

    def __init__(self, job: ShardJob):
        super().__init__(1)
        self.job, self.state = job, job.setup()

    def _submit(self, task: Any) -> Any:
        return Done(self.job.process(self.state, task))


def _send(results: mp.Queue, ok: bool, value: Any) -> None:
    """Pickle here, not in the queue's feeder thread, where a failure would be lost."""
    try:
        data = pickle.dumps((ok, value))
    except Exception as err:
        data = pickle.dumps((False, RuntimeError(f"a worker's result cannot be pickled: {err}")))
    results.put(data)


def _serve(job: ShardJob, tasks: mp.Queue, results: mp.Queue) -> None:
    """A local worker process: set up once (answering None), then answer its tasks in
    order until None. An error (of setup or of a task) is sent back, to be raised in the
    driver, and ends the worker."""
    try:
        state = job.setup()
    except Exception as err:
        _send(results, False, err)
        return
    _send(results, True, None)
    while (task := tasks.get()) is not None:
        try:
            result = job.process(state, task)
        except Exception as err:
            _send(results, False, err)
            return
        _send(results, True, result)
    results.cancel_join_thread()  # what is left unread is a result the driver dropped


class ProcessExecutor(Executor):
    """`workers` local processes, each running `_serve`; task i goes to worker i mod n."""

    kind = "local"

    def __init__(self, job: ShardJob, workers: int):
        super().__init__(workers)
        self.queues = [(mp.Queue(), mp.Queue()) for _ in range(workers)]
        self.procs = [mp.Process(target=_serve, args=(job, *q)) for q in self.queues]
        self.submitted = 0
        for proc in self.procs:
            proc.start()
        try:
            for worker in range(workers):
                self._get(worker)  # set up: a model that does not load fails here
        except BaseException:
            self.close()
            raise

    def _submit(self, task: Any) -> Any:
        worker = self.submitted % self.workers
        self.submitted += 1
        self.queues[worker][0].put(task)
        return worker

    def _get(self, worker: int) -> Any:
        results, proc = self.queues[worker][1], self.procs[worker]
        while True:
            try:
                ok, value = pickle.loads(results.get(timeout=1.0))
                break
            except queue.Empty:  # a worker that ended sent its last answer first
                if not proc.is_alive() and results.empty():
                    code = proc.exitcode
                    raise RuntimeError(f"a local worker process died (exit code {code})") from None
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Stop the workers: each finishes the tasks it holds (at most `ahead`), then exits."""
        for (tasks, _), proc in zip(self.queues, self.procs, strict=True):
            if proc.is_alive():
                tasks.put(None)
            tasks.cancel_join_thread()  # a dead worker never reads its tasks
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join()


class _Actor:
    """A Ray actor: sets the job up once, then processes the tasks it is handed."""

    def __init__(self, job: ShardJob):
        self.job, self.state = job, job.setup()

    def ready(self) -> bool:
        return True

    def run(self, task: Any) -> Any:
        return self.job.process(self.state, task)


class RayExecutor(Executor):
    """`workers` Ray actors with `num_gpus` GPUs each; task i goes to actor i mod n (an
    actor runs its calls in order, so results come back in task order)."""

    kind = "ray"

    def __init__(self, job: ShardJob, workers: int, num_gpus: float, retries: int):
        import ray

        super().__init__(workers)
        self.ray = ray
        actor = ray.remote(
            num_cpus=1, num_gpus=num_gpus, max_restarts=retries, max_task_retries=retries
        )(_Actor)
        self.actors = [actor.remote(job) for _ in range(workers)]
        self.submitted = 0
        try:
            ray.get([a.ready.remote() for a in self.actors])  # set up: errors surface here
        except BaseException:
            self.close()
            raise

    def _submit(self, task: Any) -> Any:
        actor = self.actors[self.submitted % len(self.actors)]
        self.submitted += 1
        return actor.run.remote(task)

    def _get(self, handle: Any) -> Any:
        return self.ray.get(handle)

    def _cancel(self, handle: Any) -> None:
        self.ray.cancel(handle)

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ParamsError(
            "'executor: ray' needs Ray: pip install 'paracl[ray]' (or pip install 'ray[data]')"
        ) from None
    return ray


@contextlib.contextmanager
def _ray_session(ray: Any, workers: int, ray_address: str | None) -> Iterator[None]:
    """Connect to `ray_address` ("auto", "ray://head:10001", …), or start a local Ray with
    `workers` CPUs when it is None; shut down on exit only if this call started it."""
    started = not ray.is_initialized()
    if started:
        if ray_address is None:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=ray_address, log_to_driver=False)
        log.info("ray: %s", ray.cluster_resources())
    try:
        yield
    finally:
        if started:
            ray.shutdown()


@contextlib.contextmanager
def make_executor(
    job: ShardJob,
    kind: str = "local",
    workers: int = 1,
    ray_address: str | None = None,
    model: bool = False,
    num_gpus: float = 0.0,
) -> Iterator[Executor]:
    """An executor running `job` for the duration of a `with` block; every worker has
    set the job up before the block starts (so a model that does not load fails first).

    local: `workers` processes (1 = this process). ray: `workers` actors (see
    `_ray_session` for the cluster), `workers` × 2 tasks in flight, so on a cluster set
    `workers` to the CPUs (or model actors) you want the stage to use. A `model` job's
    actors get `num_gpus` GPUs each where the cluster has any; other jobs get two
    retries of a lost actor (a model is not reloaded behind the user's back).
    """
    if kind not in EXECUTORS:
        raise ParamsError(f"'executor' must be one of {', '.join(EXECUTORS)}, got {kind!r}")
    if kind == "local":
        pool = InlineExecutor(job) if workers <= 1 else ProcessExecutor(job, workers)
        try:
            yield pool
        finally:
            if isinstance(pool, ProcessExecutor):
                pool.close()
        return
    ray = _import_ray()
    with _ray_session(ray, workers, ray_address):
        if model and num_gpus and not ray.cluster_resources().get("GPU"):
            log.warning("ray: the cluster has no GPU; model actors run on CPU")
            num_gpus = 0.0
        pool = RayExecutor(job, workers, num_gpus if model else 0.0, retries=0 if model else 2)
        try:
            yield pool
        finally:
            pool.close()
