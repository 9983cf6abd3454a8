"""Unpack a verified archive (zip, tar.gz, or one gzip-compressed file such as PPDB 2.0's
`ppdb-2.0-s-all.gz`) next to where it landed, then drop it.

Why by hand rather than `extractall`: an archive from the internet may hold absolute
paths, `..`, links or device files. Only regular files with plain relative names are
written; anything else stops the fetch with one line naming the archive and member.
macOS resource forks (`__MACOSX/`, `._*`, as in SNLI's zip) are skipped: they are not
data. The caller works inside a temporary directory, so a failure leaves nothing.
"""

from __future__ import annotations

import gzip
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import IO

from paracl.stages.fetch.sources.registry import FetchError


def _target(root: Path, name: str, archive: Path) -> Path | None:
    """Where member `name` goes under root; None to skip it; error if unsafe."""
    path = PurePosixPath(name)
    if path.parts and (path.parts[0] == "__MACOSX" or path.name.startswith("._")):
        return None
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise FetchError(f"{archive.name}: unsafe member path {name!r}; nothing was kept")
    return root.joinpath(*path.parts)


def _write(source: IO[bytes], target: Path, archive: Path) -> None:
    if target.exists():
        raise FetchError(f"{archive.name}: member {target.name!r} would overwrite a file")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as out:
        shutil.copyfileobj(source, out, 1 << 20)


def _unzip(archive: Path, root: Path) -> int:
    count = 0
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            target = _target(root, info.filename, archive)
            if target is None:
                continue
            kind = stat.S_IFMT(info.external_attr >> 16)  # 0: no Unix mode recorded
            if kind not in (0, stat.S_IFREG):
                raise FetchError(f"{archive.name}: {info.filename!r} is not a regular file")
            with zf.open(info) as source:
                _write(source, target, archive)
            count += 1
    return count


def _untar(archive: Path, root: Path) -> int:
    count = 0
    with tarfile.open(archive, "r:gz") as tf:
        for member in tf:
            if member.isdir():
                continue
            target = _target(root, member.name, archive)
            if target is None:
                continue
            if not member.isfile():
                raise FetchError(f"{archive.name}: {member.name!r} is not a regular file")
            source = tf.extractfile(member)
            assert source is not None  # a regular file always has content
            _write(source, target, archive)
            count += 1
    return count


def _gunzip(archive: Path, root: Path) -> int:
    """One gzip-compressed file: written under its name without `.gz`."""
    with gzip.open(archive, "rb") as source:
        _write(source, root / archive.name.removesuffix(".gz"), archive)
    return 1


def _unpacker(name: str) -> Callable[[Path, Path], int]:
    if name.endswith(".zip"):
        return _unzip
    return _untar if name.endswith((".tar.gz", ".tgz")) else _gunzip


def unpack(archive: Path) -> int:
    """Unpack `archive` into its own folder and delete it; return the member count."""
    unpacker = _unpacker(archive.name)
    try:
        count = unpacker(archive, archive.parent)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, OSError) as err:
        raise FetchError(f"{archive.name}: damaged archive ({err}); nothing was kept") from None
    if count == 0:
        raise FetchError(f"{archive.name}: archive holds no files; nothing was kept")
    archive.unlink()
    return count
