"""Stage roundtrip: round-trip translation with temperature softmax + top-k sampling
(paper §3.2, §4.1).

Beam search round trips mostly give pairs that are close on the surface (Figure 1);
sampling from a flattened (T > 1), top-k-truncated distribution gives diverse
candidates, and the tagger filters the bad ones afterwards. The paper uses
(k, T) ∈ {(20, 3.0), (30, 2.0)} in each direction: 2 pivots × 2 back-translations =
4 candidates per sentence. Greedy decoding is the paper's round-trip baseline.

The translators, their seeding and the shard worker are paracl.parts.translate
(paraphrase_pairs runs them too); this module holds the stage's section, its decoding
settings and the sharded run.

Sharded execution (`round_trip_sharded` → paracl.core.distributed.sharded.map_shards):
`RoundTripJob.setup` loads both translators once per worker (a Ray actor, or the driver
process locally; stand-ins are built inside the worker, deterministically) and
`RoundTripJob.process` translates one shard. The seeded `max_sentences` sample is drawn on
the driver from the id column alone, then (id, text) is streamed: the driver holds the
corpus ids while drawing, then the picked ids and the shards in flight, never the corpus
text. Sentences keep corpus order; shard i holds sentences [i × shard_size,
(i + 1) × shard_size) of the sample, so the output bytes depend on shard_size but not on
the engine or workers.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Literal

from paracl.core import schemas
from paracl.core.device import seed_everything, select_device
from paracl.core.distributed.sharded import CountedShards, Engine, map_shards, stream_shards
from paracl.core.io import fingerprint, input_checksum
from paracl.core.key_figures import write_metrics
from paracl.core.params import Lang, ParamsError, RunSettings, RunWide, Section, param
from paracl.core.sampling import iter_sample
from paracl.core.stage import args
from paracl.parts.translate import PAPER_MODELS, RoundTripJob, Sampling, describe

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class Roundtrip(Section):
    forward_model: str = param(help="hub id, local dir, or tiny-random:<arch> stand-in")
    backward_model: str
    src_lang_code: str | None = param(help="NLLB/M2M source code, e.g. eng_Latn")
    pivot_lang_code: str | None = param(help="NLLB/M2M pivot code, e.g. deu_Latn")
    pivot: dict[Lang, str] = param(help="prompted causal LM: pivot language per corpus language")
    mode: Literal["sample", "greedy"]
    top_k: list[int] = param(min=1)
    temperature: list[float] = param(min=0.01)
    num_beams: int = param(min=1)
    max_sentences: int | None = param(min=1)
    batch_size: int = param(min=1)
    shard_size: int = param(min=1)
    max_new_tokens: int = param(min=1)
    length_ratio: float = param(min=0.1)


class RoundtripBaselines(Section):
    decodings: list[Literal["greedy"]] = param(help="roundtrip's sample decoded again: greedy")


class Params(RunWide):
    """What stage roundtrip reads of params.yaml: the run-wide keys and these."""

    roundtrip: Roundtrip
    roundtrip_baselines: RoundtripBaselines


def decoding_settings(cfg: dict) -> list[Sampling]:
    """The settings of the roundtrip params: one greedy setting (mode greedy), or the
    (top_k[i], temperature[i]) pairs (mode sample), each used in both directions."""
    if cfg["mode"] == "greedy":
        return [Sampling()]
    if len(cfg["top_k"]) != len(cfg["temperature"]) or not cfg["top_k"]:
        raise ParamsError(
            "params.yaml: 'roundtrip.top_k' and 'roundtrip.temperature' must be non-empty "
            f"lists of equal length (pairs), got {cfg['top_k']} and {cfg['temperature']}"
        )
    return [Sampling(k, float(t)) for k, t in zip(cfg["top_k"], cfg["temperature"], strict=True)]


def resume_key(cfg: dict, run: RunSettings, corpus: str | Path) -> str:
    """Names the partial shard directory: a crashed run resumes only under the same
    params (`cfg`: the roundtrip section), device, precision and corpus."""
    return fingerprint(cfg, run.seed, run.lang, run.device, run.precision, input_checksum(corpus))


def round_trip_sharded(
    corpus: str | Path, out: str | Path, cfg: dict, run: RunSettings, engine: Engine,
    models: dict,
) -> tuple[dict, int]:  # fmt: skip
    """Every candidate of the seeded `max_sentences` sample of the corpus (`cfg`: the
    roundtrip section) into the shard directory `out` (resuming a crashed run); return
    (its manifest, sentences read). `models`: the forward_model and backward_model
    descriptions, kept in the metadata."""
    seed = run.seed
    settings = decoding_settings(cfg)
    decode = {k: cfg[k] for k in ("batch_size", "max_new_tokens", "length_ratio", "num_beams")}
    key = resume_key(cfg, run, corpus)
    sample = iter_sample(corpus, cfg["max_sentences"], seed)
    sentences = CountedShards(stream_shards(sample, cfg["shard_size"]))
    job = RoundTripJob(
        cfg["forward_model"],
        cfg["backward_model"],
        cfg["src_lang_code"],
        cfg["pivot_lang_code"],
        run.lang,
        cfg["pivot"][run.lang],
        run.device,
        tuple(settings),
        seed,
        decode,
        run.precision,
    )
    manifest = map_shards(
        job,
        sentences,
        out=out,
        schema=schemas.ROUNDTRIP_CANDIDATES,
        key=key,
        engine=engine,
        metadata={"params": cfg, **models},
        model=True,
        desc="roundtrip shards",
    )
    return manifest, sentences.rows


log = logging.getLogger("roundtrip")


# dvc.yaml's metrics (paracl.core.key_figures): candidates made
KEY_FIGURES = ("n_candidates",)


def main(params: dict) -> None:
    names = ("corpus", "candidates", "metrics") + (("mode",) if len(sys.argv) == 5 else ())
    paths = args(*names)
    mode = getattr(paths, "mode", params["roundtrip"]["mode"])
    if mode not in ("sample", "greedy"):
        raise ParamsError(f"stages/roundtrip.py: MODE must be sample or greedy, got {mode!r}")
    cfg, run_settings = {**params["roundtrip"], "mode": mode}, RunSettings.of(params)
    seed_everything(run_settings.seed)
    settings = decoding_settings(cfg)
    device = select_device(run_settings.device)
    models = {
        "forward_model": describe(cfg["forward_model"], 0, device),
        "backward_model": describe(cfg["backward_model"], 1, device),
    }
    # the paper's models (§4.1); anything else is a deviation, named in every metrics file
    models["paper_model"] = (cfg["forward_model"], cfg["backward_model"]) == PAPER_MODELS
    started = time.perf_counter()
    manifest, n_sentences = round_trip_sharded(
        paths.corpus, paths.candidates, cfg, run_settings, Engine.from_params(params), models
    )
    seconds = time.perf_counter() - started
    stand_in = models["forward_model"]["stand_in"] or models["backward_model"]["stand_in"]
    write_metrics(
        {
            **models,
            "stand_in": stand_in,
            "mode": cfg["mode"],
            "settings": [s.name for s in settings],
            "n_sentences": n_sentences,
            "n_candidates": manifest["rows"],
            "candidates_per_sentence": len(settings) ** 2,
            "n_shards": len(manifest["shards"]),
            "device": device.type,
        },
        paths.metrics,
        KEY_FIGURES,
    )
    note = " (STAND-IN model: outputs are noise)" if stand_in else ""
    log.info(
        "%d sentences → %d candidates in %.1f s%s", n_sentences, manifest["rows"], seconds, note
    )
