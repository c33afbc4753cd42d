"""Reading DCGM series back from Prometheus' HTTP API (``/api/v1/query_range``).

Why it is shaped this way:

* **Windows.** Prometheus refuses a range query whose series would exceed 11,000 points
  (``exceeded maximum resolution of 11,000 points per timeseries``), so ``[start, end)`` is cut
  into windows of at most ``max_points_per_series`` evaluation instants. Instants sit on
  multiples of the step (``ceil(start/step)*step`` onwards, strictly before ``end``), so
  consecutive collections read the same instants and overlaps load once.
* **One query per field.** Each query selects one DCGM field under both naming generations
  (``{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_GPU_UTIL_RATIO"}``), then one query reads every
  other ``DCGM_*`` series. A response is therefore bounded by GPUs x points of one field; if
  it still exceeds ``max_response_bytes`` the window is halved and read again.
* **Transport.** ``urllib`` (no extra dependency): GET with urlencoded parameters, or a POST
  form when the encoded query is long (the "everything else" selector names every known
  field); ``Authorization: Bearer`` when a token is given, ``Authorization: Basic`` for
  Prometheus' own ``--web.config.file`` ``basic_auth_users`` (never both; neither is ever
  logged, stored or put in an error message); gzip accepted and
  inflated incrementally; the body is read in chunks and refused beyond
  ``max_response_bytes`` (also when ``Content-Length`` announces more).
* **Errors.** Any non-2xx answer raises ``PrometheusError`` (a ``CollectionError``) carrying
  Prometheus' ``errorType`` and ``error``; a dropped connection or a short body raises
  ``CollectionError`` too.
* **Decoding.** ``msgspec`` decodes each series' labels and keeps its ``values`` array as raw
  JSON; the ``[[t,"v"],...]`` bytes become ``t,v`` lines that Arrow's CSV reader turns into
  columns, and Arrow converts the value strings (``"NaN"``, ``"+Inf"`` included). No Python
  object is created per sample.
"""

from __future__ import annotations

import base64
import http.client
import io
import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode, urlsplit, urlunsplit
from urllib.request import Request

import msgspec
import pyarrow as pa
import pyarrow.csv as pacsv

from annex.errors import CollectionError
from collectors.http_body import BodyError, BodyTooLarge, BodyTooSlow, read_body
from collectors.http_head import build_opener, head_deadline
from collectors.telemetry import fields

POST_THRESHOLD = 1024
"""Encoded query strings longer than this go in a POST form (URLs stay well under 8 KiB)."""
USER_AGENT = "annex-telemetry-collector"


# -- transport -------------------------------------------------------------------------------


class FetchError(Exception):
    """An HTTP exchange that did not produce a complete 2xx body."""

    def __init__(self, message: str, status: int | None = None, body: bytes = b"") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = body


class TooLarge(FetchError):
    """The body is (or announces itself) larger than the allowed maximum."""


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str


