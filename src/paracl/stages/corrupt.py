"""The corrupt stage's per-shard work, for paracl.core.distributed.sharded.map_shards.

`CorruptJob.setup` runs once per worker (a Ray actor, or the driver process locally): it
loads the spaCy / GiNZA noun-chunk pipeline and the filler: T5 (an encoder-decoder, by
its config) or a causal LM (paracl.parts.filler.causal). The filler is the directory the
adapt_filler stage wrote (models/filler: the adapted model, or for a causal LM left as it
is only its paracl_filler.json naming it, resolved here), or `unadapted`: the
adapt_filler.model of the language as it is, for the adaptation ablation.
`CorruptJob.process` turns one shard of anchors into negative rows; the shard's counts (skipped, dropped, …) travel
with the rows as `frame.attrs["paracl_stats"]`, which pyarrow stores in the shard file's
pandas metadata, so a resumed run still has the counts of the shards it did not redo
(`shard_stats` reads them back; `pipeline.merge_stats` sums them).

`corrupt_corpus` is the corrupt stage's work. The seeded anchor sample is drawn on the
driver from the `lang` column alone and (id, text) is streamed: the driver holds
max_sentences sample positions and the shards in flight, never the corpus. The output
bytes depend on shard_size (shard boundaries), not on the engine or the worker count.
The workers read the model from its directory (on a cluster: a path every node can
read, e.g. a shared filesystem or Ray's runtime_env working_dir). The metrics add how
much of the fills is the target domain's vocabulary (paracl.parts.filler.domain_vocab),
against a reference corpus (Wikipedia).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd
import pyarrow.parquet as pq

from paracl.core import schemas
from paracl.core.device import DEFAULT_PRECISION, seed_everything
from paracl.core.distributed.sharded import CountedShards, Engine, Shard, map_shards, stream_shards
from paracl.core.errors import InputError
from paracl.core.io import fingerprint, input_checksum, iter_batches, read_json, read_parquet
from paracl.core.key_figures import write_metrics
from paracl.core.models import check_model_dir, describe_model, is_built, resolve_model
from paracl.core.params import RunSettings, Section, param
from paracl.core.sampling import iter_sample
from paracl.core.stage import args
from paracl.parts.filler import INFO_FILE, PAPER_T5
from paracl.parts.filler.chunks import PIPELINES
from paracl.parts.filler.domain_vocab import domain_vocabulary_metrics
from paracl.stages import adapt_filler

if TYPE_CHECKING:  # the filler's modules load torch: loaded where the stage fills
    from paracl.parts.filler.pipeline import CorruptConfig

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class Corrupt(Section):
    max_sentences: int | None = param(min=1, help="anchors sampled; null = all")
    num_beams: int = param(min=1, max=512, help="T5 beams (the authors' code: 200)")
    num_return_sequences: int = param(
        min=1, max=64, help="negatives per anchor, K (<= beams; the authors' scripts: 1)"
    )
    mask_mode: Literal["sequential", "all_at_once"] = param(
        help="sequential: one chunk at a time (JCSE's code); all_at_once: its text"
    )
    variant: Literal["main", "qabot"] = param(
        help="sequential: gen_forsup_contra.py (main) or its QAbot twin (merged chunks)"
    )
    keep_rank: int | None = param(
        min=1, max=64, help="sequential: candidate kept per chunk (1 = best); null: the script's"
    )
    fill_max_length: int = param(
        min=2, max=128, help="sequential: decoder tokens per chunk, start token included"
    )
    short_of_rank: Literal["lowest", "keep"] = param(
        help="sequential: fewer usable candidates than the rank: the lowest-ranked or the chunk"
    )
    batch_size: int = param(min=1)
    max_fill_tokens: int = param(min=1, max=128, help="T5: generation budget per blank")
    on_missing: Literal["original", "drop"]
    num_samples: int = param(min=1, max=64, help="causal LM: hypotheses per anchor")
    top_k: int = param(min=1, help="causal LM: top-k sampling")
    temperature: float = param(min=0.01, max=10.0, help="causal LM: sampling temperature")
    fill_slack_tokens: int = param(min=0, max=64, help="causal LM: fill tokens past the chunk's")
    max_blanks: int = param(min=0, help="causal LM: chunks replaced per negative; 0 = all")
    quantize: bool = param(help="causal LM on CPU: dynamic int8 Linear layers")
    chunk_batch_size: int = param(min=1)
    threads: int | None = param(min=1, max=256, help="torch CPU threads")
    shard_size: int = param(min=1, help="anchors per resumable shard")
    unadapted: list[str] = param(help="negatives sets of the filler not adapted; [] = none")


class Params(adapt_filler.Params):
    """What stage corrupt reads of params.yaml: the run-wide keys and these."""

    corrupt: Corrupt


log = logging.getLogger(__name__)

STATS_KEY = "paracl_stats"


@dataclass(frozen=True)
class CorruptJob:
    """The stage's shard worker (paracl.core.distributed.executor.ShardJob)."""

    model: str  # a directory the worker can read
    lang: str
    device: str
    threads: int | None
    cfg: CorruptConfig
    causal: bool = False
    seed: int = 0
    precision: str = DEFAULT_PRECISION

    def setup(self) -> tuple:
        """(noun-chunk pipeline, filler), loaded on `threads` torch threads."""
        import torch

        from paracl.core.device import select_device
        from paracl.parts.filler.causal import CausalFiller
        from paracl.parts.filler.chunks import load_pipeline
        from paracl.parts.filler.generate import T5Filler

        if self.threads:
            torch.set_num_threads(self.threads)
        nlp = load_pipeline(self.lang)
        dev = select_device(self.device)
        if self.causal:
            filler = CausalFiller(self.model, dev, self.cfg.sampling(), self.seed, self.precision)
        else:
            filler = T5Filler(self.model, dev, self.precision)
        return nlp, filler

    def process(self, loaded: tuple, shard: Shard) -> pd.DataFrame:
        """Hard-negative rows of one shard of (id, text) anchors, its counts in attrs."""
        from paracl.parts.filler.pipeline import corrupt

        nlp, filler = loaded
        rows, stats = corrupt(shard.rows, nlp, filler, self.cfg)
        rows.attrs[STATS_KEY] = stats
        return rows


