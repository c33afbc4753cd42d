"""`kind: Status` error bodies, shaped as apimachinery's `errors.New*` functions build them.

Every error the server answers is one of these, except the 429 of the overload filter,
whose body is plain text (reference §1.8).
"""

from __future__ import annotations

import orjson

CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter."
)
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter, or use the continue token in "
    "this response to retrieve the remainder of the results. Continuing with the provided "
    "token results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)
LIST_TOO_OLD = "The resourceVersion for the provided list is too old."
TOO_MANY_REQUESTS = "Too many requests, please try again later.\n"  # Go's http.Error adds \n


class ApiError(Exception):
    """An error answer: HTTP status, a Status object, extra headers."""

    def __init__(self, status: dict, headers: dict[str, str] | None = None) -> None:
        super().__init__(status.get("message", ""))
        self.status = status
        self.code = int(status["code"])
        self.headers = headers or {}

    def body(self) -> bytes:
        return orjson.dumps(self.status)


def status_object(
    code: int,
    reason: str,
    message: str,
    details: dict | None = None,
    metadata: dict | None = None,
) -> dict:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": metadata or {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        status["details"] = details
    status["code"] = code
    return status


def bad_request(message: str) -> ApiError:
    return ApiError(status_object(400, "BadRequest", message))


def unauthorized() -> ApiError:
    return ApiError(status_object(401, "Unauthorized", "Unauthorized"))


def forbidden(resource: str, namespace: str | None, user: str) -> ApiError:
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    group = '""'
    message = (
        f'{resource} is forbidden: User "{user}" cannot list resource "{resource}" in API '
        f"group {group} {scope}"
    )
    return ApiError(status_object(403, "Forbidden", message, {"kind": resource}))


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    what = f"{resource}.{group}" if group else resource
    details = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return ApiError(status_object(404, "NotFound", f'{what} "{name}" not found', details))


def path_not_found() -> ApiError:
    return ApiError(
        status_object(404, "NotFound", "the server could not find the requested resource", {})
    )


def method_not_allowed() -> ApiError:
    return ApiError(
        status_object(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            {},
        )
    )


def not_acceptable() -> ApiError:
    return ApiError(
        status_object(
            406, "NotAcceptable", "only the following media types are accepted: application/json"
        )
    )


def expired(message: str, continue_token: str | None = None) -> ApiError:
    metadata = {"continue": continue_token} if continue_token else {}
    return ApiError(status_object(410, "Expired", message, metadata=metadata))


def invalid_list_options(causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid, kind ListOptions; causes are (field, reason, message-with-type-prefix)."""
    errors = [f"{field}: {message}" for field, _reason, message in causes]
    aggregate = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    details = {
        "group": "meta.k8s.io",
        "kind": "ListOptions",
        "causes": [
            {"reason": reason, "message": message, "field": field}
            for field, reason, message in causes
        ],
    }
    return ApiError(
        status_object(
            422, "Invalid", f'ListOptions.meta.k8s.io "" is invalid: {aggregate}', details
        )
    )


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """apimachinery's NewInvalid: 422, causes are (field, reason, message-with-type-prefix)."""
    errors = [f"{field}: {message}" for field, _reason, message in causes]
    aggregate = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    qualified = f"{kind}.{group}" if group else kind
    details: dict = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [
        {"reason": reason, "message": message, **({"field": field} if field else {})}
        for field, reason, message in causes
    ]
    return ApiError(
        status_object(422, "Invalid", f'{qualified} "{name}" is invalid: {aggregate}', details)
    )


def too_large_resource_version(wanted: int, current: int) -> ApiError:
    details = {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }
    message = f"Timeout: Too large resource version: {wanted}, current: {current}"
    return ApiError(status_object(504, "Timeout", message, details), {"Retry-After": "1"})


def server_error(code: int) -> ApiError:
    """An injected 5xx, shaped like the API server's own."""
    if code == 500:
        return ApiError(
            status_object(
                500,
                "InternalError",
                "Internal error occurred: simulated fault",
                {"causes": [{"message": "simulated fault"}]},
            )
        )
    if code == 503:
        return ApiError(
            status_object(
                503,
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
                {},
            )
        )
    if code == 504:
        return ApiError(
            status_object(
                504,
                "Timeout",
                "Timeout: request did not complete "
                "within requested timeout - context deadline exceeded",
                {},
            )
        )
    reason = {
        409: "Conflict",
        403: "Forbidden",
        404: "NotFound",
        400: "BadRequest",
        410: "Expired",
        502: "InternalError",
    }.get(code, "Unknown")
    return ApiError(status_object(code, reason, f"simulated fault ({code})"))
