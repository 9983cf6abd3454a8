"""Per-shard results kept next to a stage's artifact, so a crashed run resumes.

Every sharded stage saves each shard's result atomically into `<artifact>.partial-<key>/`
the moment it is consumed; a rerun loads (or skips) the finished ones instead of
recomputing them. Two ways to finish:

- `publish(n)` (map_shards: the artifact *is* the shards) writes `_manifest.json` (each
  shard's file, rows and sha256) and moves the directory onto the artifact in one rename;
- `remove()` (the corpus: global steps such as dedup and the seeded cap follow the
  per-shard work, then the shards are read again into one file) drops it afterwards.

The resume rule, one for every stage: a shard is reused iff its file matches its line in
`_manifest.jsonl` (name, rows, sha256; appended, since a rewrite per shard would cost
O(shards²) on a big run), under a `key` that fingerprints everything the shards depend
on (params, input checksums, shard boundaries; see paracl.core.io.fingerprint). A torn
or foreign file is recomputed, never trusted; a rerun with other params gets another key,
and the stale directory is removed at the first write.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from paracl.core.io import ArtifactError, atomic_path, sha256_file, write_json

LOG = "_manifest.jsonl"


class ShardCache:
    """Finished shards of one stage run, keyed by name (`part-00003`, `split-000003`)."""

    def __init__(self, artifact: str | Path, key: str):
        self.artifact = Path(artifact)
        self.dir = self.artifact.with_name(f"{self.artifact.name}.partial-{key}")
        self.manifest: dict[str, dict] = {}
        log = self.dir / LOG
        if log.exists():
            for line in log.read_text().splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:  # a line cut off by the crash
                    continue
                self.manifest[entry["name"]] = entry
        self.loaded = 0  # shards served from the cache in this run (for the log)
        self._opened = False

    def open(self) -> Path:
        """Make the directory (dropping other keys' stale ones) at the first write, not
        before: a run that fails first (a damaged input, a model that does not load)
        leaves nothing behind and does not throw away another run's resumable shards."""
        if not self._opened:
            for stale in self.artifact.parent.glob(f"{self.artifact.name}.partial-*"):
                if stale != self.dir and stale.is_dir():
                    shutil.rmtree(stale)
            self.dir.mkdir(parents=True, exist_ok=True)
            self._opened = True
        return self.dir

    def _path(self, name: str) -> Path:
        return self.dir / f"{name}.parquet"

    def has(self, name: str) -> bool:
        """Whether a previous run finished this shard intact (the resume rule)."""
        entry, path = self.manifest.get(name), self._path(name)
        if entry is None or not path.exists() or sha256_file(path) != entry["sha256"]:
            return False
        self.loaded += 1
        return True

    def get(self, name: str) -> pa.Table | None:
        """The shard's table if a previous run finished it intact, else None."""
        return pq.read_table(self._path(name)) if self.has(name) else None

    def read(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """A shard this run has put or got (no checksum: it was just checked)."""
        return pq.read_table(self._path(name), columns=columns)

    def put(self, name: str, table: pa.Table) -> None:
        """Write the shard atomically, its manifest line appended before the file gets
        its name: a shard file a crash leaves behind always has its line."""
        self.open()
        with atomic_path(self._path(name)) as tmp:
            pq.write_table(table, tmp, compression="zstd")
            entry = {"name": name, "rows": table.num_rows, "sha256": sha256_file(tmp)}
            with open(self.dir / LOG, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry, sort_keys=True) + "\n")
        self.manifest[name] = entry

    def publish(self, names: list[str]) -> dict:
        """Make the shards `names` (all put or reused) the artifact, in that order: write
        `_manifest.json`, then move the directory onto the artifact in one rename."""
        self.open()
        shards = []
        for i, name in enumerate(names):
            entry = self.manifest.get(name)
            if entry is None or not self._path(name).exists():
                raise ArtifactError(
                    f"{self._path(name)}: shard {i} of {len(names)} was never written"
                )
            shards.append(
                {"file": f"{name}.parquet", "rows": entry["rows"], "sha256": entry["sha256"]}
            )
        manifest = {"shards": shards, "rows": sum(s["rows"] for s in shards)}
        write_json(manifest, self.dir / "_manifest.json")
        (self.dir / LOG).unlink()  # the artifact holds its shards and their manifest only
        if self.artifact.exists():
            shutil.rmtree(self.artifact) if self.artifact.is_dir() else self.artifact.unlink()
        os.replace(self.dir, self.artifact)
        return manifest

    def remove(self) -> None:
        """Drop the cache (after the final artifact is safely written)."""
        shutil.rmtree(self.dir, ignore_errors=True)
