"""One HTTP(S) download, checked for completeness before anyone reads it.

Why the byte counting: a server that drops the connection mid-file can leave a short
file that `urlopen` reports as a normal end of stream; a file shorter than its
Content-Length (or than the registry's size) is refused here, with one line naming the
URL, before the checksum would reject it less clearly. A host that cannot be reached at
all (no network, DNS, refused, timed out) raises `Unreachable`, so the caller can say
what helps then: a local mirror, not another try at the same URL.
"""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from pathlib import Path

from tqdm import tqdm

from paracl.stages.fetch.sources.registry import FetchError

TIMEOUT_S = 60


class Unreachable(FetchError):
    """The URL's host could not be reached, or the connection broke off."""


def _refuse_web_page(url: str, dest: Path, content_type: str) -> None:
    """A file host that wants a login or a "too large to scan" confirmation (Google Drive)
    answers with an HTML page; stored under the data file's name and fetched unverified,
    it would only fail later, in a reader, far from its cause."""
    if content_type == "text/html" and dest.suffix not in (".html", ".htm"):
        raise FetchError(
            f"{url}: the server sent a web page, not {dest.name} (a login or download "
            "confirmation page?); nothing was kept"
        )


def download(url: str, dest: Path, size: int | None, name: str | None = None) -> None:
    """Write `url` to `dest` (`name`: the file it becomes, if dest is a temporary path);
    FetchError (one line) on HTTP errors and short reads, Unreachable on network errors."""
    name = name or dest.name
    request = urllib.request.Request(url, headers={"User-Agent": "paracl-fetch"})
    got = 0
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            _refuse_web_page(url, Path(name), response.headers.get_content_type())
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else size
            with (
                open(dest, "wb") as out,
                tqdm(total=total, unit="B", unit_scale=True, desc=name, leave=False) as bar,
            ):
                while block := response.read(1 << 20):
                    out.write(block)
                    got += len(block)
                    bar.update(len(block))
    except urllib.error.HTTPError as err:
        raise FetchError(f"{url}: HTTP {err.code} {err.reason}; nothing was kept") from None
    except urllib.error.URLError as err:  # before the connection: DNS, refused, no route
        raise Unreachable(f"{url}: unreachable ({err.reason})") from None
    except (TimeoutError, ConnectionError) as err:
        raise Unreachable(f"{url}: connection lost after {got} bytes ({err})") from None
    except http.client.IncompleteRead as err:
        raise FetchError(
            f"{url}: download cut off after {got + len(err.partial)} bytes; nothing was kept"
        ) from None
    except (OSError, http.client.HTTPException) as err:
        raise FetchError(f"could not download {url}: {err}; nothing was kept") from None
    expected = total if total is not None else size
    if expected is not None and got < expected:
        raise FetchError(
            f"{url}: download cut off after {got} of {expected} bytes; nothing was kept"
        )
    if size is not None and got != size:
        raise FetchError(f"{url}: {got} bytes, the registry says {size}; nothing was kept")
