"""Stage ppdb_substitute: corpus sentences + paraphrase dictionary → candidates.

Reads the dictionary chosen by `ppdb_substitute.dictionary[lang]`, keeps rules with
p(d|s) >= `theta`, and writes every sentence's substitution candidates
(PPDB paper §3.2, Figure 1). No rule left, or no sentence matched, is a valid outcome:
the artifacts are written empty (right schema) and the metrics say why.
"""

from __future__ import annotations

import logging

import pandas as pd

from paracl import schemas
from paracl.io import iter_batches, write_json, write_parquet
from paracl.paraphrase.dictionaries import DictionaryError, read_dictionary
from paracl.paraphrase.substitute import RuleIndex, candidate_rows
from paracl.stage import InputError, run

CORPUS = "data/corpus/sentences.parquet"
RULES = "data/ppdb/rules.parquet"
CANDIDATES = "data/ppdb/candidates.parquet"
METRICS = "metrics/ppdb_substitute.json"

log = logging.getLogger("ppdb_substitute")


def main(params: dict) -> None:
    lang, theta, cfg = params["lang"], params["theta"], params["ppdb_substitute"]
    spec = cfg["dictionary"][lang]
    try:
        table = read_dictionary(spec["path"], spec["format"])
    except DictionaryError as err:
        raise InputError(f"ppdb_substitute.dictionary.{lang}: {err}") from None
    report = table.report()
    kept = table.rules[table.rules["prob"] >= theta].reset_index(drop=True)
    index = RuleIndex(kept, lang, cfg["max_phrase_words"][lang])
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

    rows: list[dict] = []
    n_sentences = matched = 0
    for batch in iter_batches(CORPUS, batch_size=5000, schema=schemas.CORPUS):
        n_sentences += len(batch)
        before = len(rows)
        rows.extend(candidate_rows(batch, index, cfg["max_candidates"], cfg["max_substitutions"]))
        matched += len({r["id"] for r in rows[before:]})
    if n_sentences and not rows and len(index):
        notes.append(f"no sentence of {CORPUS} contains a source phrase of a kept rule")
        log.warning(notes[-1])
    cands = pd.DataFrame(rows, columns=schemas.PPDB_CANDIDATES.names)

    metrics = {
        "lang": lang,
        "theta": theta,
        "dictionary": report,
        "rules_kept_theta": int(len(kept)),
        "rules_usable": len(index),
        "rules_too_long": index.too_long,
        "sentences": n_sentences,
        "sentences_matched": matched,
        "candidates": int(len(cands)),
        "candidates_per_matched_sentence": round(len(cands) / matched, 4) if matched else 0.0,
        "max_candidates": cfg["max_candidates"],
        "max_substitutions": cfg["max_substitutions"],
        "notes": notes,
    }
    meta = {
        "stage": "ppdb_substitute",
        "probability": report["probability"],
        "stand_in_probability": report["stand_in_probability"],
        "dictionary": {"format": spec["format"], "path": spec["path"]},
        "theta": theta,
        "lang": lang,
    }
    write_parquet(kept, RULES, schemas.PPDB_RULES, metadata=meta)
    write_parquet(cands, CANDIDATES, schemas.PPDB_CANDIDATES, metadata={**meta, "metrics": metrics})
    write_json(metrics, METRICS)
    log.info(
        "%d of %d sentences matched, %d candidates → %s",
        matched,
        n_sentences,
        len(cands),
        CANDIDATES,
    )


if __name__ == "__main__":
    run(main)
