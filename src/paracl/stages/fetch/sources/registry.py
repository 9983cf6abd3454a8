"""The data registry (`sources.tsv`): one row per file, and how a file is checked.

Why a checksum column that is not always a sha256: every row names the checksum its
publisher (or a public copy) states, and says where it came from (`checksum_from`).
Most state a sha256 (our mirror's MANIFEST, TFDS checksum files, Git LFS pointers,
whose oid is the file's sha256). Some publishers state only the git object id of the
file in their repository; hashing `blob <size>\\0<bytes>` with SHA-1 checks the bytes
as exactly as git does. Where no checksum is published the row says `unknown`, and the
fetch refuses the file unless the user opts in (`fetch.allow_unverified`).
"""

from __future__ import annotations

import csv
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from paracl.core.errors import UserError

REGISTRY = Path(__file__).with_name("sources.tsv")
COLUMNS = ["source", "file", "url", "sha256", "bytes", "license", "checksum_from"]
UNKNOWN = "unknown"
GIT_BLOB = "git-blob-sha1:"
ARCHIVES = (".zip", ".tar.gz", ".tgz", ".gz")  # unpacked where the archive lands (.gz: one file)


class FetchError(UserError, RuntimeError):
    """A file is missing, unreachable or fails its checksum."""


@dataclass(frozen=True)
class SourceFile:
    source: str
    file: str
    url: str
    sha256: str  # 64 hex digits, `git-blob-sha1:<40 hex>`, or `unknown`
    bytes: int | None  # None: not published
    license: str
    checksum_from: str = ""

    @property
    def verified(self) -> bool:
        return self.sha256 != UNKNOWN

    @property
    def archive(self) -> bool:
        return self.file.endswith(ARCHIVES)


def load_registry(path: Path = REGISTRY) -> list[SourceFile]:
    """Every row of the registry, checked: a malformed row names its line."""
    with open(path, encoding="utf-8") as f:
        lines = [(n, line) for n, line in enumerate(f, 1) if not line.startswith("#")]
    reader = csv.DictReader((line for _, line in lines), delimiter="\t")
    if reader.fieldnames != COLUMNS:
        raise FetchError(f"{path}: header must be {COLUMNS}, got {reader.fieldnames}")
    entries, seen = [], set()
    for (lineno, _), row in zip(lines[1:], reader, strict=True):
        entry = _entry(row, f"{path.name}:{lineno}")
        if entry.file in seen:
            raise FetchError(f"{path.name}:{lineno}: file {entry.file!r} is registered twice")
        seen.add(entry.file)
        entries.append(entry)
    return entries


def _entry(row: dict, where: str) -> SourceFile:
    if any(value is None for value in row.values()):
        raise FetchError(f"{where}: expected {len(COLUMNS)} tab-separated columns")
    digest, size = row["sha256"], row["bytes"]
    if not (
        re.fullmatch(r"[0-9a-f]{64}", digest)
        or re.fullmatch(rf"{GIT_BLOB}[0-9a-f]{{40}}", digest)
        or digest == UNKNOWN
    ):
        raise FetchError(f"{where}: sha256 must be 64 hex digits, {GIT_BLOB}<40 hex> or unknown")
    if not (size.isdigit() or size == UNKNOWN):
        raise FetchError(f"{where}: bytes must be a number or unknown, got {size!r}")
    if not row["url"].startswith(("https://", "http://")) or ".." in Path(row["file"]).parts:
        raise FetchError(f"{where}: bad url or file path")
    return SourceFile(
        row["source"],
        row["file"],
        row["url"],
        digest,
        int(size) if size.isdigit() else None,
        row["license"],
        row["checksum_from"],
    )


def select(registry: list[SourceFile], sources: list[str]) -> list[SourceFile]:
    """The registry rows of the named sources; an unknown name is an error."""
    known = sorted({f.source for f in registry})
    unknown = [s for s in sources if s not in known]
    if unknown:
        raise FetchError(
            f"fetch.sources: unknown source {unknown[0]!r} (known: {', '.join(known)})"
        )
    return [f for f in registry if f.source in sources]


def file_digests(path: Path) -> tuple[str, str]:
    """(sha256, git blob sha1) of a file, in one pass."""
    sha256 = hashlib.sha256()
    blob = hashlib.sha1(f"blob {path.stat().st_size}\0".encode(), usedforsecurity=False)
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            sha256.update(block)
            blob.update(block)
    return sha256.hexdigest(), blob.hexdigest()


def verify(entry: SourceFile, path: Path, where: str) -> str:
    """Check `path` against the entry's checksum; return its sha256 (recorded in the
    metrics, so even an unverified file is pinned after its first fetch)."""
    sha256, blob = file_digests(path)
    kind, actual = (
        ("git blob id", GIT_BLOB + blob)
        if entry.sha256.startswith(GIT_BLOB)
        else (
            "sha256",
            sha256,
        )
    )
    if entry.verified and actual != entry.sha256:
        raise FetchError(
            f"{where}: {kind} mismatch for {entry.file} (source {entry.source!r}; expected "
            f"{entry.sha256}, got {actual}); the file differs from the registered version, "
            "nothing was kept"
        )
    return sha256
