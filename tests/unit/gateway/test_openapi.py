"""The OpenAPI generator (services/kit/gateway/openapi.py), without running Envoy: the real
descriptor set's surface, and a made-up service with the proto features the real ones do
not use yet (maps, a body field, a response body, additional bindings, nested path
variables), expected values written by hand from the proto3 JSON mapping and
google/api/http.proto."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor_pb2

from services.kit.gateway.openapi import openapi_document
from tavla.common.v1 import auth_pb2

DESCRIPTOR = Path(__file__).resolve().parents[3] / "gen" / "tavla.pb"
F = descriptor_pb2.FieldDescriptorProto
ERROR_REF = {"$ref": "#/components/schemas/Error"}


def test_the_real_surface_public_methods_only_with_their_security() -> None:
    doc = openapi_document(DESCRIPTOR)
    login = doc["paths"]["/v1/sessions"]["post"]
    assert login["security"] == []
    body = login["requestBody"]["content"]["application/json"]["schema"]["properties"]
    assert {"email", "password"} <= set(body)
    account = doc["paths"]["/v1/accounts/{account_id}"]["get"]
    assert account["security"] == [{"bearer": []}]
    assert account["parameters"] == [{"name": "account_id", "in": "path", "required": True,
                                      "schema": {"type": "string"}}]
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    # SERVICE methods (no http rule, never routed) are absent: PlaceHold, CreateGame.
    grpc_methods = {op["x-grpc-method"] for ops in doc["paths"].values() for op in ops.values()}
    assert "/tavla.wallet.v1.WalletService/PlaceHold" not in grpc_methods
    assert "/tavla.game.v1.GameService/CreateGame" not in grpc_methods
    assert "delete" in doc["paths"]["/v1/queue/{ticket_id}"]


def test_proto3_json_names_int64_as_strings_enums_by_name_query_parameters() -> None:
    doc = openapi_document(DESCRIPTOR)
    money = doc["components"]["schemas"]["tavla.common.v1.Money"]
    assert money["properties"]["minorUnits"]["type"] == "string"  # int64 minor_units
    assert money["properties"]["currency"] == {"type": "string"}
    # Answers always print both (always_print_primitive_fields); a client may omit either.
    assert money["required"] == ["minorUnits", "currency"]
    assert "required" not in doc["components"]["schemas"]["tavla.common.v1.Money-Input"]
    tables = doc["paths"]["/v1/tables"]["get"]
    params = {p["name"]: p for p in tables["parameters"]}
    assert params["pageSize"]["schema"]["type"] == "integer"  # int32 page_size
    assert params["minStakeMinorUnits"]["schema"]["type"] == "string"  # int64
    kind = params["kind"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert kind == "tavla.game.v1.PlayKind"
    assert "PLAY_KIND_MONEY_GAME" in doc["components"]["schemas"][kind]["enum"]
    assert all(p["in"] == "query" for p in tables["parameters"])
    error = doc["components"]["schemas"]["Error"]
    assert error["required"] == ["code", "message", "details"]
    assert set(error["properties"]) == {"code", "message", "details"}
    for ops in doc["paths"].values():
        for op in ops.values():
            assert op["responses"]["default"]["content"]["application/json"]["schema"] \
                == ERROR_REF


def _field(name: str, number: int, kind: int, type_name: str = "",
           repeated: bool = False) -> F:
    json_name = "".join(p if i == 0 else p.capitalize() for i, p in enumerate(name.split("_")))
    return F(name=name, number=number, type=kind, type_name=type_name, json_name=json_name,
             label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)


def _method(name: str, request: str, response: str, access: int, rule: http_pb2.HttpRule,
            stream: bool = False) -> descriptor_pb2.MethodDescriptorProto:
    method = descriptor_pb2.MethodDescriptorProto(
        name=name, input_type=f".tavla.toy.v1.{request}", output_type=f".tavla.toy.v1.{response}",
        server_streaming=stream)
    method.options.Extensions[annotations_pb2.http].CopyFrom(rule)
    method.options.Extensions[auth_pb2.access].access = access  # type: ignore[assignment]
    return method


def toy_descriptor(tmp_path: Path) -> Path:
    toy = descriptor_pb2.FileDescriptorProto(name="tavla/toy/v1/toy.proto",
                                             package="tavla.toy.v1", syntax="proto3")
    toy.dependency.extend(["google/api/annotations.proto", "tavla/common/v1/auth.proto"])
    entry = descriptor_pb2.DescriptorProto(name="ScoresEntry", field=[
        _field("key", 1, F.TYPE_STRING), _field("value", 2, F.TYPE_UINT64)])
    entry.options.map_entry = True
    board = descriptor_pb2.DescriptorProto(name="Board", field=[
        _field("board_id", 1, F.TYPE_STRING),
        _field("scores", 2, F.TYPE_MESSAGE, ".tavla.toy.v1.Board.ScoresEntry", repeated=True),
        _field("cells", 3, F.TYPE_INT32, repeated=True),
        _field("next", 4, F.TYPE_MESSAGE, ".tavla.toy.v1.Board"),  # recursive
        _field("note", 5, F.TYPE_STRING),
        _field("colour", 6, F.TYPE_STRING),
    ], nested_type=[entry], oneof_decl=[descriptor_pb2.OneofDescriptorProto(name="_note")])
    board.field[4].proto3_optional = True  # proto3 `optional string note`: has presence
    board.field[4].oneof_index = 0
    toy.message_type.extend([
        board,
        descriptor_pb2.DescriptorProto(name="Ref", field=[_field("board_id", 1, F.TYPE_STRING)]),
        descriptor_pb2.DescriptorProto(name="PutBoard", field=[
            _field("ref", 1, F.TYPE_MESSAGE, ".tavla.toy.v1.Ref"),
            _field("board", 2, F.TYPE_MESSAGE, ".tavla.toy.v1.Board"),
            _field("dry_run", 3, F.TYPE_BOOL)]),
        descriptor_pb2.DescriptorProto(name="Reply", field=[
            _field("board", 1, F.TYPE_MESSAGE, ".tavla.toy.v1.Board"),
            _field("blob", 2, F.TYPE_BYTES)]),
    ])
    put = http_pb2.HttpRule(put="/v1/boards/{ref.board_id}", body="board",
                            response_body="board")
    put.additional_bindings.add(post="/v1/boards/{ref.board_id=**}:put", body="*")
    toy.service.add(name="ToyService", method=[
        _method("Put", "PutBoard", "Reply", auth_pb2.ACCESS_PLAYER, put),
        _method("Watch", "Ref", "Board", auth_pb2.ACCESS_ANONYMOUS,
                http_pb2.HttpRule(get="/v1/boards/{board_id}:watch"), stream=True),
        _method("Internal", "Ref", "Board", auth_pb2.ACCESS_SERVICE,
                http_pb2.HttpRule(get="/v1/internal")),
    ])
    real = descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTOR.read_bytes())
    real.file.append(toy)
    path = tmp_path / "toy.pb"
    path.write_bytes(real.SerializeToString())
    return path


def test_any_proto_maps_bodies_response_bodies_bindings_streams(tmp_path: Path) -> None:
    doc = openapi_document(toy_descriptor(tmp_path), areas={"toy"})
    assert set(doc["paths"]) == {"/v1/boards/{ref.board_id}", "/v1/boards/{ref.board_id}:put",
                                 "/v1/boards/{board_id}:watch"}  # not the SERVICE method
    board_ref = {"$ref": "#/components/schemas/tavla.toy.v1.Board"}
    board_input = {"$ref": "#/components/schemas/tavla.toy.v1.Board-Input"}
    put = doc["paths"]["/v1/boards/{ref.board_id}"]["put"]
    assert put["security"] == [{"bearer": []}]
    assert put["requestBody"]["content"]["application/json"]["schema"] == board_input
    # Neither the path's field nor the body's: the rest are query parameters.
    assert [(p["name"], p["in"]) for p in put["parameters"]] == [
        ("ref.board_id", "path"), ("dryRun", "query")]
    assert put["responses"]["200"]["content"]["application/json"]["schema"] == board_ref
    star = doc["paths"]["/v1/boards/{ref.board_id}:put"]["post"]
    body: dict[str, Any] = star["requestBody"]["content"]["application/json"]["schema"]
    # body "*" with a nested path variable: `ref` stays in the body (only ref.board_id is bound).
    assert set(body["properties"]) == {"ref", "board", "dryRun"}
    assert star["operationId"] == "ToyService_Put_1"
    watch = doc["paths"]["/v1/boards/{board_id}:watch"]["get"]
    assert watch["security"] == []
    assert watch["responses"]["200"]["content"]["application/json"]["schema"]["items"] \
        == board_ref
    # Printed at their defaults: scalars, lists, maps; not a message or an optional field.
    assert doc["components"]["schemas"]["tavla.toy.v1.Board"]["required"] == [
        "boardId", "scores", "cells", "colour"]
    schema = doc["components"]["schemas"]["tavla.toy.v1.Board"]["properties"]
    assert schema["scores"] == {"type": "object", "additionalProperties": {
        "type": "string", "format": "uint64", "pattern": "^[0-9]{1,20}$"}}
    assert schema["cells"]["type"] == "array"
    assert schema["cells"]["items"]["type"] == "integer"
    assert schema["next"] == board_ref
    reply = doc["components"]["schemas"]["tavla.toy.v1.Reply"]["properties"]
    assert reply["blob"] == {"type": "string", "contentEncoding": "base64"}


def test_tavla_gateway_openapi_prints_the_document(tmp_path: Path) -> None:
    out = tmp_path / "openapi.json"
    result = subprocess.run(
        [sys.executable, "-m", "services.cli", "gateway", "openapi", "--descriptor",
         str(DESCRIPTOR), "--out", str(out)],
        cwd=DESCRIPTOR.parents[1], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text()) == openapi_document(DESCRIPTOR)
    missing = subprocess.run(
        [sys.executable, "-m", "services.cli", "gateway", "openapi", "--descriptor",
         str(tmp_path / "absent.pb")],
        cwd=DESCRIPTOR.parents[1], capture_output=True, text=True, timeout=60, check=False)
    assert missing.returncode == 2 and "absent.pb" in missing.stderr
