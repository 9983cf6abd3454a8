"""A resumable cache of per-shard results next to a stage's final artifact.

Why not write the artifact itself as shards: the corpus needs global steps (dedup, the
seeded cap) after the per-shard work, and then reads the shards again to write
data/corpus/sentences.parquet. So the per-shard results go to
`<artifact>.partial-<key>/`, each file written atomically the moment its shard is
consumed; a rerun after a crash loads the finished ones instead of recomputing them,
and the stage deletes the directory once the artifact is written.

`key` must fingerprint everything the shard results depend on (params, input
checksums, shard boundaries; see paracl.core.io.fingerprint): a rerun with other params
gets another key, and the stale directory is removed rather than reused.
`_manifest.jsonl` gets one line per finished shard (name, rows, sha256), appended (a
rewrite per shard would cost O(shards²) on a big run); a shard is reused only if its
file matches its line, so a torn or foreign file is recomputed, never trusted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from paracl.core.io import atomic_path, sha256_file


class ShardCache:
    """Finished shards of one stage run, keyed by name (e.g. `split-00003`)."""

    def __init__(self, artifact: str | Path, key: str):
        artifact = Path(artifact)
        self.dir = artifact.with_name(f"{artifact.name}.partial-{key}")
        for stale in artifact.parent.glob(f"{artifact.name}.partial-*"):
            if stale != self.dir and stale.is_dir():
                shutil.rmtree(stale)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._manifest_path = self.dir / "_manifest.jsonl"
        self.manifest: dict[str, dict] = {}
        if self._manifest_path.exists():
            for line in self._manifest_path.read_text().splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:  # a line cut off by the crash
                    continue
                self.manifest[entry["name"]] = entry
        self.loaded = 0  # shards served from the cache in this run (for the log)

    def _path(self, name: str) -> Path:
        return self.dir / f"{name}.parquet"

    def get(self, name: str) -> pa.Table | None:
        """The shard's table if a previous run finished it intact, else None."""
        entry, path = self.manifest.get(name), self._path(name)
        if entry is None or not path.exists() or sha256_file(path) != entry["sha256"]:
            return None
        self.loaded += 1
        return pq.read_table(path)

    def read(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """A shard this run has put or got (no checksum: it was just checked)."""
        return pq.read_table(self._path(name), columns=columns)

    def put(self, name: str, table: pa.Table) -> None:
        """Write the shard atomically, then record it in the manifest."""
        path = self._path(name)
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp, compression="zstd")
        entry = {"name": name, "rows": table.num_rows, "sha256": sha256_file(path)}
        self.manifest[name] = entry
        with open(self._manifest_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")

    def remove(self) -> None:
        """Drop the cache (after the final artifact is safely written)."""
        shutil.rmtree(self.dir, ignore_errors=True)
