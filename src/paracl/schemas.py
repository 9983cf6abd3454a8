"""The Parquet schema of every artifact the pipeline writes, in one place.

A stage writes with `paracl.io.write_parquet(df, path, schemas.X)` and the next stage
reads with `read_parquet(path, schemas.X)`, which names the file and the column when
an artifact does not match. Add a schema here when you add a stage.
"""

import pyarrow as pa

# prepare_corpus → data/corpus/sentences.parquet
CORPUS = pa.schema(
    [
        ("id", pa.string()),  # stable sentence id: <doc_id>-<n>
        ("doc_id", pa.string()),
        ("title", pa.string()),  # article title ("" where the source has none)
        ("text", pa.string()),  # the sentence as it appears in the source
        ("tokens", pa.list_(pa.string())),  # Moses (en) or MeCab (ja) tokens
        ("n_words", pa.int32()),
        ("lang", pa.string()),
    ]
)

# -- artifact schemas above this line --