def shard_stats(out: str | Path) -> list[dict]:
    """The per-shard counts stored in a finished shard directory (empty shards: none)."""
    stats = []
    for part in sorted(Path(out).glob("part-*.parquet")):
        meta = pq.read_schema(part).pandas_metadata or {}
        found = (meta.get("attributes") or {}).get(STATS_KEY)
        if found is not None:
            stats.append(found)
    return stats


UNADAPTED = "unadapted"  # the corrupt stage's filler argument: adapt_filler.model as it is


def model_info(model: str, base: str = "", lang: str = "") -> tuple[dict, Path, bool]:
    """(what the filler is, the directory to load, is it a causal LM). adapt_filler's
    paracl_filler.json says it; a causal LM recorded without weights is resolved by its
    id. `unadapted` is `base` (adapt_filler.model[lang]) as it is. A model folder from
    elsewhere is described by its path and typed by its config."""
    from paracl.parts.filler.causal import is_causal_lm

    if model == UNADAPTED:
        return _unadapted(base, lang)
    info_path = Path(model) / INFO_FILE
    info = read_json(info_path) if info_path.exists() else {"model": model}
    if info.get("causal_lm") and not (Path(model) / "config.json").exists():
        path = resolve_model(info["model"]["id"]).path
        return info, check_model_dir(path).resolve(), True
    path = check_model_dir(model).resolve()
    return info, path, info["causal_lm"] if "causal_lm" in info else is_causal_lm(path)


def _unadapted(model_id: str, lang: str) -> tuple[dict, Path, bool]:
    """The filler adapt_filler would start from (`model_id`), not adapted."""
    from paracl.parts.filler.causal import is_causal_lm

    if is_built(model_id):
        raise InputError(
            f"adapt_filler.model.{lang}: {model_id} is a random stand-in that fills nothing "
            "until adapt_filler trains it; unadapted negatives need a real filler"
        )
    path = check_model_dir(resolve_model(model_id).path).resolve()
    causal = is_causal_lm(path)
    info = {"model": describe_model(model_id), "filler": "causal_lm" if causal else "t5",
            "causal_lm": causal, "stand_in": False, "adapted": False, "lang": lang,
            "paper_model": model_id in PAPER_T5}  # fmt: skip
    return info, path, causal


