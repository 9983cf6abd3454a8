"""Fill noun-chunk blanks with a causal LM that sees both sides of every blank.

Why: no T5 weights exist offline, but packaged causal LMs do (SmolLM2, gemma-3). A
causal LM only reads leftwards, so each anchor gets `num_samples` sampled hypotheses
and they are reranked by the LM's mean token log-likelihood of the *complete*
sentence: a fill that does not fit its right-hand context makes the following tokens
unlikely and the hypothesis loses. The right context also ends a fill: the first token
of the text after a blank competes with the fill's next token, and when it is sampled
the fill is over (so the LM picks the fill's length); a fill stops anyway after its
chunk's token count plus `fill_slack_tokens` (it is then marked truncated).

One pass per hypothesis, token by token with a KV cache: the text between blanks is
forced, fills are sampled (top-k, temperature) with tokens no fill may hold masked out
(fills.bad_char), and the log-probability of every token (forced or sampled, under the
unmasked distribution) is summed on the way, so the rerank score costs no second
forward pass. Every row starts at BOS at position 0 and moves one token per step, so a
batch needs no padding (no left padding, no position ids) and a row's result does not
depend on its neighbours except through float rounding. One more row per anchor forces
the original chunks: the anchor's own score, for the perplexity ratio. Each row samples
from its own torch.Generator seeded from the run seed, the text and the row number.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from paracl.core.device import DEFAULT_PRECISION, autocast
from paracl.core.models import check_model_dir
from paracl.parts.filler.fills import bad_char, is_dangling, is_garbled, is_original
from paracl.parts.filler.masking import SENTINEL_RE, Masked

log = logging.getLogger(__name__)


MAX_ROW_TOKENS = 192  # longer anchors are skipped (bounds the KV cache)


@dataclass(frozen=True)
class Sampling:
    """The causal LM's keys of the `corrupt` section (params.yaml says what each is)."""

    num_samples: int  # hypotheses per anchor
    top_k: int
    temperature: float
    fill_slack_tokens: int  # a fill may run this many tokens past its chunk's
    batch_size: int  # rows (hypotheses) per forward pass
    max_blanks: int  # chunks one hypothesis replaces (the others stay); 0 = all
    quantize: bool  # CPU: dynamic int8 Linear layers (~2.5x faster)


@dataclass(frozen=True)
class Hypothesis:
    fills: tuple[str | None, ...]  # per blank, as decoded (None: the chunk kept)
    score: float  # mean token log-probability of the whole sentence
    truncated: int  # fills that hit their token budget
    clean: bool  # every fill decoded to text that re-encodes to the same prefix


@dataclass(frozen=True)
class Filled:
    anchor_score: float
    hyps: tuple[Hypothesis, ...]


def drop_reason(h: Hypothesis, chunks: Sequence[str]) -> str | None:
    """The count a hypothesis is dropped under (fills.py's rules), None when usable."""
    pairs = [(f.strip(), c) for f, c in zip(h.fills, chunks, strict=True) if f is not None]
    if not h.clean or any(is_garbled(f, c) for f, c in pairs):
        return "dropped_garbled"
    if h.truncated:
        return "dropped_truncated"
    if any(is_dangling(f) for f, _ in pairs):
        return "dropped_dangling"
    if any(is_original(f, c) for f, c in pairs):
        return "dropped_fill_is_original"
    return None


