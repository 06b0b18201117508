"""Domain errors and the gRPC status each maps to.

Domain code raises these with a message written for the person who will read
it (a player, a client developer, an operator); the server interceptor turns
them into a gRPC status with that message. Anything else becomes INTERNAL with
only the request id, so internals never leak to clients.
"""

from __future__ import annotations

import grpc


class DomainError(Exception):
    """Base of every error a caller can act on."""

    code: grpc.StatusCode = grpc.StatusCode.FAILED_PRECONDITION

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(DomainError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(DomainError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(DomainError):
    code = grpc.StatusCode.ALREADY_EXISTS


class FailedPrecondition(DomainError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class Conflict(DomainError):
    """A concurrent change won (stale version, idempotency key reused with other content)."""

    code = grpc.StatusCode.ABORTED


class Unauthenticated(DomainError):
    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(DomainError):
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(DomainError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unavailable(DomainError):
    code = grpc.StatusCode.UNAVAILABLE
