"""The service's own user errors (beside the library's tree) and the HTTP status of every error.

The CLI's contract carries over: a user error is one paragraph (what is wrong, what is allowed, how to fix),
here as ``{"error": {"status": ..., "type": ..., "message": ...}}`` with a 4xx status, never a traceback.
"""

from __future__ import annotations

from gpufleet.errors import (
    ConfigFileError,
    DataError,
    FetchError,
    GpufleetError,
    InfeasibleError,
    InputError,
    UnknownNameError,
    UnsupportedError,
)


class ServiceError(GpufleetError):
    """An error of the service itself; ``status`` is its HTTP status."""

    status = 400


class NotAuthenticated(ServiceError):
    status = 401


class Forbidden(ServiceError):
    status = 403


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    status = 409


class PayloadTooLarge(ServiceError):
    status = 413


class RateLimited(ServiceError):
    status = 429


class TimedOut(ServiceError):
    """A synchronous request ran past the service's request time limit (504 Gateway Timeout)."""

    status = 504


#: library errors -> HTTP status, most specific first
_STATUS: tuple[tuple[type[GpufleetError], int], ...] = (
    (UnknownNameError, 404),  # an unknown GPU, model, scenario ... (the message lists close matches)
    (UnsupportedError, 422),
    (ConfigFileError, 422),  # a body (workload, fleet) that does not validate
    (InfeasibleError, 409),
    (InputError, 400),
    (FetchError, 502),
    (DataError, 500),  # a shipped table is broken: the server's fault, and its message says so
)


def http_status(exc: GpufleetError) -> int:
    """The HTTP status of a gpufleet error."""
    if isinstance(exc, ServiceError):
        return exc.status
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 400
