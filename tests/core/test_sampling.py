"""The streamed seeded corpus sample: same rows as drawing positions in memory, in corpus
order, whatever the batch size or file layout; a lang filter counts only that language."""

from __future__ import annotations

import numpy as np
import pandas as pd

from paracl.core import schemas
from paracl.core.io import write_parquet
from paracl.core.sampling import iter_sample, sample_corpus, sample_positions


def _corpus(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [f"d:{i}-0" for i in range(n)],
            "doc_id": [f"d:{i}" for i in range(n)],
            "title": [""] * n,
            "text": [f"sentence number {i}" for i in range(n)],
            "tokens": [["sentence", "number", str(i)] for i in range(n)],
            "n_words": np.full(n, 3, np.int32),
            "lang": ["en" if i % 3 else "de" for i in range(n)],
        }
    )


def test_streamed_sample_equals_positions_drawn_in_memory(tmp_path):
    corpus = _corpus(1000)
    path = tmp_path / "sentences.parquet"
    write_parquet(corpus, path, schemas.CORPUS)
    shards = tmp_path / "shards"  # the same rows as a shard directory
    shards.mkdir()
    for i in range(4):
        part = corpus.iloc[i * 250 : (i + 1) * 250]
        write_parquet(part, shards / f"part-{i:05d}.parquet", schemas.CORPUS)

    expected = corpus.iloc[np.sort(np.random.default_rng(7).choice(1000, 40, replace=False))]
    for source, batch in ((path, 10_000), (path, 33), (shards, 64)):
        got = pd.concat(iter_sample(source, 40, 7, batch_size=batch), ignore_index=True)
        assert got.equals(expected[["id", "text"]].reset_index(drop=True))

    other_seed = sample_corpus(path, 40, 8)
    assert set(other_seed["id"]) != set(expected["id"])
    assert len(sample_corpus(path, None, 7)) == len(sample_corpus(path, 5000, 7)) == 1000
    assert sample_positions(10, 10, 0) is None


def test_lang_filter_samples_among_that_language_only(tmp_path):
    corpus = _corpus(300)
    path = tmp_path / "sentences.parquet"
    write_parquet(corpus, path, schemas.CORPUS)
    english = corpus[corpus["lang"] == "en"].reset_index(drop=True)
    picked = np.sort(np.random.default_rng(1).choice(len(english), 25, replace=False))
    got = sample_corpus(path, 25, 1, lang="en")
    assert got.equals(english.iloc[picked][["id", "text"]].reset_index(drop=True))
    assert sample_corpus(path, 25, 1, lang="ja").empty
