"""Many sampled completions at once on llama.cpp: sequences decoded side by side.

llama-cpp-python's `Llama.create_completion` decodes one sequence at a time, and on 2 CPU
cores gemma-3-270m then spends each step reading its weights for a single token.
`BatchedCompletions` decodes up to `n_seq` sequences in one context, so that every step
reads the weights once for all of them (docs/benchmarks.md, "roundtrip and tag": 2.16× the
one-at-a-time throughput here). Two kinds of shared work are done once:

- the prefix every prompt starts with (the few-shot examples) is read into sequence 0
  and shared by all sequences (`llama_memory_seq_cp`);
- a prompt sampled under several settings (the paper's grid) is read once and forked,
  one sequence per setting.

Sampling is done here, not by llama.cpp's sampler: top-k at temperature T (greedy when k
is None), from a numpy generator per completion whose seed the caller gives. A
completion ends at its first line break, at an end-of-generation token, or at its
token limit.

Determinism: the same prompts in the same order with the same `n_seq` and threads give
the same text. They must stay the same, because a sequence's logits move (by up to ~0.5
on gemma-3-270m, measured) with the sequences decoded beside it: llama.cpp picks its
matmul kernels by the batch's shape. Callers therefore decode fixed groups (a shard,
in order).
"""

from __future__ import annotations

import ctypes
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

MAX_BATCH_TOKENS = 2048  # tokens handed to one llama_decode call (prompts joining + steps)


def load_cpu_backend() -> str:
    """Make sure llama.cpp has its CPU backend before the first model; return the file of
    the one that runs (e.g. libggml-cpu-sapphirerapids.so; "" where /proc is not there).

    `make setup LLAMA=portable` builds ggml's runtime CPU dispatch: one libggml-cpu-<level>.so
    per x86 level (AVX2, AVX-512, AMX ...) beside llama_cpp's libraries, and ggml loads the
    best one this CPU runs from the folder named at build time. Loading from llama_cpp/lib here finds
    them in a virtualenv that has moved since. A build with one CPU backend linked in (no
    such files) has it registered already, and nothing is loaded."""
    import llama_cpp

    lib = Path(llama_cpp.__file__).parent / "lib"
    ggml = ctypes.CDLL(str(lib / "libggml.so"))
    ggml.ggml_backend_reg_count.restype = ctypes.c_size_t
    if ggml.ggml_backend_reg_count() == 0 and any(lib.glob("libggml-cpu-*.so")):
        ggml.ggml_backend_load_all_from_path(str(lib).encode())
    maps = Path("/proc/self/maps")
    found = re.findall(r"\S*/(libggml-cpu[-\w]*\.so)", maps.read_text()) if maps.exists() else []
    return found[0] if found else ""


@dataclass(frozen=True)
class Draw:
    """How one completion is sampled: top-k at `temperature` (greedy when top_k is None),
    with its own seed, for at most `max_tokens` tokens."""

    top_k: int | None
    temperature: float
    seed: int
    max_tokens: int


@dataclass
class _Sequence:
    """One completion in flight: where its result goes (prompt, draw) and its state."""

    index: tuple[int, int]
    draw: Draw
    rng: np.random.Generator
    feed: list[int]
    pos: int
    pieces: list[bytes] = field(default_factory=list)