def row_seed(seed: int, text: str, row: int) -> int:
    """A seed from the run seed, the anchor text and the row: batching cannot change it."""
    digest = hashlib.sha256(f"{seed}\x00corrupt\x00{row}\x00{text}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


def bos_id(tokenizer) -> int:
    """The token every row starts with: the tokenizer's own BOS where it adds one (gemma:
    <bos>), else GPT-2 / SmolLM2's document separator, else BOS or EOS (also the start
    of every sequence the filler is adapted on, paracl.parts.filler.adapt_causal)."""
    probe = tokenizer("a", add_special_tokens=True)["input_ids"]
    if tokenizer.bos_token_id is not None and probe and probe[0] == tokenizer.bos_token_id:
        return tokenizer.bos_token_id
    if "<|endoftext|>" in tokenizer.get_vocab():
        return tokenizer.convert_tokens_to_ids("<|endoftext|>")
    return tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id


def is_causal_lm(path: str | Path) -> bool:
    """Which filler a model directory needs: its config says encoder-decoder (T5) or not."""
    from transformers import AutoConfig

    return not AutoConfig.from_pretrained(path).is_encoder_decoder


@dataclass
class _Plan:
    """One anchor's pieces: forced[i] is the text before blank i (forced[-1] after the
    last); space[i] whether blank i's fill starts a new word; budget[i] in tokens."""

    forced: list[list[int]]
    space: list[bool]
    budget: list[int]
    originals: list[list[int]]  # the chunks' tokens, for the anchor row
    words: list[bool]  # length in words (space-delimited text) or else in characters
    length: list[int]  # the chunk's length in those units
    prompt: list[int]  # the masked sentence shown first (not scored)
    capped: list[bool]  # the budget is a caller's cap (a fill reaching it is kept, not truncated)


class CausalFiller:
    """A causal LM that fills `Masked` sentences (module docstring)."""

    n_sentinels = 10**6  # no sentinel vocabulary limits the number of blanks

    def __init__(
        self,
        path: str | Path,
        device: torch.device,
        sampling: Sampling,
        seed: int,
        precision: str = DEFAULT_PRECISION,
    ):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        check_model_dir(path)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        self.model.to(device).eval()
        if sampling.quantize and device.type == "cpu":
            import warnings

            warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")
            self.model = torch.ao.quantization.quantize_dynamic(
                self.model, {torch.nn.Linear}, dtype=torch.qint8
            )
            precision = "fp32"  # int8 dynamic Linear layers take fp32 activations, not bf16
        self.device, self.sampling, self.seed, self.precision = device, sampling, seed, precision
        tok = self.tokenizer
        self.bos = bos_id(tok)
        self.eos = {t for t in (tok.eos_token_id, self.bos) if t is not None}
        vocab = self.model.config.get_text_config().vocab_size
        texts = tok.batch_decode([[i] for i in range(len(tok))])
        special = set(tok.all_special_ids)
        banned = torch.ones(vocab, dtype=torch.bool)  # ids past the tokenizer stay banned
        spaced = torch.zeros(vocab, dtype=torch.bool)
        alnum = torch.zeros(vocab, dtype=torch.bool)
        for i, text in enumerate(texts[:vocab]):
            word = text.strip()
            banned[i] = i in special or not word or any(bad_char(c) for c in word)
            spaced[i] = text[:1].isspace()
            alnum[i] = word[:1].isalnum()
        self._banned, self._spaced = banned.to(device), spaced.to(device)
        self._first = {  # a fill's first token: a word start, spaced as the chunk was
            True: (~banned & spaced & alnum).to(device),
            False: (~banned & ~spaced & alnum).to(device),
        }
        self.spaced = spaced.tolist()
        self.chars = [len("".join(t.split())) for t in texts[:vocab]] + [0] * (vocab - len(texts))

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []

    def plan(self, m: Masked, cap: int | None = None) -> _Plan:
        """Tokenize the text between blanks once: trailing whitespace before a blank goes
        to the fill (its first token then starts with a space, as the LM writes words).
        cap: at most this many tokens a fill (a span budget; reaching it ends the fill)."""
        parts = SENTINEL_RE.split(m.masked)[::2]
        forced, space, budget, originals, words, length = [], [], [], [], [], []
        capped = []
        for i, chunk in enumerate(m.chunks):
            before = parts[i]
            space.append(before[-1:].isspace())
            words.append(space[-1] or parts[i + 1][:1].isspace() or " " in chunk)
            length.append(len(chunk.split()) if words[-1] else len("".join(chunk.split())))
            forced.append(self._ids(before.rstrip() if space[-1] else before))
            originals.append(self._ids((" " if space[-1] else "") + chunk))
            own = len(originals[-1]) + self.sampling.fill_slack_tokens
            capped.append(cap is not None and cap < own)
            budget.append(cap if capped[-1] else own)
        forced.append(self._ids(parts[-1]))
        prompt = self.prompt_ids(m)
        return _Plan(forced, space, budget, originals, words, length, prompt, capped)

    def prompt_ids(self, m: Masked) -> list[int]:
        """The masked sentence with its blanks shown as ___, before the sentence is
        written: every fill is then sampled knowing the text on both sides."""
        template = SENTINEL_RE.sub("___", m.masked)
        return [self.bos, *self._ids(f"{template}\n")]  # no instruction: its words leak

    def row_tokens(self, plan: _Plan) -> int:
        return len(plan.prompt) + sum(map(len, plan.forced)) + sum(plan.budget)

    @torch.inference_mode()
    def fill(
        self, masked: Sequence[Masked], caps: Sequence[int | None] | None = None
    ) -> list[Filled | None]:
        """num_samples hypotheses and the anchor's score per input (None: too long);
        caps: per input, at most that many tokens a fill (None: the chunk's + slack)."""
        s = self.sampling
        caps = caps if caps is not None else [None] * len(masked)
        plans = [self.plan(m, cap) for m, cap in zip(masked, caps, strict=True)]
        fits = [i for i, plan in enumerate(plans) if self.row_tokens(plan) <= MAX_ROW_TOKENS]
        fits.sort(key=lambda i: (self.row_tokens(plans[i]), i))  # length buckets
        per = s.num_samples + 1  # rows per anchor; the last one is the anchor itself
        group = max(1, s.batch_size // per)
        batches = [fits[k : k + group] for k in range(0, len(fits), group)]
        done: dict[tuple[int, int], tuple] = {}
        for batch in tqdm(batches, desc="LM fill", mininterval=10, disable=len(batches) < 5):
            states = [
                _Row(plans[i], r == s.num_samples, row_seed(self.seed, masked[i].text, r), s)
                for i in batch
                for r in range(per)
            ]
            outs = self._run([plans[i].prompt for i in batch], states, per)
            for k, out in enumerate(outs):
                done[(batch[k // per], k % per)] = out
        results: list[Filled | None] = []
        for i in range(len(masked)):
            if (i, 0) not in done:
                results.append(None)
                continue
            hyps = []
            for r in range(s.num_samples):
                score, fills_ids, truncated = done[(i, r)]
                texts = self._decode(plans[i], fills_ids)
                clean = all("\ufffd" not in t for t in texts if t is not None)
                hyps.append(Hypothesis(texts, score, truncated, clean))
            results.append(Filled(anchor_score=done[(i, s.num_samples)][0], hyps=tuple(hyps)))
        return results

    def _decode(self, plan: _Plan, fills_ids: list) -> tuple[str | None, ...]:
        """Each fill decoded in its left context, so that a SentencePiece word start or a
        character split over byte tokens comes out right (U+FFFD where it does not)."""
        texts: list[str | None] = []
        prefix: list[int] = []
        for i, ids in enumerate(fills_ids):
            prefix += plan.forced[i]
            if ids is None:  # not filled: the original chunk stays
                texts.append(None)
                prefix += plan.originals[i]
                continue
            head = self.tokenizer.decode(prefix)
            whole = self.tokenizer.decode(prefix + ids)
            texts.append(whole[len(head) :] if whole.startswith(head) else "\ufffd")
            prefix += ids
        return tuple(texts)

    def _run(self, prompts: list[list[int]], rows: list[_Row], per: int) -> list[tuple]:
        """Read each anchor's prompt once (left padded), copy its KV cache to the anchor's
        `per` rows, then step all rows together until each has its last token; rows that
        finish leave the batch and the cache, so the rest do not carry them."""
        from transformers import DynamicCache

        width = max(map(len, prompts))
        ids = torch.full((len(prompts), width), self.bos, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for b, prompt in enumerate(prompts):
            ids[b, width - len(prompt) :] = torch.tensor(prompt)
            mask[b, width - len(prompt) :] = 1
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache(config=self.model.config)
        logits = self._forward(
            ids.to(self.device), mask.to(self.device), pos.to(self.device), cache
        )
        cache.batch_repeat_interleave(per)
        logits = logits.repeat_interleave(per, dim=0)[:, -1, :].float()
        mask = mask.repeat_interleave(per, dim=0).to(self.device)
        pos = pos[:, -1:].repeat_interleave(per, dim=0).to(self.device)
        active = list(range(len(rows)))
        while True:
            logprobs = torch.log_softmax(logits, dim=-1)
            feed = torch.tensor(
                [[rows[r].step(logprobs[b], logits[b], self)] for b, r in enumerate(active)]
            )
            keep = [b for b, r in enumerate(active) if not rows[r].finished]
            if not keep:
                break
            if len(keep) < len(active):
                index = torch.tensor(keep, device=self.device)
                cache.batch_select_indices(index)
                feed, mask, pos = feed[keep], mask[index], pos[index]
                active = [active[b] for b in keep]
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            pos = pos + 1
            logits = self._forward(feed.to(self.device), mask, pos, cache)[:, -1, :].float()
        return [(r.mean(), r.fills, r.truncated) for r in rows]

    def _forward(self, ids, mask, pos, cache) -> torch.Tensor:
        """The last position's logits of one cached step, under `precision`'s autocast."""
        with autocast(self.device, self.precision):
            out = self.model(
                input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache,
                use_cache=True,
            )  # fmt: skip
        return out.logits[:, -1:, :]

    def sample(self, logits: torch.Tensor, allowed: torch.Tensor, gen: torch.Generator) -> int:
        """Top-k sample among `allowed` tokens (temperature), with the row's generator."""
        masked = logits.masked_fill(~allowed, float("-inf")) / self.sampling.temperature
        k = min(self.sampling.top_k, int(allowed.sum()))
        top, idx = masked.topk(k)
        pick = torch.multinomial(torch.softmax(top, dim=-1).cpu(), 1, generator=gen)
        return int(idx[int(pick)])


class _Row:
    """One hypothesis (or the anchor row) moving through its program a token at a time.

    The program alternates ("force", ids) and ("fill", blank) pieces; the anchor row's
    program is a single forced piece holding the original chunks.
    """

    def __init__(self, plan: _Plan, anchor: bool, seed: int, s: Sampling):
        self.plan = plan
        self.gen = torch.Generator().manual_seed(seed)
        n = len(plan.budget)
        active: set[int] = set()  # the blanks this row fills; the others keep their chunk
        if not anchor:
            picks = torch.randperm(n, generator=self.gen).tolist()
            active = set(picks[: s.max_blanks] if s.max_blanks else picks)
        self.program: list[tuple] = []
        for i in range(n):
            self.program.append(("force", plan.forced[i]))
            self.program.append(("fill", i) if i in active else ("force", plan.originals[i]))
        self.program.append(("force", plan.forced[n]))
        self.fills = [[] if i in active else None for i in range(n)]
        # per blank: fill lengths of the chunk's or one more (rows differ), reranked later
        self.delta = [((seed >> 3) + i) % 2 for i in range(n)]
        self.p = self.pos = 0
        self.truncated = 0
        self.total, self.steps = 0.0, 0
        self.finished = False
        self._skip()

    def _skip(self) -> None:
        """Move past forced pieces already consumed; finished after the last piece."""
        while self.p < len(self.program):
            kind, arg = self.program[self.p]
            if kind == "fill" or self.pos < len(arg):
                return
            self.p, self.pos = self.p + 1, 0
        self.finished = True

    def _next_piece(self, pos: int) -> None:
        self.p, self.pos = self.p + 1, pos
        self._skip()

    def step(self, logprobs: torch.Tensor, logits: torch.Tensor, filler: CausalFiller) -> int:
        """Choose the next token, add its log-probability, move on; return the token."""
        if self.finished:  # a fill that ended the text
            return filler.bos
        kind, arg = self.program[self.p]
        if kind == "force":
            token = arg[self.pos]
            self._score(logprobs, token)
            self.pos += 1
            self._skip()
            return token
        plan, fill = self.plan, self.fills[arg]
        target = max(1, plan.length[arg] + self.delta[arg])
        if fill and not plan.words[arg] and sum(filler.chars[t] for t in fill) >= target:
            return self._end_and_step(logprobs, logits, filler)
        after = plan.forced[arg + 1]
        last = arg + 1 == len(plan.budget)
        stops = {after[0]} if after else (filler.eos if last else set())
        if fill:
            allowed = ~filler._banned
            if stops:
                allowed = allowed.clone()
                allowed[sorted(stops)] = True
        else:
            allowed = filler._first[plan.space[arg]]
        token = filler.sample(logits, allowed, self.gen)
        if fill and token in stops:
            if not after:  # end of text: not a token of the sentence, not scored
                self.finished = True
                return token
            self._score(logprobs, token)
            self._next_piece(1)
            return token
        if fill and plan.words[arg] and filler.spaced[token]:
            if sum(filler.spaced[t] for t in fill) + (not filler.spaced[fill[0]]) >= target:
                return self._end_and_step(logprobs, logits, filler)  # a word too many
        fill.append(token)
        self._score(logprobs, token)
        if len(fill) >= plan.budget[arg]:
            self.truncated += not plan.capped[arg]  # a caller's cap ends the fill, kept
            self._next_piece(0)
        return token

    def _end_and_step(self, logprobs, logits, filler: CausalFiller) -> int:
        """The fill is long enough: its blank is closed and the text after it goes on
        from this same distribution (the end of text if nothing follows)."""
        self._next_piece(0)
        if self.finished:
            return filler.bos
        return self.step(logprobs, logits, filler)

    def _score(self, logprobs: torch.Tensor, token: int) -> None:
        self.total += float(logprobs[token])
        self.steps += 1

    def mean(self) -> float:
        return self.total / max(self.steps, 1)
