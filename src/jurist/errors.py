"""The exception tree of jurist.

Every error jurist raises derives from :class:`JuristError`::

    JuristError
    ├── UserError                  a usage mistake: fix the call, the file or the flag
    │   ├── ConfigError            bad option, unknown template or provider
    │   ├── DataError              bad input data: names the file, line, item or field
    │   │   └── UntrustedEstimateError  labels an estimate cannot be trusted on (says why)
    │   └── MissingDependencyError an optional package is not installed (names the pip extra)
    └── JuristRuntimeError         something failed while running
        ├── ModelError             a backend call failed
        │   ├── APIConnectionError       no connection / dropped connection
        │   │   ├── APITimeoutError      no answer within the timeout
        │   │   └── ResponseTooLargeError  an answer body past the size cap
        │   ├── APIStatusError           the server answered with an error status
        │   │   ├── BadRequestError (400), AuthenticationError (401),
        │   │   ├── PermissionDeniedError (403), NotFoundError (404),
        │   │   ├── RequestTimeoutError (408), ConflictError (409),
        │   │   ├── UnprocessableEntityError (422), RateLimitError (429)
        │   │   ├── InternalServerError (>= 500)
        │   │   └── UnsupportedRequestError  the server refuses the request's form (never retried)
        │   ├── ModelLoadError           a local model could not be loaded
        │   └── CapabilityError          the backend cannot do what was asked
        ├── ParseError             a judge's output holds no valid verdict
        ├── CacheError             the cache file cannot be opened or created
        └── OutputError            a run store or output file cannot be written (a full disk)

``error.category`` gives the short category recorded on a failed judgment
(``"api"``, ``"timeout"``, ``"parse"``, ...).
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "CacheError",
    "CapabilityError",
    "ConfigError",
    "ConflictError",
    "DataError",
    "InternalServerError",
    "JuristError",
    "JuristRuntimeError",
    "MissingDependencyError",
    "ModelError",
    "ModelLoadError",
    "NotFoundError",
    "OutputError",
    "ParseError",
    "PermissionDeniedError",
    "RateLimitError",
    "RequestTimeoutError",
    "ResponseTooLargeError",
    "UnprocessableEntityError",
    "UnsupportedRequestError",
    "UntrustedEstimateError",
    "UserError",
    "status_error",
]


class JuristError(Exception):
    """Root of every error jurist raises."""

    category: ClassVar[str] = "error"


class UserError(JuristError):
    """A usage mistake by the caller: a bad argument, file, field or flag."""

    category = "usage"


class ConfigError(UserError, ValueError):
    """A bad option: an unknown template, provider or parameter."""


class DataError(UserError, ValueError):
    """Bad input data. The message names the file and line, or the item and field."""


class UntrustedEstimateError(DataError):
    """Labels an estimate from few labels cannot be trusted on: too few, all alike, or a
    subset that is not a random sample (and carries no inclusion probabilities). The
    message names the reason, and the file or field the labels came from."""


class MissingDependencyError(UserError, ImportError):
    """An optional package is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str, feature: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{feature} needs the optional package {package!r}: pip install 'jurist[{extra}]'"
        )


class JuristRuntimeError(JuristError):
    """Something failed while running (a backend call, a parse)."""


class ModelError(JuristRuntimeError):
    """A backend call failed.

    ``attempts`` counts the calls made before giving up (a retry wrapper sets it).
    """

    category = "api"

    def __init__(self, message: str, *, model: str | None = None) -> None:
        self.model = model
        self.attempts: int = 1
        from jurist._secrets import scrub  # on first use: start-up does not compile its patterns

        super().__init__(scrub(message))  # a server may echo the key it was sent


class APIConnectionError(ModelError):
    """The connection could not be made or was dropped before an answer."""

    category = "connection"


class APITimeoutError(APIConnectionError):
    """No answer arrived within the timeout."""

    category = "timeout"


class ResponseTooLargeError(APIConnectionError):
    """The server's answer grew past the backend's size cap; the read was stopped."""


class APIStatusError(ModelError):
    """The server answered with an error status."""

    status_code: int = 0

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        model: str | None = None,
        body: str | None = None,
        retry_after: float | None = None,
        request_id: str | None = None,
    ) -> None:
        self.status_code = status_code
        self.body = body
        self.retry_after = retry_after
        self.request_id = request_id
        super().__init__(message, model=model)


class BadRequestError(APIStatusError):
    """HTTP 400."""


class AuthenticationError(APIStatusError):
    """HTTP 401."""


class PermissionDeniedError(APIStatusError):
    """HTTP 403."""


class NotFoundError(APIStatusError):
    """HTTP 404."""


class RequestTimeoutError(APIStatusError):
    """HTTP 408."""


class ConflictError(APIStatusError):
    """HTTP 409."""


class UnprocessableEntityError(APIStatusError):
    """HTTP 422."""


class RateLimitError(APIStatusError):
    """HTTP 429."""

    category = "rate_limit"


class InternalServerError(APIStatusError):
    """HTTP 5xx."""


class UnsupportedRequestError(APIStatusError):
    """The server refuses the form of the request, whatever its status (a llama-cpp-python
    server answers HTTP 500 to ``response_format`` of type ``json_schema``).

    Deterministic: sending it again gets the same answer, so it is never retried.
    ``form`` names what was refused (``"json_schema"``).
    """

    def __init__(
        self,
        message: str,
        *,
        form: str,
        status_code: int,
        model: str | None = None,
        body: str | None = None,
        request_id: str | None = None,
    ) -> None:
        self.form = form
        super().__init__(
            message, status_code=status_code, model=model, body=body, request_id=request_id
        )


_STATUS_CLASSES: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    408: RequestTimeoutError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def status_error(
    status_code: int,
    message: str,
    *,
    model: str | None = None,
    body: str | None = None,
    retry_after: float | None = None,
    request_id: str | None = None,
) -> APIStatusError:
    """Build the error class that matches an HTTP status code.

    >>> type(status_error(429, "slow down")).__name__
    'RateLimitError'
    >>> type(status_error(503, "down")).__name__
    'InternalServerError'
    """
    cls = _STATUS_CLASSES.get(status_code)
    if cls is None:
        cls = InternalServerError if status_code >= 500 else APIStatusError
    return cls(
        message,
        status_code=status_code,
        model=model,
        body=body,
        retry_after=retry_after,
        request_id=request_id,
    )


class ModelLoadError(ModelError):
    """A local model could not be loaded (missing folder, no hub access)."""

    category = "load"


class CapabilityError(ModelError):
    """The backend cannot do what the request asks (logprobs, candidate scoring, ...)."""

    category = "capability"


class ParseError(JuristRuntimeError):
    """A judge's output holds no valid verdict."""

    category = "parse"


class CacheError(JuristRuntimeError):
    """The completion cache file cannot be opened or created (names the file)."""

    category = "cache"


class OutputError(JuristRuntimeError):
    """A run store or an output file cannot be written (a full disk); names the file."""

    category = "output"
