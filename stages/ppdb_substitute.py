"""Stage ppdb_substitute: corpus sentences + paraphrase dictionary → candidates.

Reads the dictionary chosen by `ppdb_substitute.dictionary[lang]`, keeps rules with
p(d|s) >= `theta`, and writes every sentence's substitution candidates
(PPDB paper §3.2, Figure 1). No rule left, or no sentence matched, is a valid outcome:
the artifacts are written empty (right schema) and the metrics say why.

Sharded (issue 9): the corpus is streamed in shards of `shard_size` sentences and each
shard is substituted by `paracl.paraphrase.substitute.substitute_shard` on `workers`
processes or Ray tasks (top-level `executor`); the kept rules go to every worker through
the initializer, which builds the rule index once per worker process. The candidates are
a shard directory (same bytes on every engine; an interrupted run resumes). The driver
holds the rule table and index, one corpus shard per task in flight, and counters.
The rule table (data/ppdb/rules.parquet) carries this stage's metrics in its metadata
(written after the map), for rank_fluency's metrics.
"""

from __future__ import annotations

import logging

from paracl import schemas
from paracl.distributed.sharded import Engine, map_shards, parquet_shards
from paracl.io import fingerprint, input_checksum, iter_parts, write_json, write_parquet
from paracl.paraphrase.dictionaries import DictionaryError, read_dictionary
from paracl.paraphrase.substitute import RuleIndex, init_worker, substitute_shard
from paracl.stage import InputError, run

CORPUS = "data/corpus/sentences.parquet"
RULES = "data/ppdb/rules.parquet"
CANDIDATES = "data/ppdb/candidates.parquet"
METRICS = "metrics/ppdb_substitute.json"

log = logging.getLogger("ppdb_substitute")


def _counted(shards, counts: dict):
    """Pass shards on, counting the sentences the driver hands out."""
    for shard in shards:
        counts["sentences"] += len(shard)
        yield shard


def _matched(path: str) -> int:
    """Sentences with at least one candidate: a sentence's rows are consecutive within
    one shard, so count id changes while streaming only the id column."""
    matched, prev = 0, None
    for part, batch in iter_parts(path, 65536, columns=["id"]):
        if batch.empty:
            continue
        ids = batch["id"]
        new = ids != ids.shift()
        new.iloc[0] = prev != (part, ids.iloc[0])  # a sentence may go on across batches
        matched += int(new.sum())
        prev = (part, ids.iloc[-1])
    return matched


def main(params: dict) -> None:
    lang, theta, cfg = params["lang"], params["theta"], params["ppdb_substitute"]
    spec = cfg["dictionary"][lang]
    try:
        table = read_dictionary(spec["path"], spec["format"])
    except DictionaryError as err:
        raise InputError(f"ppdb_substitute.dictionary.{lang}: {err}") from None
    report = table.report()
    kept = table.rules[table.rules["prob"] >= theta].reset_index(drop=True)
    max_words = cfg["max_phrase_words"][lang]
    index = RuleIndex(kept, lang, max_words)
    log.info(
        "%s: %d rules read, %d with p >= theta=%s, %d usable",
        spec["path"],
        len(table.rules),
        len(kept),
        theta,
        len(index),
    )
    notes = []
    if len(index) == 0:
        notes.append(f"no rule of {spec['path']} has p >= theta={theta}: nothing to substitute")
        log.warning(notes[-1])

    meta = {
        "stage": "ppdb_substitute",
        "probability": report["probability"],
        "stand_in_probability": report["stand_in_probability"],
        "dictionary": {"format": spec["format"], "path": spec["path"]},
        "theta": theta,
        "lang": lang,
    }
    rules = kept[["source", "target", "prob"]]
    key = fingerprint(
        "ppdb_substitute", cfg, lang, theta, input_checksum(CORPUS), input_checksum(spec["path"])
    )
    counts = {"sentences": 0}
    manifest = map_shards(
        substitute_shard,
        _counted(parquet_shards(CORPUS, cfg["shard_size"], schemas.CORPUS), counts),
        out=CANDIDATES,
        schema=schemas.PPDB_CANDIDATES,
        key=key,
        engine=Engine.from_params(params),
        metadata=meta,
        init=init_worker,
        init_args=(
            key,
            rules,
            lang,
            max_words,
            cfg["max_candidates"],
            cfg["max_substitutions"],
        ),
        desc="ppdb_substitute",
    )
    n_sentences, n_cands = counts["sentences"], manifest["rows"]
    matched = _matched(CANDIDATES) if n_cands else 0
    if n_sentences and not n_cands and len(index):
        notes.append(f"no sentence of {CORPUS} contains a source phrase of a kept rule")
        log.warning(notes[-1])

    metrics = {
        "lang": lang,
        "theta": theta,
        "dictionary": report,
        "rules_kept_theta": int(len(kept)),
        "rules_usable": len(index),
        "rules_too_long": index.too_long,
        "sentences": n_sentences,
        "sentences_matched": matched,
        "candidates": int(n_cands),
        "candidates_per_matched_sentence": round(n_cands / matched, 4) if matched else 0.0,
        "max_candidates": cfg["max_candidates"],
        "max_substitutions": cfg["max_substitutions"],
        "shards": len(manifest["shards"]),
        "notes": notes,
    }
    write_parquet(kept, RULES, schemas.PPDB_RULES, metadata={**meta, "metrics": metrics})
    write_json(metrics, METRICS)
    log.info(
        "%d of %d sentences matched, %d candidates → %s",
        matched,
        n_sentences,
        n_cands,
        CANDIDATES,
    )


if __name__ == "__main__":
    run(main)
