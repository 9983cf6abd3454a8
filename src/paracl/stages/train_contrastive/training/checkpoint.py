"""Resumable training: where a run keeps its state, what makes it reusable, and SIGTERM.

Why a checkpoint outside the stage's outputs: DVC deletes a stage's declared outs
(`models/encoders/<method>/`) before it runs the stage again, so the state of a killed run
lives beside them, in `models/encoders/<method>.partial-<key>/state.pt` (ignored by git
like all of models/; DVC tracks only the declared outs). `key` fingerprints everything
the trained weights depend on (the method's params, seed, lang, device type, number of
processes and the sha256 of the input, the dev set and the starting model), so a
checkpoint is never resumed under other params or data; a rerun with another key deletes
the stale directory, and the stage deletes its own once the outputs are written.

The file holds the weights (and EBSIM's heads), AdamW and scheduler state, every rank's
RNG states (torch CPU/CUDA, Python, NumPy), the loop position (epoch, next batch, the
mined mega-batch when it stopped inside one), the early-stopping state and everything
logged so far (replayed into the loggers on resume). The trainer writes it; the loop
itself is in trainer.py. It is replaced atomically (temporary file, fsync, rename), so a
kill while saving leaves the previous checkpoint usable. Rank 0 writes; every rank loads.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from paracl.core.distributed.gather import world_size
from paracl.core.io import ArtifactError, atomic_path, fingerprint, input_checksum

log = logging.getLogger(__name__)

# Bump when the saved state's layout changes: older checkpoints then get another key.
FORMAT = 1
# Params that cannot change the trained weights, so they do not invalidate a checkpoint:
# other methods' inputs, the checkpoint interval, and `processes` (the actual number of
# processes, which does change dropout masks, is fingerprinted instead).
NOT_KEYED = ("methods", "checkpoint_every", "processes")


class TrainingInterrupted(RuntimeError):
    """SIGTERM arrived; the state at the last finished step was saved for a rerun."""


@dataclass(frozen=True)
class Checkpoint:
    """The resumable state of one training run: `dir/state.pt`, saved every `every` steps
    (None: only on SIGTERM). Only rank 0 writes (`save`), every rank reads (`load`)."""

    dir: Path
    every: int | None = None

    @classmethod
    def beside(cls, out: str | Path, key: str, every: int | None = None) -> Checkpoint:
        """The checkpoint of the run writing `out`: `<out>.partial-<key>/`."""
        out = Path(out)
        return cls(out.with_name(f"{out.name}.partial-{key}"), every)

    @property
    def file(self) -> Path:
        return self.dir / "state.pt"

    def due(self, step: int) -> bool:
        return self.every is not None and step % self.every == 0

    def discard_stale(self) -> None:
        """Delete checkpoints of the same output under other keys, and temporaries a kill
        during a save left here (rank 0, before training)."""
        name = self.dir.name.rsplit(".partial-", 1)[0]
        for stale in self.dir.parent.glob(f"{name}.partial-*"):
            if stale != self.dir and stale.is_dir():
                log.info("removing %s (a checkpoint of other params or inputs)", stale)
                shutil.rmtree(stale)
        for tmp in self.dir.glob(".*.tmp"):
            tmp.unlink(missing_ok=True)

    def load(self) -> dict[str, Any] | None:
        """The saved state, or None when there is none. Tensors come back on the CPU."""
        if not self.file.is_file():
            return None
        try:
            state = torch.load(self.file, map_location="cpu", weights_only=True)
        except (OSError, RuntimeError, EOFError) as err:
            raise ArtifactError(
                f"{self.file}: unreadable checkpoint ({err}); delete {self.dir} to start over"
            ) from None
        if state.get("format") != FORMAT:
            raise ArtifactError(
                f"{self.file}: checkpoint format {state.get('format')}, not {FORMAT}"
            )
        return state

    def save(self, state: dict[str, Any]) -> None:
        """Replace the checkpoint atomically; on disk (fsync) before the rename."""
        with atomic_path(self.file) as tmp:
            with open(tmp, "wb") as f:
                torch.save({**state, "format": FORMAT}, f)
                f.flush()
                os.fsync(f.fileno())

    def clear(self) -> None:
        """The run finished and its outputs are written: the state is not needed again."""
        shutil.rmtree(self.dir, ignore_errors=True)


def run_key(
    method: str,
    cfg: dict,
    *,
    seed: int,
    lang: str,
    device_type: str,
    processes: int,
    inputs: list[str | Path],
) -> str:
    """Fingerprint of what a method's trained weights depend on: its params section (less
    NOT_KEYED), the input path, seed, lang, device type, process count, and the sha256 of
    each of `inputs` (training data, dev set, starting model dir) that exists; one that
    does not is keyed by its path (the stage then stops on it anyway)."""
    settings = {k: v for k, v in cfg.items() if k not in NOT_KEYED}
    sums = [(str(p), input_checksum(p) if Path(p).exists() else None) for p in inputs]
    return fingerprint(
        FORMAT,
        method,
        cfg["methods"][method],
        settings,
        seed,
        lang,
        device_type,
        processes,
        sums,
    )


def key_on_main(compute: Callable[[], str]) -> str:
    """compute() on rank 0, the same key on every rank: one hashing of the inputs, and
    no chance that ranks pick different checkpoints."""
    if world_size() == 1:
        return compute()
    box = [compute() if torch.distributed.get_rank() == 0 else None]
    torch.distributed.broadcast_object_list(box, 0)
    return box[0]


# ---- RNG state ----------------------------------------------------------------------


def rng_state(device: torch.device) -> dict[str, Any]:
    """This process's generators: what dropout, shuffles and samplers draw from next."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": (kind, keys.tolist(), pos, has_gauss, gauss),
    }
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    elif device.type == "mps":
        state["mps"] = torch.mps.get_rng_state()
    return state


def set_rng_state(state: dict[str, Any], device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, gauss))
    if device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"], device)
    elif device.type == "mps":
        torch.mps.set_rng_state(state["mps"])


def all_rng_states(device: torch.device) -> list[dict[str, Any]]:
    """Every rank's RNG state, in rank order (collective: all ranks call it together);
    ranks draw their own dropout masks, so rank 0 saves them all."""
    mine = rng_state(device)
    if world_size() == 1:
        return [mine]
    out: list[Any] = [None] * world_size()
    torch.distributed.all_gather_object(out, mine)
    return out


# ---- SIGTERM ------------------------------------------------------------------------


@contextlib.contextmanager
def sigterm_requests(enabled: bool = True) -> Iterator[Callable[[], bool]]:
    """Yield `requested()`: True once SIGTERM arrived. The handler only sets a flag, so the
    loop can finish its step and save; the previous handler is restored afterwards.
    A no-op (never requested) when disabled or off the main thread (signals need it)."""
    flag = threading.Event()
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield flag.is_set
        return

    def handler(signum: int, frame: object) -> None:
        if not flag.is_set():
            log.warning("SIGTERM: saving a checkpoint at the end of this step, then stopping")
        flag.set()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield flag.is_set
    finally:
        signal.signal(signal.SIGTERM, previous)
