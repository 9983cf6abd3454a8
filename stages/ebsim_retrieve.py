"""Stage ebsim_retrieve@<name>: EBSIM's retrieval (§3.2), once per titled corpus.

    python stages/ebsim_retrieve.py <name> <corpus> <ranking out> <metrics.json>

The corpus is `ebsim_retrieve.corpora[name]` (data/corpus/sentences.parquet of a wiki40b or
jaquad corpus: titled documents). A fixed retriever (`ebsim_retrieve.retriever`, null:
train_contrastive.base_model; mean pooling, never trained) embeds each title and its
sentences and ranks them; relevant_1's words like a title word (>= eta) are masked. No
seed changes any of it, so every ebsim run and seed reads this one ranking (its `input`)
and only draws its negatives (paracl.parts.losses.ebsim_triplet.triples). Before this
stage each run embedded the corpus again. The code: paracl.stages.ebsim_retrieve.
"""

import logging
import time

from paracl.core import schemas
from paracl.core.device import select_device
from paracl.core.io import read_parquet, write_parquet
from paracl.core.key_figures import write_metrics
from paracl.core.params import ParamsError
from paracl.core.stage import args, run
from paracl.stages.ebsim_retrieve import load_retriever, rank_documents

# dvc.yaml's metrics (paracl.core.key_figures): documents ranked
KEY_FIGURES = ("documents",)


def main(params: dict) -> None:
    paths = args("name", "corpus", "ranking", "metrics")
    cfg = params["ebsim_retrieve"]
    if cfg["corpora"].get(paths.name) != paths.corpus:
        raise ParamsError(
            f"ebsim_retrieve.corpora.{paths.name} is {cfg['corpora'].get(paths.name)!r}, "
            f"not the {paths.corpus} this command reads: rerun `dvc repro`"
        )
    retriever_id = cfg["retriever"] or params["train_contrastive"]["base_model"]
    retriever = load_retriever(retriever_id, select_device(params["device"]))
    start = time.perf_counter()
    ranking = rank_documents(
        read_parquet(paths.corpus), retriever, cfg["eta"], cfg["max_mask"], cfg["max_docs"],
        paths.corpus,
    )  # fmt: skip
    write_parquet(ranking, paths.ranking, schemas.EBSIM_RANKING)
    metrics = {
        "corpus": paths.corpus,
        "retriever": retriever_id,
        "documents": len(ranking),
        "texts_embedded": int(len(ranking) + ranking["ranked"].map(len).sum()),
        "structure_level": int(ranking["masked"].notna().sum()),  # documents with a mask
    }
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
    logging.getLogger("ebsim_retrieve").info(
        "%s: %d documents ranked in %.1f s", paths.name, len(ranking), time.perf_counter() - start
    )


if __name__ == "__main__":
    run(main)