def redact(url: str) -> str:
    """``url`` without user info (``user:password@``), as stored in ``target``."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


_OPENER = build_opener()


def fetch(
    url: str,
    *,
    params: dict[str, str] | None = None,
    post: bool = False,
    token: str | None = None,
    basic_auth: tuple[str, str] | None = None,
    timeout: float,
    max_bytes: int,
    accept: str = "*/*",
) -> Response:
    """GET (or POST form) ``url``; the complete body, or ``FetchError``."""
    data = None
    headers = {"Accept": accept, "Accept-Encoding": "gzip", "User-Agent": USER_AGENT}
    if token and basic_auth:
        raise CollectionError(
            "both a bearer token and basic auth were given for one request",
            hint="configure either prometheus_token_env or prometheus_username with "
            "prometheus_password_env",
        )
    if token:
        headers["Authorization"] = f"Bearer {token}"
    elif basic_auth:
        user, password = basic_auth
        pair = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        headers["Authorization"] = f"Basic {pair}"
    if params:
        encoded = urlencode(params)
        if post:
            data = encoded.encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        else:
            url = f"{url}{'&' if '?' in url else '?'}{encoded}"
    request = Request(url, data=data, headers=headers, method="POST" if post else "GET")
    try:
        # connect, TLS, request and response head within one overall deadline
        with head_deadline(timeout) as deadline:
            response = _OPENER.open(request, timeout=timeout)
    except HTTPError as error:
        try:
            body = _read(error, max_bytes=min(max_bytes, 1 << 20), timeout=timeout)
        except FetchError:
            body = b""
        raise FetchError(f"HTTP {error.code} {error.reason}", error.code, body) from None
    except (URLError, OSError, http.client.HTTPException) as error:
        if deadline.expired:
            raise FetchError(
                f"no response head within {timeout:g} s (telemetry.request_timeout_seconds)"
            ) from None
        reason = getattr(error, "reason", error)
        raise FetchError(f"cannot connect: {reason}") from None
    with response:
        body = _read(response, max_bytes=max_bytes, timeout=timeout)
        return Response(response.status, body, response.headers.get("Content-Type", ""))


def _read(response: Any, *, max_bytes: int, timeout: float) -> bytes:
    """The whole body, inflated under ``max_bytes``, within ``timeout`` seconds of its headers
    (however long Prometheus took to answer): a server that trickles its answer, every read
    succeeding within the socket timeout, cannot hold the collection past it."""
    try:
        return read_body(response, max_bytes=max_bytes, deadline=time.monotonic() + timeout)
    except BodyTooLarge as error:
        raise TooLarge(f"response exceeds the limit of {max_bytes} bytes: {error}") from None
    except BodyTooSlow as error:
        raise FetchError(f"{error} (telemetry.request_timeout_seconds)") from None
    except BodyError as error:
        raise FetchError(f"bad response body: {error}") from None
    except http.client.IncompleteRead as error:
        raise FetchError(
            f"response body ends early ({len(error.partial)} more bytes read, "
            f"{error.expected} missing): the connection dropped"
        ) from None
    except (TimeoutError, OSError) as error:
        raise FetchError(f"reading the response failed: {error}") from None


# -- Prometheus ------------------------------------------------------------------------------


class PrometheusError(CollectionError):
    """Prometheus refused a query; ``error_type``/``error`` are its own words."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None,
        error_type: str | None,
        error: str | None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.error_type = error_type
        self.error = error


class _ApiError(msgspec.Struct):
    status: str = ""
    errorType: str | None = None
    error: str | None = None


class _Series(msgspec.Struct):
    metric: dict[str, str]
    values: msgspec.Raw = msgspec.Raw(b"[]")  # [[t, "v"], ...], turned into columns by Arrow


class _Data(msgspec.Struct):
    resultType: str
    result: list[_Series]


class _Answer(msgspec.Struct):
    status: str
    data: _Data | None = None
    errorType: str | None = None
    error: str | None = None
    warnings: list[str] = []


class _SeriesAnswer(msgspec.Struct):
    status: str
    data: list[dict[str, str]] = []


_DECODER = msgspec.json.Decoder(_Answer)
_SERIES_DECODER = msgspec.json.Decoder(_SeriesAnswer)
_ERROR_DECODER = msgspec.json.Decoder(_ApiError)


@dataclass
class Matrix:
    """A decoded matrix result, columnar: ``counts[i]`` points belong to ``metrics[i]``."""

    metrics: list[dict[str, str]]
    counts: list[int]
    times: pa.Array  # float64 epoch seconds
    values: pa.Array  # string, as Prometheus wrote them ("0.87", "NaN", "+Inf")
    warnings: list[str] = field(default_factory=list)
    http_status: int = 200
    response_bytes: int = 0


