"""One raw GET through the official client's own transport, for lists and watches alike.

The client's generated API classes (``CoreV1Api`` ...) cost ~3 s of import and a pydantic
validation per call, for nothing annex uses: it reads raw bodies. So annex builds the request
the way those classes do (``param_serialize`` + ``call_api``; auth, TLS, proxies and timeouts
all come from the client's configuration) and keeps the response unread. The client's two
generations differ here: kubernetes >= 37 separates serialising from sending; kubernetes < 37
(the legacy generator, which dagster-k8s pins) takes the parts in ``call_api`` and raises
``ApiException`` on non-2xx itself. Both are supported.

An error answer's body (a Status, or a proxy's page) is read with a small cap and a deadline,
as list bodies are (``collectors.http_body``), so that it cannot stall or exhaust annex either
(with kubernetes >= 37; the legacy client reads it itself).
"""

from __future__ import annotations

import time
from typing import Any

import urllib3
from kubernetes.client import ApiClient, ApiException

from collectors.http_body import BodyError, read_body

_HEADERS = {"Accept": "application/json"}
ERROR_BODY_BYTES = 1 << 20
"""An error answer's body is kept up to this size (inflated); beyond, it is cut off."""
ERROR_BODY_SECONDS = 30.0
"""An error answer's body must arrive within this long, or it is dropped."""


def raw_get(
    api: ApiClient,
    path: str,
    query: list[tuple[str, Any]],
    *,
    timeout: tuple[float, float] | None,
) -> Any:
    """GET ``path`` with ``query``; the unread urllib3 response, or ``ApiException`` on non-2xx."""
    if not hasattr(api, "param_serialize"):  # kubernetes < 37
        return api.call_api(
            path,
            "GET",
            query_params=query,
            header_params=dict(_HEADERS),
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=timeout,
        )
    request = api.param_serialize(
        "GET",
        path,
        query_params=query,
        header_params=dict(_HEADERS),
        auth_settings=["BearerToken"],
    )
    response = api.call_api(*request, _request_timeout=timeout)
    if not 200 <= response.status <= 299:
        response.data = _error_body(response.response)
        raise ApiException.from_response(http_resp=response, body=None, data=None)
    return response.response


def _error_body(response: Any) -> bytes:
    """The body of an error answer, capped; empty when it cannot be read within the bounds."""
    try:
        body = read_body(
            response,
            max_bytes=ERROR_BODY_BYTES,
            deadline=time.monotonic() + ERROR_BODY_SECONDS,
        )
    except (BodyError, OSError, urllib3.exceptions.HTTPError):  # the status says enough
        response.close()
        body = b""
    response.release_conn()
    return body
