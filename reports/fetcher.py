"""The only way WeasyPrint reads anything while it renders a report.

Report content comes from the cluster, and cluster strings are attacker-controlled: an
``<img src="file:///etc/passwd">``, a CSS ``url()`` or a ``<link rel=attachment>`` that slipped
into the HTML would otherwise make WeasyPrint read local files or the network (SSRF, local file
disclosure: reference/stack.md §3). ``AssetFetcher`` serves ``data:`` URLs (the SVG charts
annex draws) and regular files under annex's packaged ``reports/assets`` folder, after
resolving symbolic links and ``..``; it follows no redirects, opens no socket, and records
every request, refused ones logged as warnings, so a test can prove what was read.
"""

from __future__ import annotations

import logging
import mimetypes
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from weasyprint.urls import URLFetcher, URLFetcherResponse

from reports.render import FetchRecord

log = logging.getLogger("annex.reports.fetcher")

ASSETS_DIR = Path(__file__).resolve().parent / "assets"
"""Packaged stylesheet and fonts: the only files a report may read."""

MAX_DATA_URL_BYTES = 8 << 20
"""A ``data:`` URL longer than this is refused (charts are a few kilobytes)."""


class RefusedFetch(ValueError):
    """A URL outside annex's assets; WeasyPrint treats it as a missing resource."""


class AssetFetcher(URLFetcher):
    """Serves ``data:`` and files under ``assets_dir``; refuses and logs everything else."""

    def __init__(self, assets_dir: Path = ASSETS_DIR) -> None:
        super().__init__(allowed_protocols=("data", "file"), allow_redirects=False)
        self.assets_dir = assets_dir.resolve()
        self.records: list[FetchRecord] = []

    def fetch(self, url: str, headers: dict[str, str] | None = None) -> URLFetcherResponse:
        shown = url[:300]
        scheme = urlsplit(url).scheme.lower()
        if scheme == "data":
            if len(url) > MAX_DATA_URL_BYTES:
                raise self._refuse(shown, "data: URL above the size limit")
            response = super().fetch(url, headers)
            self.records.append(FetchRecord(shown, True))
            return response
        if scheme != "file":
            raise self._refuse(shown, f"scheme {scheme or '(none)'!r} is not served")
        parts = urlsplit(url)
        if parts.netloc not in ("", "localhost"):
            raise self._refuse(shown, "file: URL names a host")
        path = Path(url2pathname(unquote(parts.path))).resolve()
        if not path.is_relative_to(self.assets_dir):
            raise self._refuse(shown, "file outside annex's report assets")
        if not path.is_file():
            raise self._refuse(shown, "no such asset")
        media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        body = path.read_bytes()
        self.records.append(FetchRecord(shown, True))
        return URLFetcherResponse(path.as_uri(), body, {"Content-Type": media_type})

    def _refuse(self, url: str, reason: str) -> RefusedFetch:
        self.records.append(FetchRecord(url, False, reason))
        log.warning("report renderer refused %s: %s", url, reason)
        return RefusedFetch(f"annex refused {url}: {reason}")