def decode_matrix(body: bytes) -> Matrix:
    """Decode a ``query_range`` success body; ``CollectionError`` if it is not one."""
    try:
        answer = _DECODER.decode(body)
    except msgspec.DecodeError as error:
        raise CollectionError(
            f"Prometheus answered a body that is not a range-query result ({error})",
            hint="check that prometheus_url points at Prometheus' HTTP API",
        ) from None
    if answer.status != "success" or answer.data is None:
        raise PrometheusError(
            f"Prometheus answered status {answer.status!r}: {answer.errorType}: {answer.error}",
            status=200,
            error_type=answer.errorType,
            error=answer.error,
        )
    if answer.data.resultType != "matrix":
        raise CollectionError(f"expected a matrix result, got {answer.data.resultType!r}")
    metrics: list[dict[str, str]] = []
    counts: list[int] = []
    chunks: list[bytes] = []
    for series in answer.data.result:
        raw = bytes(series.values)
        if b" " in raw or b"\n" in raw or b"\t" in raw or b"\r" in raw:
            raw = raw.translate(None, b" \t\r\n")
        if raw == b"[]":
            continue
        if not (raw.startswith(b"[[") and raw.endswith(b"]]")):
            raise CollectionError(f"Prometheus answered malformed sample pairs: {raw[:80]!r}")
        inner = raw[2:-2]
        metrics.append(series.metric)
        counts.append(inner.count(b"],[") + 1)
        chunks.append(inner.replace(b"],[", b"\n").replace(b'"', b""))
    times, values = _pairs_to_columns(chunks, sum(counts))
    return Matrix(metrics, counts, times, values, answer.warnings, 200, len(body))


