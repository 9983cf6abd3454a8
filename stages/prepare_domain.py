"""Stage prepare_domain: a target-domain corpus → its sentences, and the main corpus with them.

    python stages/prepare_domain.py <name> <main corpus> <domain out> <mix out> <metrics.json>

The input is `prepare_domain.corpora[name]` (a path under data/raw and its format, as
prepare_corpus.input). It is read, split, tokenised and filtered exactly as the main
corpus (prepare_corpus' min_words, max_words and langdetect_threshold; seed, lang),
keeping `prepare_domain.max_sentences` (null: all). The mix is the main corpus' rows
followed by the domain's, for unsupervised SimCSE on "Wiki & In-domain" (JCSE Table 6):
in JCSE the domain corpus joins a 10^6-sentence Wikipedia sample; here it joins
whatever the main corpus holds, so its share is in the metrics (`mix`).
"""

import logging
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq

from paracl.core import schemas
from paracl.core.distributed.shards import ShardCache
from paracl.core.errors import InputError
from paracl.core.io import atomic_path, iter_batches, row_count
from paracl.core.key_figures import write_metrics
from paracl.core.params import ParamsError
from paracl.core.stage import args, run
from paracl.parts.corpus.pipeline import CorpusConfig, cache_key, default_workers, prepare_corpus
from paracl.parts.corpus.readers import input_files


def domain_config(params: dict, name: str) -> CorpusConfig:
    """The main corpus' settings with the domain's input and cap."""
    section = params["prepare_domain"]
    if name not in section["corpora"]:
        known = ", ".join(section["corpora"]) or "none"
        raise ParamsError(f"prepare_domain.corpora: no corpus {name!r} (known: {known})")
    entry = section["corpora"][name]
    try:
        input_files(entry["source"], entry["format"])
    except InputError as err:
        raise InputError(f"prepare_domain.corpora.{name}.source: {err}") from None
    return replace(
        CorpusConfig.from_params(params),
        source=entry["source"],
        format=entry["format"],
        max_sentences=section["max_sentences"],
    )


def write_mix(main: str, domain: str, out: str) -> dict:
    """The main corpus' rows, then the domain's, streamed into one file (atomically)."""
    with atomic_path(out) as tmp:
        with pq.ParquetWriter(tmp, schemas.CORPUS) as writer:
            for path in (main, domain):
                for batch in iter_batches(path, 65_536, schemas.CORPUS):
                    writer.write_table(pa.Table.from_pandas(batch, schemas.CORPUS, False))
    n_main, n_domain = row_count(main), row_count(domain)
    share = round(n_domain / (n_main + n_domain), 4) if n_main + n_domain else None
    return {"main_sentences": n_main, "domain_sentences": n_domain, "domain_share": share}


# dvc.yaml's metrics (paracl.core.key_figures): domain sentences kept
KEY_FIGURES = ("kept",)


def main(params: dict) -> None:
    paths = args("name", "main", "corpus", "mix", "metrics")
    cfg = domain_config(params, paths.name)
    section, executor = params["prepare_corpus"], params["executor"]
    workers = default_workers(section["workers"]) if executor == "local" else section["workers"]
    cache = ShardCache(paths.corpus, cache_key(cfg, section["shard_size"]))
    metrics = prepare_corpus(
        cfg,
        paths.corpus,
        workers=workers,
        shard_size=section["shard_size"],
        executor=executor,
        ray_address=params["ray_address"],
        cache=cache,
    )
    cache.remove()
    metrics["mix"] = write_mix(paths.main, paths.corpus, paths.mix)
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
    logging.getLogger("prepare_domain").info(
        "%s: %d sentences; mix %s", paths.name, metrics["kept"], metrics["mix"]
    )


if __name__ == "__main__":
    run(main)
