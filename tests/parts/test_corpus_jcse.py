"""Any corpus as the target domain (issue 31): JCSE's clinical and educational corpora,
fetched through the registry from the mirror (checksums verified), read as `text` input
like any other corpus. Row counts are the mirror README's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from paracl.core import schemas
from paracl.core.io import read_parquet
from paracl.parts.corpus.pipeline import CorpusConfig, prepare_corpus
from paracl.parts.corpus.readers import ReadStats, read_documents
from paracl.stages.fetch import fetch

CORPORA = {"clinic_corpus.txt": 11_832, "QAbot_corpus.txt": 6_872}


@pytest.fixture(scope="module")
def raw(mirror, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("jcse") / "raw"
    fetch(["jcse"], out, mirror)
    return out


@pytest.mark.parametrize("name", sorted(CORPORA))
def test_jcse_corpus_reads_every_line(raw, name):
    path = raw / "jcse" / "corpora" / name
    stats = ReadStats()
    docs = list(read_documents(path, "text", stats))
    assert len(docs) == CORPORA[name] == stats.lines
    assert (stats.undecodable_lines, stats.control_char_lines, stats.truncated_final_lines) == (
        0,
        0,
        0,
    )
    assert docs[0].doc_id == f"{path.stem}:1" and docs[0].title == ""


@pytest.mark.slow
def test_prepare_corpus_on_the_clinical_corpus(raw, tmp_path):
    """The whole stage on the real clinical corpus: Japanese splitting, MeCab, langdetect,
    a seeded 300-sentence sample (~1 min on one core)."""
    cfg = CorpusConfig(
        source=str(raw / "jcse" / "corpora" / "clinic_corpus.txt"),
        format="text",
        lang="ja",
        min_words=5,
        max_words=50,
        langdetect_threshold=0.99,
        max_sentences=300,
        seed=1,
    )
    metrics = prepare_corpus(cfg, tmp_path / "sentences.parquet", workers=1)
    frame: pd.DataFrame = read_parquet(tmp_path / "sentences.parquet", schemas.CORPUS)
    assert len(frame) == metrics["kept"] == 300
    assert metrics["input"]["documents"] == 11_832
    assert frame["doc_id"].str.startswith("clinic_corpus:").all()