def _pairs_to_columns(chunks: list[bytes], expected: int) -> tuple[pa.Array, pa.Array]:
    """``t,v`` lines into (float64 times, string values), parsed by Arrow's CSV reader."""
    if not chunks:
        return pa.array([], pa.float64()), pa.array([], pa.string())
    text = b"\n".join(chunks) + b"\n"
    try:
        table = pacsv.read_csv(
            io.BytesIO(text),
            read_options=pacsv.ReadOptions(column_names=["t", "v"], block_size=64 << 20),
            parse_options=pacsv.ParseOptions(quote_char=False),
            convert_options=pacsv.ConvertOptions(
                column_types={"t": pa.float64(), "v": pa.string()}, strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid as error:
        raise CollectionError(f"Prometheus answered malformed sample pairs ({error})") from None
    if table.num_rows != expected:
        raise CollectionError(
            f"Prometheus answered {table.num_rows} sample pairs where {expected} were announced"
        )
    return table.column("t").combine_chunks(), table.column("v").combine_chunks()


def prometheus_error(target: str, error: FetchError) -> CollectionError:
    """The ``CollectionError`` for a failed exchange, with Prometheus' own words if any."""
    error_type = detail = None
    if error.body:
        try:
            parsed = _ERROR_DECODER.decode(error.body)
            error_type, detail = parsed.errorType, parsed.error
        except msgspec.DecodeError:
            detail = error.body[:300].decode("utf-8", "replace").strip() or None
    status = error.status
    if status in (401, 403):
        hint = (
            "Prometheus (or the proxy in front of it) refuses the credentials: set the bearer "
            "token in the environment variable named by the cluster's prometheus_token_env, "
            "or for Prometheus' own basic auth set prometheus_username and the password in "
            "the variable named by prometheus_password_env"
        )
    elif error_type == "bad_data":
        hint = "the query or its range/step is invalid: check telemetry.step_seconds"
    elif isinstance(error, TooLarge):
        hint = "raise telemetry.max_response_bytes or shorten the collection window"
    elif status is None:
        hint = "check that prometheus_url is reachable from here"
    else:
        hint = "Prometheus is failing or overloaded: retry later or shorten the window"
    words = f"{error_type}: {detail}" if error_type else (detail or error.message)
    message = f"Prometheus {target} refused the query ({error.message}): {words}"
    if status is None:
        message = f"Prometheus {target}: {error.message}"
    return PrometheusError(message, status=status, error_type=error_type, error=detail, hint=hint)


class PrometheusClient:
    """A minimal, bounded client of Prometheus' range-query API."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None,
        timeout: float,
        max_response_bytes: int,
        post_threshold: int = POST_THRESHOLD,
        basic_auth: tuple[str, str] | None = None,
    ) -> None:
        if token and basic_auth:
            raise CollectionError(
                f"Prometheus {redact(url)}: both a bearer token and basic auth were given",
                hint="configure either prometheus_token_env or prometheus_username with "
                "prometheus_password_env",
            )
        self.base = url.rstrip("/")
        self.target = redact(self.base)
        self.token = token
        self.basic_auth = basic_auth
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.post_threshold = post_threshold

    def query_range(self, query: str, start: float, end: float, step: float) -> Matrix:
        params = {
            "query": query,
            "start": _seconds(start),
            "end": _seconds(end),
            "step": _seconds(step),
        }
        post = len(urlencode({"query": query})) > self.post_threshold
        try:
            response = fetch(
                f"{self.base}/api/v1/query_range",
                params=params,
                post=post,
                token=self.token,
                basic_auth=self.basic_auth,
                timeout=self.timeout,
                max_bytes=self.max_response_bytes,
                accept="application/json",
            )
        except TooLarge:
            raise  # the caller halves the window
        except FetchError as error:
            raise prometheus_error(self.target, error) from None
        matrix = decode_matrix(response.body)
        matrix.http_status = response.status
        return matrix

    def series(self, match: str, start: float, end: float) -> list[dict[str, str]]:
        """The label sets of the series ``match`` selects in ``[start, end]``
        (``/api/v1/series``: labels only, no samples).

        Answers ``[]`` when the API has no such endpoint or refuses the selector (404, 405,
        400, 422: a Prometheus-compatible store that lacks it): the caller then knows less,
        never more. Anything else (refused credentials, 5xx, no connection) raises like a
        range query.
        """
        params = {"match[]": match, "start": _seconds(start), "end": _seconds(end)}
        try:
            response = fetch(
                f"{self.base}/api/v1/series",
                params=params,
                token=self.token,
                basic_auth=self.basic_auth,
                timeout=self.timeout,
                max_bytes=self.max_response_bytes,
                accept="application/json",
            )
        except FetchError as error:
            if error.status in (400, 404, 405, 422):
                return []
            raise prometheus_error(self.target, error) from None
        try:
            answer = _SERIES_DECODER.decode(response.body)
        except msgspec.DecodeError:
            return []
        return answer.data if answer.status == "success" else []


def _seconds(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:.3f}"


# -- planning --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """Evaluation instants ``start, start+step, ..., end`` (``end`` inclusive, as Prometheus)."""

    start: float
    end: float
    step: float

    @property
    def points(self) -> int:
        return round((self.end - self.start) / self.step) + 1

    def halves(self) -> tuple[Window, Window]:
        first = self.points // 2
        middle = self.start + first * self.step
        return Window(self.start, middle - self.step, self.step), Window(
            middle, self.end, self.step
        )


def epoch(moment: datetime) -> float:
    """Epoch seconds; a naive datetime is UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def plan_windows(start: float, end: float, step: float, max_points: int) -> list[Window]:
    """Windows covering the step-aligned instants in ``[start, end)``, each <= max_points."""
    if step <= 0:
        raise CollectionError(f"telemetry step must be positive, got {step}")
    if max_points < 1:
        raise CollectionError(f"max_points_per_series must be at least 1, got {max_points}")
    first = math.ceil(start / step) * step
    if first >= end:
        return []
    total = math.ceil((end - first) / step)
    windows = []
    k = 0
    while k < total:
        n = min(max_points, total - k)
        windows.append(Window(first + k * step, first + (k + n - 1) * step, step))
        k += n
    return windows


def field_queries() -> list[tuple[str, str]]:
    """``(label, query)``: one per known field (both generations), then every other DCGM name."""
    queries = []
    for f in fields.FIELDS:
        names = sorted({a.name for a in f.aliases})
        queries.append((f.metric, '{__name__=~"' + "|".join(names) + '"}'))
    known = "|".join(fields.exporter_names())
    queries.append(("other", '{__name__=~"DCGM_.+",__name__!~"' + known + '"}'))
    return queries
