"""The gateway's view of the API: every method in the descriptor set and who may call it.

Who may call a method comes from its `(tavla.common.v1.access)` option, the same
declaration each service's auth interceptor reads, so the gateway and the
services cannot disagree about what is public: ANONYMOUS methods pass without a
token, PLAYER methods need a valid access token, SERVICE methods (and any
method that declares nothing) are never routed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor_pb2

from tavla.common.v1 import auth_pb2


class Exposure(Enum):
    ANONYMOUS = "anonymous"
    PLAYER = "player"
    HIDDEN = "hidden"


_EXPOSURE = {auth_pb2.ACCESS_ANONYMOUS: Exposure.ANONYMOUS, auth_pb2.ACCESS_PLAYER: Exposure.PLAYER}


@dataclass(frozen=True)
class RestBinding:
    """One `google.api.http` binding: HTTP verb and path template, e.g. GET /v1/games/{game_id}."""

    verb: str
    template: str

    @property
    def templated(self) -> bool:
        return "{" in self.template

    def path_regex(self) -> str:
        """A RE2 regex matching the paths of this template (a variable is one path segment
        or, for `{name=**}`, any number of them)."""
        parts = re.split(r"(\{[^}]*\})", self.template)
        out = []
        for part in parts:
            if part.startswith("{"):
                out.append(".+" if "**" in part else "[^/]+")
            else:
                out.append(re.escape(part))
        return "".join(out)


@dataclass(frozen=True)
class Method:
    service: str  # full name, e.g. tavla.accounts.v1.AccountsService
    name: str
    exposure: Exposure
    streaming: bool
    rest: tuple[RestBinding, ...]

    @property
    def grpc_path(self) -> str:
        return f"/{self.service}/{self.name}"

    @property
    def area(self) -> str:
        return self.service.split(".")[1]


def api_methods(descriptor: Path) -> list[Method]:
    """Every method of every service in a `tavla.<area>.v1` package, sorted by gRPC path."""
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor.read_bytes()).file
    found = [
        _method(f"{f.package}.{s.name}", m)
        for f in files
        if f.package.startswith("tavla.") and f.package.count(".") >= 2
        for s in f.service
        for m in s.method
    ]
    return sorted(found, key=lambda m: m.grpc_path)


def _method(service: str, method: descriptor_pb2.MethodDescriptorProto) -> Method:
    access: auth_pb2.MethodAccess = method.options.Extensions[auth_pb2.access]
    return Method(
        service=service,
        name=method.name,
        exposure=_EXPOSURE.get(access.access, Exposure.HIDDEN),
        streaming=method.server_streaming,
        rest=_bindings(method),
    )


def _bindings(method: descriptor_pb2.MethodDescriptorProto) -> tuple[RestBinding, ...]:
    if not method.options.HasExtension(annotations_pb2.http):
        return ()
    rule: http_pb2.HttpRule = method.options.Extensions[annotations_pb2.http]
    out = []
    for binding in (rule, *rule.additional_bindings):
        kind = binding.WhichOneof("pattern")
        if kind == "custom":
            out.append(RestBinding(binding.custom.kind.upper(), binding.custom.path))
        elif kind is not None:
            out.append(RestBinding(kind.upper(), getattr(binding, kind)))
    return tuple(out)