class BatchedCompletions:
    """Completions of `prefix + prompt` for many prompts, `n_seq` sequences at a time, on
    the weights of a loaded `llama_cpp.Llama` (its tokenizer too)."""

    def __init__(self, llm, prefix: str, n_seq: int = 16, threads: int = 1):
        self.llm, self.n_seq, self.threads = llm, n_seq, threads
        # The prefix's last token may merge with the prompt that follows: keep it out.
        self.prefix = llm.tokenize(prefix.encode(), add_bos=True)[:-1]
        self.n_vocab = llm.n_vocab()
        self.ctx = None
        self.per_seq = 0

    def _context(self, per_seq: int) -> None:
        """A context with room for `per_seq` tokens after the prefix in every sequence, the
        prefix read into sequence 0 and shared by all (made again only to grow)."""
        import llama_cpp

        if self.ctx is not None and per_seq <= self.per_seq:
            return
        self.close()
        per_seq = 256 * math.ceil(per_seq / 256)
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = len(self.prefix) + self.n_seq * per_seq
        params.n_batch = max(MAX_BATCH_TOKENS, per_seq)
        params.n_ubatch = 512
        params.n_seq_max = self.n_seq
        params.kv_unified = True  # the prefix's cells are shared, not copied
        params.swa_full = True  # gemma-3's sliding-window layers keep every shared cell
        params.n_threads = params.n_threads_batch = self.threads
        chatter = logging.getLogger("llama-cpp-python")  # its level filters llama.cpp's log
        level, _ = chatter.level, chatter.setLevel(logging.CRITICAL)  # (a notice a context)
        try:
            self.ctx = llama_cpp.llama_init_from_model(self.llm._model.model, params)
        finally:
            chatter.setLevel(level)
        if self.ctx is None:
            raise RuntimeError("llama.cpp could not create a context")
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm._model.model)
        self.batch = llama_cpp.llama_batch_init(params.n_batch, 0, self.n_seq)
        self.per_seq = per_seq
        for pos, token in enumerate(self.prefix):
            self._add(token, pos, 0, logits=False)
        self._decode()
        for seq in range(1, self.n_seq):
            llama_cpp.llama_memory_seq_cp(self.memory, 0, seq, -1, -1)

    def close(self) -> None:
        import llama_cpp

        if self.ctx is not None:
            llama_cpp.llama_batch_free(self.batch)
            llama_cpp.llama_free(self.ctx)
            self.ctx = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass

    def _add(self, token: int, pos: int, seq: int, logits: bool) -> int:
        i = self.batch.n_tokens
        self.batch.token[i] = token
        self.batch.pos[i] = pos
        self.batch.n_seq_id[i] = 1
        self.batch.seq_id[i][0] = seq
        self.batch.logits[i] = logits
        self.batch.n_tokens = i + 1
        return i

    def _decode(self) -> None:
        import llama_cpp

        code = llama_cpp.llama_decode(self.ctx, self.batch)
        self.batch.n_tokens = 0
        if code != 0:
            raise RuntimeError(f"llama.cpp decode failed (code {code})")

    def _logits(self, row: int) -> np.ndarray:
        import llama_cpp

        pointer = llama_cpp.llama_get_logits_ith(self.ctx, row)
        return np.ctypeslib.as_array(
            ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), (self.n_vocab,)
        )

    def tokens(self, text: str) -> int:
        """Tokens of `text` on its own (for the callers' length limits)."""
        return len(self.llm.tokenize(text.encode(), add_bos=False))

    def complete(self, prompts: Sequence[str], draws: Sequence[Sequence[Draw]]) -> list[list[str]]:
        """For each prompt, one completion per Draw of `draws[i]` (its grid: the prompt is
        read once, then forked); returns the texts in the same nesting, stripped."""
        jobs = self._jobs(prompts, draws)
        if not jobs:
            return []
        self._context(max(len(t) + max(d.max_tokens for d in g) + 1 for t, g in jobs))
        results: list[list[str]] = [[""] * len(g) for _, g in jobs]
        free = list(range(self.n_seq))[::-1]
        active: dict[int, _Sequence] = {}  # slot -> sequence
        queue = list(range(len(jobs)))[::-1]
        while queue or active:
            forks = self._admit(jobs, queue, free, active)
            rows = self._feed(active)
            self._decode()
            self._fork(forks, rows, active)
            self._take_tokens(rows, active, results, free)
            free.sort(reverse=True)
        return results

    def _jobs(
        self, prompts: Sequence[str], draws: Sequence[Sequence[Draw]]
    ) -> list[tuple[list[int], list[Draw]]]:
        """Each prompt's tokens after the shared prefix, with its draws (checked)."""
        jobs = []
        for prompt, grid in zip(prompts, draws, strict=True):
            tokens = self.llm.tokenize(prompt.encode(), add_bos=True)
            if tokens[: len(self.prefix)] != self.prefix:
                raise ValueError(f"prompt does not start with the shared prefix: {prompt[:60]!r}")
            if len(grid) > self.n_seq:
                raise ValueError(f"{len(grid)} draws of one prompt exceed n_seq={self.n_seq}")
            jobs.append((tokens[len(self.prefix) :], list(grid)))
        return jobs

    def _admit(self, jobs: list, queue: list[int], free: list[int], active: dict) -> list:
        """Admit whole prompts while slots and batch room last (prompt order kept); return
        (reading slot, slots it forks into) of each admitted prompt."""
        forks: list[tuple[int, list[int]]] = []
        budget = MAX_BATCH_TOKENS - len(active)
        while queue and len(jobs[queue[-1]][1]) <= len(free):
            tokens, grid = jobs[queue[-1]]
            if len(tokens) > budget and active:
                break
            j = queue.pop()
            slots = [free.pop() for _ in grid]
            for k, (slot, draw) in enumerate(zip(slots, grid, strict=True)):
                rng = np.random.default_rng(draw.seed)
                feed = tokens if k == 0 else []
                active[slot] = _Sequence((j, k), draw, rng, feed, len(self.prefix))
            forks.append((slots[0], slots[1:]))
            budget -= len(tokens)
        return forks

    def _feed(self, active: dict[int, _Sequence]) -> dict[int, int]:
        """Add each sequence's pending tokens to the batch; {slot: its logits row}."""
        rows = {}
        for slot, seq in active.items():
            for n, token in enumerate(seq.feed):
                row = self._add(token, seq.pos + n, slot, logits=n == len(seq.feed) - 1)
            if seq.feed:
                rows[slot] = row
                seq.pos += len(seq.feed)
        return rows

    def _fork(self, forks: list, rows: dict[int, int], active: dict[int, _Sequence]) -> None:
        """Copy a prompt read once into the slots of its other draws."""
        import llama_cpp

        for reader, others in forks:
            for slot in others:
                llama_cpp.llama_memory_seq_cp(self.memory, reader, slot, len(self.prefix), -1)
                rows[slot], active[slot].pos = rows[reader], active[reader].pos

    def _take_tokens(self, rows: dict, active: dict, results: list, free: list[int]) -> None:
        """Sample one token per row; a sequence that ends (newline, EOG, max tokens) writes
        its text and frees its slot."""
        import llama_cpp

        picks = self._pick_all(rows, active)
        for slot in sorted(rows):
            seq = active[slot]
            token = picks[slot]
            piece = (
                b"\n"
                if llama_cpp.llama_vocab_is_eog(self.vocab, token)
                else self.llm.detokenize([token])
            )
            seq.pieces.append(piece.split(b"\n", 1)[0])
            if b"\n" in piece or len(seq.pieces) >= seq.draw.max_tokens:
                j, k = seq.index
                results[j][k] = b"".join(seq.pieces).decode("utf-8", "ignore").strip()
                llama_cpp.llama_memory_seq_rm(self.memory, slot, len(self.prefix), -1)
                del active[slot]
                free.append(slot)
            else:
                seq.feed = [token]

    def _pick_all(self, rows: dict[int, int], active: dict[int, _Sequence]) -> dict[int, int]:
        """One token per row: greedy rows by argmax, sampled rows by one torch.topk over
        every row of the same k, on all torch threads while llama.cpp's wait (one call a
        row left a core idle for ~a tenth of the round trip). torch.topk runs the same
        kernel on each row of a matrix as on that row alone: the same tokens."""
        picks: dict[int, int] = {}
        by_k: dict[int, list[int]] = {}
        for slot in sorted(rows):
            k = active[slot].draw.top_k
            if k is None:
                picks[slot] = int(np.argmax(self._logits(rows[slot])))
            else:
                by_k.setdefault(k, []).append(slot)
        for k, slots in by_k.items():
            logits = torch.from_numpy(np.stack([self._logits(rows[slot]) for slot in slots]))
            values, ids = torch.topk(logits, k)
            for slot, row_values, row_ids in zip(slots, values, ids, strict=True):
                picks[slot] = self._draw(row_values, row_ids, active[slot])
        return picks

    @staticmethod
    def _sample(logits: np.ndarray, seq: _Sequence) -> int:
        """Greedy, or top-k at temperature T from the sequence's own generator (one row:
        the reference `_pick_all` is tested against)."""
        if seq.draw.top_k is None:
            return int(np.argmax(logits))
        values, ids = torch.topk(torch.from_numpy(logits), seq.draw.top_k)
        return BatchedCompletions._draw(values, ids, seq)

    @staticmethod
    def _draw(values: torch.Tensor, ids: torch.Tensor, seq: _Sequence) -> int:
        """One of the top-k (`values`, `ids`) at temperature T, from the sequence's generator."""
        probs = torch.softmax(values.double() / seq.draw.temperature, dim=0).numpy()
        pick = int(np.searchsorted(np.cumsum(probs), seq.rng.random() * probs.sum(), side="right"))
        return int(ids[min(pick, len(ids) - 1)])
