"""Controlled paraphrases for a corpus sample, shard by shard (stages/generate_paraphrases.py).

Runs through paracl.core.distributed.sharded.map_shards as a model stage: each worker (a Ray
actor on `executor: ray`, the driver process locally) loads the paraphraser and the STS
scorer once (`GenerateJob.setup`, from directories every node can read) and
`GenerateJob.process` handles whole shards of `shard_size` sentences, all requested tag pairs of a shard
together (rows: shard by shard, tag-major within a shard). Each output is scored as the
tagger scores candidates (STS ×100, sentence BLEU ×100). The untagged baseline (tags "")
runs the same way into an artifact of its own, so that train_contrastive never takes its
rows for controlled paraphrases. Output bytes depend on
shard_size, not on the engine. A module of its own so that the training stage, which
uses paracl.parts.paraphraser, does not depend on the sharding code.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from paracl.core import schemas
from paracl.core.device import seed_everything
from paracl.core.distributed.sharded import CountedShards, Engine, Shard, map_shards, stream_shards
from paracl.core.io import check_parquet, fingerprint, input_checksum, read_json
from paracl.core.key_figures import write_metrics
from paracl.core.models import check_model_dir
from paracl.core.params import RunSettings, RunWide, Section, param
from paracl.core.sampling import iter_sample
from paracl.core.stage import args
from paracl.parts.tags import adherence as tag_adherence
from paracl.parts.tags import heatmap, tagging
from paracl.stages import generate_paraphrases as generation

if TYPE_CHECKING:  # the paraphraser (torch) loads where the stage runs, not with its params
    import torch

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class GenerateParaphrases(Section):
    tags: list[str]
    num_beams: int = param(min=1)
    min_ratio: float = param(min=0.0)
    max_ratio: float = param(min=0.0)
    heatmap_min_words: int = param(min=0, help="shorter outputs are left out of heatmaps")
    max_sentences: int | None = param(min=1)
    batch_size: int = param(min=1)
    max_length: int = param(min=8)
    shard_size: int = param(min=1, help="sentences per resumable shard")
    baseline: bool = param(help="also generate untagged (Figure 3's baseline)")
    threads: int | None = param(min=1, max=256, help="torch CPU threads per worker")


class Params(RunWide):
    """What stage generate_paraphrases reads of params.yaml: the run-wide keys and these."""

    generate_paraphrases: GenerateParaphrases


def settings(cfg: dict) -> dict:
    """The generate_paraphrases params `generate` takes (beams, length window, batching),
    checked (paracl.parts.paraphraser.decoding)."""
    from paracl.parts.paraphraser import decoding

    return decoding(cfg)


def generate_sharded(
    corpus: str | Path,
    model_dir: str | Path,
    scorer_dir: str | Path,
    out: str | Path,
    cfg: dict,
    run: RunSettings,
    engine: Engine,
    info: dict,
    tags: Sequence[str],
    enabled: bool = True,
) -> tuple[dict, int]:
    """Every tag pair in `tags` for the seeded `max_sentences` sample of the corpus
    (`cfg`: the generate_paraphrases section), into the shard directory `out` (resuming a
    crashed run); return (its manifest, sentences read). `info` is the model's INFO_FILE:
    an untrained paraphraser (or `enabled` False) reads no sentence and writes an empty
    artifact.

    The sample is drawn from the id column alone and (id, text) is streamed, so the
    driver holds the corpus ids while drawing, then only the shards in flight.
    """
    lang, seed = run.lang, run.seed
    inputs = [input_checksum(p) for p in (corpus, model_dir, scorer_dir)]
    enabled = enabled and info["trained"]
    sample = iter_sample(corpus, cfg["max_sentences"], seed) if enabled else ()
    sentences = CountedShards(stream_shards(sample, cfg["shard_size"]))
    job = GenerateJob(
        str(Path(model_dir).resolve()),
        str(Path(scorer_dir).resolve()),
        run.device,
        lang,
        tuple(tags),
        {**settings(cfg), "precision": run.precision},  # generate's keyword arguments
        cfg["threads"],
    )
    manifest = map_shards(
        job,
        sentences,
        out=out,
        schema=schemas.GENERATED_PARAPHRASES,
        key=fingerprint(cfg, seed, lang, run.device, run.precision, list(tags), *inputs),
        engine=engine,
        metadata={"params": cfg, "paraphraser": info},
        model=True,
        desc="generate shards",
    )
    return manifest, sentences.rows


class Loaded(NamedTuple):
    """What a GenerateJob worker loads once."""

    tokenizer: Any
    model: Any
    scorer: Any
    device: torch.device


@dataclass(frozen=True)
class GenerateJob:
    """The stage's shard worker (paracl.core.distributed.executor.ShardJob)."""

    model_dir: str
    scorer_dir: str
    device: str
    lang: str
    tags: tuple[str, ...]
    gen: dict  # generate's keyword arguments
    threads: int | None = None

    def setup(self) -> Loaded:
        """Load the paraphraser and the STS scorer once per worker (a Ray actor, or the
        driver process locally), from directories this worker can read, on `threads`
        torch threads (small models on shared cores run many times faster on one)."""
        import torch

        from paracl.core.device import select_device
        from paracl.core.models import check_model_dir
        from paracl.parts import paraphraser, sts_scorer

        check_model_dir(self.model_dir)
        check_model_dir(self.scorer_dir)
        if self.threads:
            torch.set_num_threads(self.threads)
        dev = select_device(self.device)
        model, tokenizer = paraphraser.load(self.model_dir, dev)
        return Loaded(tokenizer, model, sts_scorer.load_scorer(self.scorer_dir, str(dev)), dev)

    def process(self, loaded: Loaded, shard: Shard) -> pd.DataFrame:
        """Every requested tag pair for one shard of (id, text) rows, scored like the
        tagger scores candidates (STS ×100, sentence BLEU ×100); tag-major rows."""
        from paracl.parts import sts_scorer
        from paracl.parts.paraphraser import generate
        from paracl.parts.tags import tagging

        tokenizer, model, scorer = loaded.tokenizer, loaded.model, loaded.scorer
        texts = shard.rows["text"].tolist()
        n_in = np.array(
            [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts],
            dtype=np.int32,
        )
        rows = []
        for tags in self.tags:
            outputs, counts = generate(
                model, tokenizer, texts, tags, device=loaded.device, **self.gen
            )
            sim, bleu = tagging.score_pairs(
                texts, outputs, lambda pairs: sts_scorer.predict(scorer, pairs), self.lang
            )
            rows.append(
                pd.DataFrame(
                    {
                        "id": shard.rows["id"].tolist(),
                        "text": texts,
                        "paraphrase": outputs,
                        "tags": tags,
                        "sim": sim,
                        "bleu": bleu,
                        "n_input_tokens": n_in,
                        "n_output_tokens": np.array(counts, dtype=np.int32),
                    }
                )
            )
        return pd.concat(rows, ignore_index=True)


