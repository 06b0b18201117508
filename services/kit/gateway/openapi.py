"""The OpenAPI 3.1 document of the REST surface, generated from the descriptor set.

Never written by hand: every public method (ANONYMOUS or PLAYER access, see
`methods.py`) with a `google.api.http` rule becomes one operation per binding, and
its request and response messages become schemas exactly as Envoy's gRPC-JSON
transcoder maps them (proto3 JSON: lowerCamelCase names, 64-bit integers as
strings, enums by name, Timestamp and Duration as strings, maps as objects):
- path variables are path parameters (`{name=**}` is one parameter that may hold `/`);
- a binding with `body: "*"` takes the request message as the JSON body, less the fields
  bound to the path; `body: "field"` takes that field; without a body the remaining
  scalar fields (nested messages flattened as `a.b`) are query parameters;
- a message has two schemas: as answered (`tavla.x.v1.M`: the fields the transcoder
  always prints are required: scalars, enums, lists and maps; not singular messages,
  oneof members or `optional` fields) and as sent (`tavla.x.v1.M-Input`: none required,
  the transcoder fills defaults);
- `response_body: "field"` answers that field; a server stream (`returns (stream M)`)
  answers a JSON array of M, written as each message arrives;
- PLAYER methods require a bearer access token (`security: bearer`), ANONYMOUS none;
- every error, from a service or from the gateway itself, is the shared `Error`
  schema: `{"code": <gRPC status code>, "message": "...", "details": [...]}`
  (`config.py` maps the gateway's own refusals to it; the transcoder converts a
  service's gRPC status into it).

No Go toolchain is on the build machines, so grpc-gateway's protoc-gen-openapiv2
(Go) is out; this walks `google.protobuf` descriptors instead. `tavla gateway
openapi` prints it, `make proto` writes gen/openapi.json, and the gateway serves it
at GET /openapi.json.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor_pb2

from services.kit.gateway.methods import Exposure, api_methods

FieldProto = descriptor_pb2.FieldDescriptorProto
Schema = dict[str, Any]

OPENAPI_PATH = "/openapi.json"
# Request-side message schemas: `tavla.x.v1.M-Input` (nothing required), beside `tavla.x.v1.M`.
INPUT_SUFFIX = "-Input"
ERROR_SCHEMA = "Error"
BEARER = "bearer"

# gRPC status code by HTTP status for the error responses every operation documents;
# config.py maps Envoy's own refusals with the same table.
HTTP_TO_GRPC: dict[int, int] = {
    400: 3,   # INVALID_ARGUMENT (bad JSON, a field of the wrong type, a refused value)
    401: 16,  # UNAUTHENTICATED (no, expired or forged token)
    403: 7,   # PERMISSION_DENIED
    404: 5,   # NOT_FOUND (no such path, or no such thing)
    413: 3,   # INVALID_ARGUMENT (a body over the gateway's limit: sending it again won't do)
    429: 8,   # RESOURCE_EXHAUSTED (rate limited, a limit reached)
    500: 13,  # INTERNAL
    503: 14,  # UNAVAILABLE
    504: 4,   # DEADLINE_EXCEEDED
}
_ERROR_DESCRIPTIONS = {
    400: "The request is malformed or a value is refused.",
    401: "No valid access token.",
    403: "The token's holder may not do this.",
    404: "No such path or no such resource.",
    429: "Too many requests, or a limit is reached.",
}

_INT64 = {FieldProto.TYPE_INT64, FieldProto.TYPE_SINT64, FieldProto.TYPE_SFIXED64}
_UINT64 = {FieldProto.TYPE_UINT64, FieldProto.TYPE_FIXED64}
_INT32 = {FieldProto.TYPE_INT32, FieldProto.TYPE_SINT32, FieldProto.TYPE_SFIXED32}
_UINT32 = {FieldProto.TYPE_UINT32, FieldProto.TYPE_FIXED32}
_FLOAT = {FieldProto.TYPE_FLOAT, FieldProto.TYPE_DOUBLE}

# Well-known types have their own JSON forms (proto3 JSON mapping).
_WELL_KNOWN: dict[str, Schema] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]{1,9})?s$"},
    "google.protobuf.Empty": {"type": "object", "additionalProperties": False},
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array"},
    "google.protobuf.FieldMask": {"type": "string"},
    "google.protobuf.Any": {"type": "object", "properties": {"@type": {"type": "string"}},
                            "required": ["@type"]},
    "google.protobuf.StringValue": {"type": "string"},
    "google.protobuf.BytesValue": {"type": "string", "contentEncoding": "base64"},
    "google.protobuf.BoolValue": {"type": "boolean"},
    "google.protobuf.Int32Value": {"type": "integer", "format": "int32"},
    "google.protobuf.UInt32Value": {"type": "integer", "format": "int32", "minimum": 0},
    "google.protobuf.Int64Value": {"type": "string", "format": "int64",
                                   "pattern": r"^-?[0-9]{1,19}$"},
    "google.protobuf.UInt64Value": {"type": "string", "format": "uint64",
                                    "pattern": r"^[0-9]{1,20}$"},
    "google.protobuf.FloatValue": {"type": "number"},
    "google.protobuf.DoubleValue": {"type": "number"},
}


class _Types:
    """Messages and enums of the descriptor set by full name (without the leading dot)."""

    def __init__(self, files: Iterable[descriptor_pb2.FileDescriptorProto]) -> None:
        self.messages: dict[str, descriptor_pb2.DescriptorProto] = {}
        self.enums: dict[str, descriptor_pb2.EnumDescriptorProto] = {}
        for f in files:
            self._add(f.package, f.message_type, f.enum_type)

    def _add(self, scope: str, messages: Iterable[descriptor_pb2.DescriptorProto],
             enums: Iterable[descriptor_pb2.EnumDescriptorProto]) -> None:
        for enum in enums:
            self.enums[f"{scope}.{enum.name}"] = enum
        for message in messages:
            name = f"{scope}.{message.name}"
            self.messages[name] = message
            self._add(name, message.nested_type, message.enum_type)


class _Builder:
    def __init__(self, types: _Types) -> None:
        self.types = types
        self.schemas: dict[str, Schema] = {}

    def ref(self, type_name: str, output: bool) -> Schema:
        """A reference to a message's or enum's schema, adding it (and what it uses). A
        message has two: as the gateway answers it (`output`: the fields it always
        prints are required) and as a client may send it (`-Input`: nothing required)."""
        name = type_name.lstrip(".")
        if name in _WELL_KNOWN:
            return dict(_WELL_KNOWN[name])
        key = name if output or name in self.types.enums else f"{name}{INPUT_SUFFIX}"
        if key not in self.schemas:
            self.schemas[key] = {}  # placeholder: recursive messages refer to themselves
            if name in self.types.enums:
                values = [v.name for v in self.types.enums[name].value]
                self.schemas[key] = {"type": "string", "enum": values}
            else:
                self.schemas[key] = self.message(self.types.messages[name], output)
        return {"$ref": f"#/components/schemas/{key}"}

    def message(self, message: descriptor_pb2.DescriptorProto, output: bool,
                leave_out: Collection[str] = ()) -> Schema:
        fields = [f for f in message.field if f.name not in leave_out]
        schema: Schema = {"type": "object",
                          "properties": {f.json_name: self.field(f, output) for f in fields},
                          "additionalProperties": False}
        if output:
            required = [f.json_name for f in fields if _always_printed(f)]
            if required:
                schema["required"] = required
        return schema

    def field(self, field: FieldProto, output: bool) -> Schema:
        entry = self._map_entry(field)
        if entry is not None:
            return {"type": "object",
                    "additionalProperties": self.single(entry.field[1], output)}
        single = self.single(field, output)
        if field.label == FieldProto.LABEL_REPEATED:
            return {"type": "array", "items": single}
        return single

    def _map_entry(self, field: FieldProto) -> descriptor_pb2.DescriptorProto | None:
        if field.type != FieldProto.TYPE_MESSAGE or field.label != FieldProto.LABEL_REPEATED:
            return None
        message = self.types.messages.get(field.type_name.lstrip("."))
        return message if message is not None and message.options.map_entry else None

    def single(self, field: FieldProto, output: bool) -> Schema:
        kind = field.type
        if kind in (FieldProto.TYPE_MESSAGE, FieldProto.TYPE_ENUM):
            return self.ref(field.type_name, output)
        if kind in _INT64:
            # proto3 JSON writes 64-bit integers as strings (JavaScript numbers are doubles).
            return {"type": "string", "format": "int64", "pattern": r"^-?[0-9]{1,19}$"}
        if kind in _UINT64:
            return {"type": "string", "format": "uint64", "pattern": r"^[0-9]{1,20}$"}
        if kind in _INT32:
            return {"type": "integer", "format": "int32",
                    "minimum": -(2**31), "maximum": 2**31 - 1}
        if kind in _UINT32:
            return {"type": "integer", "format": "int64", "minimum": 0, "maximum": 2**32 - 1}
        if kind in _FLOAT:
            return {"type": "number"}
        if kind == FieldProto.TYPE_BOOL:
            return {"type": "boolean"}
        if kind == FieldProto.TYPE_BYTES:
            return {"type": "string", "contentEncoding": "base64"}
        return {"type": "string"}

    def field_path(self, message_name: str, path: str) -> FieldProto:
        """The field a dotted path (`game.id`, proto names) names, from a message."""
        message = self.types.messages[message_name.lstrip(".")]
        *head, last = path.split(".")
        for part in head:
            message = self.types.messages[_field(message, part).type_name.lstrip(".")]
        return _field(message, last)

    def query_parameters(self, message_name: str, leave_out: Collection[str],
                         prefix: str = "", proto_prefix: str = "",
                         depth: int = 0) -> list[Schema]:
        """The query parameters of a binding: every field not bound to the path or the
        body (`leave_out`: dotted proto paths), nested (non-repeated) messages flattened
        as `a.b`, by JSON name."""
        message = self.types.messages[message_name.lstrip(".")]
        out: list[Schema] = []
        for field in message.field:
            proto_path = f"{proto_prefix}{field.name}"
            if proto_path in leave_out:
                continue
            name = f"{prefix}{field.json_name}"
            is_message = field.type == FieldProto.TYPE_MESSAGE
            if is_message and field.type_name.lstrip(".") not in _WELL_KNOWN:
                if field.label != FieldProto.LABEL_REPEATED and depth < 3:
                    out.extend(self.query_parameters(field.type_name, leave_out, f"{name}.",
                                                     f"{proto_path}.", depth + 1))
                continue  # repeated messages and maps cannot be query parameters
            schema = self.field(field, output=False)
            param: Schema = {"name": name, "in": "query", "required": False, "schema": schema}
            if schema.get("type") == "array":
                param.update(style="form", explode=True)
            out.append(param)
        return out


def _always_printed(field: FieldProto) -> bool:
    """Whether the transcoder prints the field even at its default (its print options:
    `always_print_primitive_fields`): scalars and enums without presence, repeated
    fields and maps; not singular messages, oneof members or proto3 `optional` fields."""
    if field.HasField("oneof_index") or field.proto3_optional:
        return False
    return field.type != FieldProto.TYPE_MESSAGE or field.label == FieldProto.LABEL_REPEATED


def _field(message: descriptor_pb2.DescriptorProto, name: str) -> FieldProto:
    for field in message.field:
        if field.name == name:
            return field
    raise KeyError(f"{message.name} has no field {name!r}")


_VARIABLE = re.compile(r"\{([^}=]+)(=[^}]*)?\}")


def _bindings(method: descriptor_pb2.MethodDescriptorProto) -> list[http_pb2.HttpRule]:
    rule: http_pb2.HttpRule = method.options.Extensions[annotations_pb2.http]
    return [rule, *rule.additional_bindings]


def _verb_and_template(binding: http_pb2.HttpRule) -> tuple[str, str]:
    kind = binding.WhichOneof("pattern")
    if kind == "custom":
        return binding.custom.kind.lower(), binding.custom.path
    assert kind is not None
    return kind, str(getattr(binding, kind))


def _error_responses() -> dict[str, Any]:
    error = {"content": {"application/json": {"schema": {
        "$ref": f"#/components/schemas/{ERROR_SCHEMA}"}}}}
    responses: dict[str, Any] = {
        str(status): {"description": text, **error}
        for status, text in _ERROR_DESCRIPTIONS.items()
    }
    responses["default"] = {"description": "Any other error, in the same shape.", **error}
    return responses


def error_schema() -> Schema:
    """The one shape of every error body, from a service or from the gateway."""
    return {
        "type": "object",
        "description": ("A google.rpc.Status: the gRPC status code (0-16), a message a person "
                        "can act on, and any structured details."),
        "properties": {
            "code": {"type": "integer", "minimum": 0, "maximum": 16},
            "message": {"type": "string"},
            "details": {"type": "array", "items": {
                "type": "object", "properties": {"@type": {"type": "string"}}}},
        },
        "required": ["code", "message", "details"],
    }


def _operation(builder: _Builder, service: str, method: descriptor_pb2.MethodDescriptorProto,
               exposure: Exposure, binding: http_pb2.HttpRule, index: int,
               verb: str, template: str) -> Schema:
    variables = [m.group(1) for m in _VARIABLE.finditer(template)]
    request = method.input_type
    parameters: list[Schema] = [
        {"name": v, "in": "path", "required": True,
         "schema": builder.single(builder.field_path(request, v), output=False)}
        for v in variables
    ]
    top_level_bound = {v for v in variables if "." not in v}
    operation: Schema = {
        "operationId": f"{service.split('.')[-1]}_{method.name}" + (f"_{index}" if index else ""),
        "tags": [service.split(".")[-1]],
        "summary": method.name,
        "x-grpc-method": f"/{service}/{method.name}",
    }
    if binding.body == "*":
        message = builder.types.messages[request.lstrip(".")]
        body = builder.message(message, output=False, leave_out=top_level_bound)
        operation["requestBody"] = {"required": True,
                                    "content": {"application/json": {"schema": body}}}
    elif binding.body:
        body_field = builder.field_path(request, binding.body)
        operation["requestBody"] = {"required": True, "content": {"application/json": {
            "schema": builder.field(body_field, output=False)}}}
        parameters.extend(builder.query_parameters(request, {*variables, binding.body}))
    else:
        parameters.extend(builder.query_parameters(request, variables))
    if parameters:
        operation["parameters"] = parameters
    response = (builder.field(builder.field_path(method.output_type, binding.response_body),
                              output=True)
                if binding.response_body else builder.ref(method.output_type, output=True))
    if method.server_streaming:
        response = {"type": "array", "items": response,
                    "description": "A server stream: one element per message, as they come."}
        operation["x-server-streaming"] = True
    operation["responses"] = {
        "200": {"description": "OK", "content": {"application/json": {"schema": response}}},
        **_error_responses(),
    }
    operation["security"] = [{BEARER: []}] if exposure is Exposure.PLAYER else []
    return operation


def openapi_document(descriptor: Path, areas: Collection[str] | None = None) -> Schema:
    """The OpenAPI document of every public REST binding in the descriptor set (only of
    services in `areas`, the ones a gateway routes, if given)."""
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor.read_bytes()).file
    builder = _Builder(_Types(files))
    exposures = {m.grpc_path: m.exposure for m in api_methods(descriptor)}
    paths: dict[str, dict[str, Any]] = {}
    for f in files:
        for service in f.service:
            full = f"{f.package}.{service.name}"
            if areas is not None and full.split(".")[1] not in areas:
                continue
            for method in service.method:
                exposure = exposures.get(f"/{full}/{method.name}", Exposure.HIDDEN)
                if exposure is Exposure.HIDDEN or not method.options.HasExtension(
                        annotations_pb2.http):
                    continue
                for index, binding in enumerate(_bindings(method)):
                    verb, template = _verb_and_template(binding)
                    path = _VARIABLE.sub(lambda m: "{" + m.group(1) + "}", template)
                    paths.setdefault(path, {})[verb] = _operation(
                        builder, full, method, exposure, binding, index, verb, template)
    builder.schemas[ERROR_SCHEMA] = error_schema()
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Tavla API",
            "version": "v1",
            "description": ("The REST surface of the Tavla gateway, generated from protos/ "
                            "(services/kit/gateway/openapi.py). Errors are all one shape: "
                            "the Error schema."),
        },
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(builder.schemas.items())),
            "securitySchemes": {BEARER: {
                "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                "description": "The access token from POST /v1/sessions (ES256 JWT).",
            }},
        },
    }