def corrupt_corpus(
    corpus: str, model: str, out: str, cfg: dict, run: RunSettings, engine: Engine, base: str,
    reference: str | None = None,
) -> dict:  # fmt: skip
    """Write hard negatives for a seeded sample of `corpus` (`corrupt.max_sentences`
    anchors of `lang`; `cfg`: the corrupt section) to the shard directory `out`, the filler
    read from `model` (`unadapted`: `base`, adapt_filler.model[lang]); return the metrics
    (summed shard counts, what the filler is and how it generated, its use of the domain's
    vocabulary against `reference`, a few examples)."""
    from paracl.parts.filler.pipeline import CorruptConfig, merge_stats

    lang, seed = run.lang, run.seed
    seed_everything(seed)
    info, path, causal = model_info(model, base, lang)
    config = CorruptConfig.from_params(cfg, seq2seq=not causal)
    filler_sum = input_checksum(model) if model != UNADAPTED else str(path)
    key = fingerprint(
        cfg, seed, lang, run.device, run.precision, input_checksum(corpus), filler_sum
    )
    anchors = CountedShards(
        stream_shards(iter_sample(corpus, cfg["max_sentences"], seed, lang), cfg["shard_size"])
    )
    meta = {"model": info, "chunker": PIPELINES[lang], "lang": lang, "seed": seed, "params": cfg}
    job = CorruptJob(str(path), lang, run.device, cfg["threads"], config, causal, seed,
                     run.precision)  # fmt: skip
    manifest = map_shards(
        job,
        anchors,
        out=out,
        schema=schemas.NEGATIVES,
        key=key,
        engine=engine,
        metadata=meta,
        model=True,
        desc="corrupt shards",
    )
    if anchors.rows == 0:
        log.warning(
            "%s has no sentence of lang %r: wrote an empty negatives artifact", corpus, lang
        )
    stats = merge_stats(shard_stats(out))
    if reference is not None:
        rows = read_parquet(out, schemas.NEGATIVES, columns=["fills", "chunks"])
        stats["domain_vocabulary"] = domain_vocabulary_metrics(rows, corpus, reference, lang)
    log.info(
        "%d anchors -> %d negatives (%.2f per anchor with any); %d without noun chunk",
        stats["sentences_in"],
        stats["negatives"],
        stats["negatives_per_anchor"],
        stats["skipped_no_chunk"],
    )
    return _metrics(stats, info, causal, lang, out, len(manifest["shards"]), config)


def _metrics(
    stats: dict, info: dict, causal: bool, lang: str, out: str, n_shards: int,
    config: CorruptConfig,
) -> dict:  # fmt: skip
    """The stage's metrics: the counts, what the filler is, how it generated (mode, beams,
    kept ranks, departures from JCSE's authors' code) and the first few negatives."""
    return {
        **stats,
        "model": info.get("model"),
        "filler": "causal_lm" if causal else "t5",
        "stand_in": bool(info.get("stand_in", False)),
        "paper_model": False if causal else info.get("paper_model"),
        "adapted": bool(info.get("adapted", False)),
        "generation": config.summary(causal),
        "chunker": PIPELINES[lang],
        "lang": lang,
        "n_shards": n_shards,
        "examples": _first_rows(out, 5),
    }


def _first_rows(out: str, n: int) -> list[dict]:
    """The first n negatives (anchor, masked, negative), read across shard files, so that
    the metrics do not depend on where the shards end."""
    found: list[pd.DataFrame] = []
    for batch in iter_batches(out, batch_size=n, schema=schemas.NEGATIVES):
        found.append(batch)
        if sum(map(len, found)) >= n:
            break
    if not found:
        return []
    first = pd.concat(found, ignore_index=True).head(n)
    return first[["text", "masked", "negative"]].to_dict("records")


# dvc.yaml's metrics (paracl.core.key_figures): hard negatives made
KEY_FIGURES = ("negatives",)


def main(params: dict) -> None:
    paths = args("corpus", "model", "negatives", "metrics", "reference")
    settings, engine = RunSettings.of(params), Engine.from_params(params)
    base = params["adapt_filler"]["model"][settings.lang]  # the filler `unadapted` names
    metrics = corrupt_corpus(
        paths.corpus, paths.model, paths.negatives, params["corrupt"], settings, engine, base,
        paths.reference,
    )  # fmt: skip
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
