"""The prepare_domain stage: a target-domain corpus → its sentences, and the main corpus
with them.

The input is `prepare_domain.corpora[name]` (a path under data/raw and its format, as
prepare_corpus.input). It is read, split, tokenised and filtered exactly as the main
corpus (paracl.parts.corpus, with prepare_corpus' min_words, max_words and
langdetect_threshold; seed, lang), keeping `prepare_domain.max_sentences` (null: all).
The mix is the main corpus' rows followed by the domain's, for unsupervised SimCSE on
"Wiki & In-domain" (JCSE Table 6): in JCSE the domain corpus joins a 10^6-sentence
Wikipedia sample; here it joins whatever the main corpus holds, so its share is in the
metrics (`mix`).
"""

from __future__ import annotations

import logging
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq

from paracl.core import schemas
from paracl.core.distributed.sharded import Engine
from paracl.core.errors import InputError
from paracl.core.io import atomic_path, iter_batches, row_count
from paracl.core.key_figures import write_metrics
from paracl.core.params import ParamsError, RunSettings, RunWide, Section, param
from paracl.core.stage import args
from paracl.parts.corpus.pipeline import CorpusConfig, prepare_resumable
from paracl.parts.corpus.readers import input_files
from paracl.stages.prepare_corpus import PrepareCorpus

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class PrepareDomain(Section):
    # name -> input, as prepare_corpus.input (data/corpus/<name>.parquet, <name>_mix.parquet)
    corpora: dict[str, PrepareCorpus.CorpusInput] = param(help="target-domain corpora")
    max_sentences: int | None = param(min=1, help="sentences kept per corpus; null = all")


class Params(RunWide):
    """What stage prepare_domain reads of params.yaml: the run-wide keys and these."""

    prepare_corpus: PrepareCorpus
    prepare_domain: PrepareDomain


log = logging.getLogger("prepare_domain")


def domain_config(section: dict, corpus: dict, run: RunSettings, name: str) -> CorpusConfig:
    """The main corpus' settings (`corpus`: the prepare_corpus section) with the domain's
    input and cap (`section`: the prepare_domain section)."""
    if name not in section["corpora"]:
        known = ", ".join(section["corpora"]) or "none"
        raise ParamsError(f"prepare_domain.corpora: no corpus {name!r} (known: {known})")
    entry = section["corpora"][name]
    try:
        input_files(entry["source"], entry["format"])
    except InputError as err:
        raise InputError(f"prepare_domain.corpora.{name}.source: {err}") from None
    return replace(
        CorpusConfig.from_params(corpus, run),
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


def build_domain(
    section: dict, corpus: dict, run: RunSettings, engine: Engine, name: str, main: str,
    out: str, mix: str,
) -> dict:  # fmt: skip
    """Domain corpus `name` of `section` (the prepare_domain section) to `out` (resumable,
    as prepare_corpus, with `corpus`: the prepare_corpus section) and its mix with the
    main corpus to `mix`; return the metrics."""
    cfg = domain_config(section, corpus, run, name)
    metrics, _ = prepare_resumable(cfg, out, corpus, engine)
    metrics["mix"] = write_mix(main, out, mix)
    log.info("%s: %d sentences; mix %s", name, metrics["kept"], metrics["mix"])
    return metrics


# dvc.yaml's metrics (paracl.core.key_figures): domain sentences kept
KEY_FIGURES = ("kept",)


def main(params: dict) -> None:
    paths = args("name", "main", "corpus", "mix", "metrics")
    settings, engine = RunSettings.of(params), Engine.from_params(params)
    metrics = build_domain(
        params["prepare_domain"], params["prepare_corpus"], settings, engine,
        paths.name, paths.main, paths.corpus, paths.mix,
    )  # fmt: skip
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