log = logging.getLogger("generate_paraphrases")


# dvc.yaml's metrics (paracl.core.key_figures): paraphrases generated
KEY_FIGURES = ("n_generated",)


def main(params: dict) -> None:
    from paracl.parts import paraphraser

    paths = args(
        "corpus", "model", "scorer", "out", "baseline", "metrics", "heatmap_dir", "heatmap_png"
    )
    cfg, lang, seed = params["generate_paraphrases"], params["lang"], params["seed"]
    requested = [tagging.parse_tags(t) for t in cfg["tags"]]
    generation.settings(cfg)  # a bad length window fails before any work
    seed_everything(seed)
    # every input checked first (the corpus too: an untrained paraphraser never reads it)
    check_parquet(paths.corpus, schemas.CORPUS)
    info = read_json(check_model_dir(paths.model) / paraphraser.INFO_FILE)
    check_model_dir(paths.scorer)
    if not info["trained"]:
        log.warning(
            "the paraphraser was not trained (%d training pairs): writing an empty %s",
            info["n_train"],
            paths.out,
        )
    tags = [s + b for s, b in requested]
    settings, engine = RunSettings.of(params), Engine.from_params(params)
    manifest, n_sentences = generation.generate_sharded(
        paths.corpus, paths.model, paths.scorer, paths.out, cfg, settings, engine, info, tags
    )
    base, _ = generation.generate_sharded(
        paths.corpus,
        paths.model,
        paths.scorer,
        paths.baseline,
        cfg,
        settings,
        engine,
        info,
        [tag_adherence.BASELINE],
        enabled=cfg["baseline"],
    )
    per_tag, panels = tag_adherence.measure(
        paths.out, requested, lang, cfg["heatmap_min_words"], paths.baseline
    )
    heatmap.write_csv_dir(panels, paths.heatmap_dir)
    heatmap.write_png(panels, paths.heatmap_png)
    metrics = {
        "paraphraser": info,
        "model": info.get("base_model", {}).get("id"),
        "stand_in": bool(info["stand_in"]),
        "paper_model": bool(info.get("paper_model", False)),
        "baseline": "the same paraphraser prompted with no tags" if base["rows"] else None,
        "n_sentences": n_sentences,
        "n_generated": manifest["rows"],
        "n_baseline": base["rows"],
        "n_shards": len(manifest["shards"]),
        "per_tag": per_tag,
    }
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
    log.info("%d paraphrases for %d tag pairs", manifest["rows"], len(requested))
