"""Render the Envoy v3 bootstrap for the gateway from the API methods and the settings.

What every gateway does, whoever runs it:
- one route per exposed method, by gRPC path, so native gRPC and REST (rewritten by
  the gRPC-JSON transcoder) reach the same cluster; SERVICE methods get no route;
- the acting identity header is stripped from every request, then set from a
  verified token's `sub`; the token itself is forwarded, services verify it again;
- the client address header is stripped too, then set on every forwarded request
  to the client's address as Envoy determined it (the peer, or the address the
  `xff_num_trusted_hops` trusted proxies appended to X-Forwarded-For), so a client
  cannot choose it; the device id header passes as sent (a claim, not a credential;
  services read both through services/kit/client_signals.py);
- with `upstream_tls` set, every service cluster speaks mutual TLS to the services'
  gateway ports with the gateway's client certificate: the only calls whose client
  address and device id a service believes (services/kit/gateway_tls.py);
- tokens must be ES256-signed by a key in the JWKS, from `jwt_issuer`, for one of
  `jwt_audiences`, and carry `exp`; ANONYMOUS methods and /healthz need none;
- login, registration and refresh are rate limited per client address (429);
- with `webhooks` set, the payment provider's webhook path goes, untranscoded and
  without a token (its HMAC signature is checked by the wallet), to that listener;
- /healthz is 200 only while every service cluster is healthy enough;
- GET /openapi.json answers the OpenAPI document of the routed REST surface (generated
  from the descriptor set by openapi.py, given to `render`), without a token;
- the web client's files (static.py, read from `web/` when the config is rendered) are
  GET routes without a token, `/` answering `index.html`; a GET of an unknown file under
  their top-level directories needs no token either and is the transcoder's 404 in the
  one error shape (a path outside them still needs a token first, as before);
- every error a REST client sees has one JSON shape, `{"code": <gRPC status code>,
  "message": "...", "details": [...]}`: the transcoder turns a service's gRPC status
  into it (`convert_grpc_status`), and the local reply mappers rewrite Envoy's own
  refusals (token 401, unknown path 404, bad JSON or unknown query parameter 400, rate
  limit 429, no healthy upstream 503, ...) into it, the gRPC code from the HTTP status as in
  openapi.HTTP_TO_GRPC; gRPC and gRPC-Web calls keep their grpc-status trailers;
- gRPC-Web (browsers' gRPC, server streams included) is turned into gRPC and back, so a
  browser reaches the same routes; it is not native gRPC and is never refused as such.
Filter order matters and is fixed here: strip identity and client address, /healthz,
CORS (preflights carry no token), refuse native gRPC unless allowed, gRPC-Web to gRPC
(after that refusal: from here on it looks native), verify the token, transcode, rate
limit (after the transcoder, so REST and gRPC calls share one route), route (which adds
the client address).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from services.kit.client_signals import CLIENT_ADDRESS_HEADER, DEVICE_ID_HEADER
from services.kit.gateway.methods import Exposure, Method
from services.kit.gateway.openapi import HTTP_TO_GRPC, OPENAPI_PATH
from services.kit.gateway.settings import (
    RATE_LIMITED_METHODS,
    GatewaySettings,
    RateLimit,
    Upstream,
    UpstreamTls,
)
from services.kit.gateway.static import (
    CACHE_CONTROL,
    CONTENT_SECURITY_POLICY,
    StaticFile,
    check_no_collision,
    top_level_names,
)

ACCOUNT_ID_HEADER = "x-tavla-account-id"
# Envoy's own view of the client: with use_remote_address, the peer or the address
# xff_num_trusted_hops trusted proxies put in X-Forwarded-For, never a client's claim.
CLIENT_ADDRESS_VALUE = "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"
JWT_PROVIDER = "tavla"
HEALTHZ_PATH = "/healthz"
RATE_LIMITED_BODY = "too many attempts from your address; wait a minute and try again"
# The largest REST request body the gateway passes on. The largest a public method takes
# (a registration, a chat message, a case note) is under 2 KiB; gRPC's own 4 MiB would
# let one request make a service parse megabytes.
MAX_REQUEST_BODY_BYTES = 64 * 1024
TOO_LARGE_BODY = (
    f"the request body is larger than the {MAX_REQUEST_BODY_BYTES} bytes the API accepts"
)
# Cluster with no endpoints: the catch-all route's target (see _routes).
UNROUTED = "unrouted"
# The payment provider's signed webhooks (services/wallet/webhooks.py) and their cluster.
WEBHOOK_PATH = "/v1/payments/webhooks/provider"
WEBHOOK_CLUSTER = "payment_webhooks"

Config = dict[str, Any]


def render(settings: GatewaySettings, methods: Sequence[Method],
           openapi: Mapping[str, Any] | None = None,
           web: Sequence[StaticFile] = ()) -> Config:
    """The bootstrap config; only methods of services in `settings.upstreams` are exposed.
    With `openapi` (openapi.openapi_document for the same upstreams), GET /openapi.json
    answers it; each of `web` (static.load_web) is served at its path. Raises
    static.StaticError if a web file would sit under a path the API uses."""
    exposed = [m for m in methods if m.area in settings.upstreams
               and m.exposure is not Exposure.HIDDEN]
    check_no_collision(web, _reserved_segments(methods))
    listeners = [_public_listener(settings, exposed, openapi, web)]
    clusters = [_unrouted_cluster()] + [
        _cluster(area, settings) for area in sorted(settings.upstreams)
    ]
    if settings.webhooks is not None:
        clusters.append(_webhook_cluster(settings))
    if settings.ops_port is not None:
        listeners.append(_ops_listener(settings.listen_address, settings.ops_port))
        clusters.append(_static_cluster("admin", settings.admin_address, settings.admin_port))
    return {
        "admin": {"address": _address(settings.admin_address, settings.admin_port)},
        "static_resources": {"listeners": listeners, "clusters": clusters},
    }


def _address(host: str, port: int) -> Config:
    return {"socket_address": {"address": host, "port_value": port}}


def _typed(type_name: str, **fields: Any) -> Config:
    return {"@type": f"type.googleapis.com/{type_name}", **fields}


def _filter(name: str, type_name: str, **fields: Any) -> Config:
    return {"name": name, "typed_config": _typed(type_name, **fields)}


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _manager(stat_prefix: str, route_config: Config, http_filters: list[Config],
             **extra: Any) -> Config:
    return {"filters": [_filter(
        "envoy.filters.network.http_connection_manager",
        "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        stat_prefix=stat_prefix, route_config=route_config, http_filters=http_filters, **extra,
    )]}


def _router() -> Config:
    return _filter("envoy.filters.http.router", "envoy.extensions.filters.http.router.v3.Router")


def _reserved_segments(methods: Sequence[Method]) -> set[str]:
    """First path segments of everything the gateway answers besides the web files."""
    paths = [HEALTHZ_PATH, OPENAPI_PATH, WEBHOOK_PATH]
    for method in methods:
        paths.append(method.grpc_path)
        paths.extend(binding.template for binding in method.rest)
    return {path.split("/")[1] for path in paths}


def _public_listener(settings: GatewaySettings, methods: list[Method],
                     openapi: Mapping[str, Any] | None, web: Sequence[StaticFile]) -> Config:
    chain = _manager(
        "gateway", _routes(settings, methods, openapi, web),
        _http_filters(settings, methods, web),
        codec_type="AUTO",
        use_remote_address=True,
        xff_num_trusted_hops=settings.xff_num_trusted_hops,
        # Normalised paths, so the token rules cannot be dodged with `..`, `//` or `%2F`.
        normalize_path=True,
        merge_slashes=True,
        path_with_escaped_slashes_action="REJECT_REQUEST",
        request_id_extension={"typed_config": _typed(
            "envoy.extensions.request_id.uuid.v3.UuidRequestIdConfig")},
        access_log=[_access_log()],
        local_reply_config=_local_replies(),
    )
    return {"name": "gateway",
            "address": _address(settings.listen_address, settings.listen_port),
            "filter_chains": [chain]}


def _access_log() -> Config:
    fields = {
        "time": "%START_TIME%", "method": "%REQ(:METHOD)%",
        "path": "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%", "status": "%RESPONSE_CODE%",
        "grpc_status": "%GRPC_STATUS%", "duration_ms": "%DURATION%",
        "upstream": "%UPSTREAM_CLUSTER%", "client": "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%",
        "request_id": "%REQ(X-REQUEST-ID)%",
    }
    return _filter("envoy.access_loggers.stdout",
                   "envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
                   log_format={"json_format": fields})


def _local_replies() -> Config:
    """Envoy's own refusals in the one error shape (see the module docstring)."""
    return {"mappers": [_error_mapper(status, code) for status, code in HTTP_TO_GRPC.items()]
            + [_error_mapper(None, 2)]}  # any other error status: UNKNOWN


def _error_mapper(status: int | None, code: int) -> Config:
    """Rewrite a REST client's local reply with HTTP `status` (any >= 400, if None) into
    {"code": code, "message": <Envoy's body>, "details": []}."""
    # gRPC and gRPC-Web clients read grpc-status and grpc-message, which Envoy sets
    # from the reply; a JSON body would end up as their grpc-message. The mapper sees
    # the request as it is now: a REST call the transcoder has turned into gRPC has
    # content-type application/grpc too, but the transcoder left x-envoy-original-path.
    not_grpc = {"header_filter": {"header": {
        "name": "content-type", "invert_match": True, "treat_missing_header_as_empty": True,
        "string_match": {"prefix": "application/grpc"}}}}
    transcoded = {"header_filter": {"header": {
        "name": "x-envoy-original-path", "present_match": True}}}
    rest = {"or_filter": {"filters": [not_grpc, transcoded]}}
    # Successes (/healthz, /openapi.json) are local replies too: left alone.
    op, value = ("EQ", status) if status is not None else ("GE", 400)
    status_filter = {"status_code_filter": {"comparison": {"op": op, "value": {
        "default_value": value, "runtime_key": f"tavla.local_reply.{op.lower()}{value}"}}}}
    mapper: Config = {
        "filter": {"and_filter": {"filters": [rest, status_filter]}},
        "body_format_override": {"json_format": {
            "code": code, "message": "%LOCAL_REPLY_BODY%", "details": []}},
    }
    if status == 429:
        # The rate limiter's own body says only "local_rate_limited".
        mapper["body"] = {"inline_string": RATE_LIMITED_BODY}
    if status == 413:
        mapper["body"] = {"inline_string": TOO_LARGE_BODY}
    return mapper


def _routes(settings: GatewaySettings, methods: list[Method],
            openapi: Mapping[str, Any] | None, web: Sequence[StaticFile]) -> Config:
    routes = [_method_route(settings, m) for m in methods]
    if openapi is not None:
        routes.append(_openapi_route(openapi))
    routes.extend(_static_route(f) for f in web)
    if settings.webhooks is not None:
        routes.append(_webhook_route(settings))
    # Native gRPC to any other method (internal ones included) is not found.
    routes.append({"match": {"prefix": "/", "grpc": {}}, "direct_response": {"status": 404}})
    # REST paths match here until the transcoder rewrites them to gRPC paths and routing
    # is redone; the transcoder answers 404 for anything else, so `unrouted` (no
    # endpoints) never gets a call. A route rather than a direct_response, because the
    # CORS filter applies its policy only on routes with a route entry.
    routes.append({"match": {"prefix": "/"}, "route": {"cluster": UNROUTED}})
    host: Config = {"name": "tavla", "domains": ["*"], "routes": routes}
    if settings.cors_allow_origins:
        host["typed_per_filter_config"] = {"envoy.filters.http.cors": _cors_policy(settings)}
    config: Config = {"name": "tavla", "virtual_hosts": [host],
                      "request_headers_to_add": [_client_address()]}
    # Envoy caps direct_response bodies at 4 KiB unless told otherwise.
    sizes = [len(f.body) for f in web]
    if openapi is not None:
        sizes.append(len(_openapi_body(openapi).encode()))
    if sizes:
        config["max_direct_response_body_size_bytes"] = max(sizes) + 1024
    return config


def _openapi_body(openapi: Mapping[str, Any]) -> str:
    return json.dumps(openapi, separators=(",", ":"))


# Not an API method: the transcoder (which refuses unknown paths) stays out.
UNTRANSCODED = {"@type": "type.googleapis.com/envoy.config.route.v3.FilterConfig",
                "disabled": True}
GET_ONLY = [{"name": ":method", "string_match": {"exact": "GET"}}]


def _header(key: str, value: str) -> Config:
    return {"header": {"key": key, "value": value}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}


def _static_route(file: StaticFile) -> Config:
    """A web file as a direct response (static.py says why these headers)."""
    body: Config = ({"inline_string": file.body.decode("utf-8")} if file.is_text
                    else {"inline_bytes": base64.b64encode(file.body).decode("ascii")})
    return {
        "match": {"path": file.path, "headers": GET_ONLY},
        "direct_response": {"status": 200, "body": body},
        "response_headers_to_add": [
            _header("content-type", file.content_type),
            _header("cache-control", CACHE_CONTROL),
            _header("content-security-policy", CONTENT_SECURITY_POLICY),
            _header("x-content-type-options", "nosniff"),
            _header("referrer-policy", "no-referrer"),
        ],
        "typed_per_filter_config": {"envoy.filters.http.grpc_json_transcoder": UNTRANSCODED},
    }


def _openapi_route(openapi: Mapping[str, Any]) -> Config:
    untranscoded = UNTRANSCODED
    return {
        "match": {"path": OPENAPI_PATH,
                  "headers": [{"name": ":method", "string_match": {"exact": "GET"}}]},
        "direct_response": {"status": 200, "body": {"inline_string": _openapi_body(openapi)}},
        "response_headers_to_add": [{"header": {"key": "content-type",
                                                "value": "application/json"},
                                     "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}],
        "typed_per_filter_config": {"envoy.filters.http.grpc_json_transcoder": untranscoded},
    }


def _client_address() -> Config:
    # Added when the router forwards (every route, REST and gRPC alike), replacing any
    # value: the strip filter has already removed a client's, this covers the rest.
    return {"header": {"key": CLIENT_ADDRESS_HEADER, "value": CLIENT_ADDRESS_VALUE},
            "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}


def _method_route(settings: GatewaySettings, method: Method) -> Config:
    action: Config = {
        "cluster": method.area,
        # Streams (WatchGame) stay open as long as the client watches.
        "timeout": "0s" if method.streaming else _seconds(settings.route_timeout_seconds),
    }
    route: Config = {"match": {"path": method.grpc_path}, "route": action}
    limit = _rate_limit_for(settings, method)
    if limit is not None:
        action["rate_limits"] = [{"actions": [{"remote_address": {}}]}]
        route["typed_per_filter_config"] = {
            "envoy.filters.http.local_ratelimit": _rate_limit(method, limit),
        }
    return route


def _webhook_route(settings: GatewaySettings) -> Config:
    # Plain HTTP, not an API method: the transcoder (which refuses unknown paths) stays out.
    untranscoded = {"@type": "type.googleapis.com/envoy.config.route.v3.FilterConfig",
                    "disabled": True}
    return {
        "match": {"path": WEBHOOK_PATH,
                  "headers": [{"name": ":method", "string_match": {"exact": "POST"}}]},
        "route": {"cluster": WEBHOOK_CLUSTER,
                  "timeout": _seconds(settings.route_timeout_seconds)},
        "typed_per_filter_config": {"envoy.filters.http.grpc_json_transcoder": untranscoded},
    }


def _rate_limit_for(settings: GatewaySettings, method: Method) -> RateLimit | None:
    for key, path in RATE_LIMITED_METHODS.items():
        if path == method.grpc_path and key in settings.rate_limits:
            return settings.rate_limits[key]
    return None


def _bucket(requests: int, seconds: int) -> Config:
    return {"max_tokens": requests, "tokens_per_fill": requests,
            "fill_interval": _seconds(seconds)}


def _rate_limit(method: Method, limit: RateLimit) -> Config:
    always = {"default_value": {"numerator": 100, "denominator": "HUNDRED"},
              "runtime_key": f"tavla.rate_limit.{method.name}"}
    return _typed(
        "envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
        stat_prefix=f"rate_limit_{method.name.lower()}",
        # The route-wide bucket is generous; the per-address descriptor below is the limit.
        token_bucket=_bucket(1_000_000, 1),
        filter_enabled=always,
        filter_enforced=always,
        # An entry without a value is a wildcard: one bucket per client address seen.
        descriptors=[{"entries": [{"key": "remote_address"}],
                      "token_bucket": _bucket(limit.requests, limit.per_seconds)}],
        max_dynamic_descriptors=100_000,
        rate_limited_as_resource_exhausted=True,
    )


def _cors_policy(settings: GatewaySettings) -> Config:
    return _typed(
        "envoy.extensions.filters.http.cors.v3.CorsPolicy",
        allow_origin_string_match=[{"exact": o} for o in settings.cors_allow_origins],
        allow_methods="GET, POST, PUT, PATCH, DELETE, OPTIONS",
        allow_headers=(f"authorization, content-type, x-request-id, {DEVICE_ID_HEADER}, "
                       "x-grpc-web, x-user-agent, grpc-timeout"),
        expose_headers="grpc-status, grpc-message, x-request-id",
        max_age=str(settings.cors_max_age_seconds),
    )


def _http_filters(settings: GatewaySettings, methods: list[Method],
                  web: Sequence[StaticFile]) -> list[Config]:
    filters = [_strip_identity(), _health(settings)]
    if settings.cors_allow_origins:
        filters.append(_filter("envoy.filters.http.cors",
                               "envoy.extensions.filters.http.cors.v3.Cors"))
    if not settings.allow_native_grpc:
        filters.append(_refuse_native_grpc())
    filters.append(_filter("envoy.filters.http.grpc_web",
                           "envoy.extensions.filters.http.grpc_web.v3.GrpcWeb"))
    # Every request body is whole before anything reads it, and one over the limit is
    # 413 here, however it arrives: the transcoder's own limit misses a REST body that
    # comes in pieces. Requests are unary here (the API's streams are server streams).
    filters.append(_filter(
        "envoy.filters.http.buffer",
        "envoy.extensions.filters.http.buffer.v3.Buffer",
        max_request_bytes=MAX_REQUEST_BODY_BYTES,
    ))
    filters.append(_jwt(settings, methods, web))
    if methods:
        filters.append(_transcoder(settings, methods))
    filters.append(_filter(
        "envoy.filters.http.local_ratelimit",
        "envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
        stat_prefix="rate_limit",  # no bucket here: only routes with their own config limit
    ))
    filters.append(_router())
    return filters


def _strip_identity() -> Config:
    return _filter(
        "envoy.filters.http.header_mutation",
        "envoy.extensions.filters.http.header_mutation.v3.HeaderMutation",
        # Headers only the gateway may set: a client's copy never reaches a service.
        mutations={"request_mutations": [{"remove": ACCOUNT_ID_HEADER},
                                         {"remove": CLIENT_ADDRESS_HEADER}]},
    )


def _health(settings: GatewaySettings) -> Config:
    return _filter(
        "envoy.filters.http.health_check",
        "envoy.extensions.filters.http.health_check.v3.HealthCheck",
        pass_through_mode=False,
        headers=[{"name": ":path", "string_match": {"exact": HEALTHZ_PATH}}],
        cluster_min_healthy_percentages={
            area: {"value": settings.health.min_healthy_percent} for area in settings.upstreams
        },
    )


NATIVE_GRPC_CONTENT_TYPE = r"^application/grpc(\+[^;]*)?(;.*)?$"


def _refuse_native_grpc() -> Config:
    # Before the transcoder: REST calls become gRPC there and must still pass.
    return _filter(
        "envoy.filters.http.rbac", "envoy.extensions.filters.http.rbac.v3.RBAC",
        rules={"action": "DENY", "policies": {"native-grpc": {
            # application/grpc and application/grpc+proto..., not application/grpc-web*.
            "permissions": [{"header": {"name": "content-type", "string_match": {
                "safe_regex": {"regex": NATIVE_GRPC_CONTENT_TYPE}}}}],
            "principals": [{"any": True}],
        }}},
    )


def _web_rules(web: Sequence[StaticFile]) -> list[Config]:
    """GETs of the web files' paths need no token: `/`, each top-level file, and anything
    under a top-level directory (an unknown file there is then a 404, not a 401)."""
    if not web:
        return []
    names = top_level_names(web)
    files = {f.path for f in web}
    rules: list[Config] = [{"match": {"path": "/", "headers": GET_ONLY}}]
    for name in sorted(names):
        match = ({"path": f"/{name}"} if f"/{name}" in files else {"prefix": f"/{name}/"})
        rules.append({"match": {**match, "headers": GET_ONLY}})
    return rules


def _anonymous_rules(settings: GatewaySettings, methods: list[Method],
                     web: Sequence[StaticFile]) -> list[Config]:
    rules: list[Config] = [{"match": {"path": HEALTHZ_PATH}}, {"match": {"path": OPENAPI_PATH}},
                           *_web_rules(web)]
    if settings.webhooks is not None:
        rules.append({"match": {"path": WEBHOOK_PATH}})
    for method in methods:
        if method.exposure is not Exposure.ANONYMOUS:
            continue
        rules.append({"match": {"path": method.grpc_path}})
        for binding in method.rest:
            match: Config = (
                {"safe_regex": {"regex": binding.path_regex()}} if binding.templated
                else {"path": binding.template}
            )
            match["headers"] = [{"name": ":method", "string_match": {"exact": binding.verb}}]
            rules.append({"match": match})
    return rules


def _jwt(settings: GatewaySettings, methods: list[Method],
         web: Sequence[StaticFile]) -> Config:
    provider = {
        "issuer": settings.jwt_issuer,
        "audiences": list(settings.jwt_audiences),
        # A token without `exp` would be valid forever.
        "require_expiration": True,
        "local_jwks": {"filename": settings.jwks_file},
        "from_headers": [{"name": "Authorization", "value_prefix": "Bearer "}],
        # Services verify the token again where they use the identity.
        "forward": True,
        "claim_to_headers": [{"header_name": ACCOUNT_ID_HEADER, "claim_name": "sub"}],
    }
    return _filter(
        "envoy.filters.http.jwt_authn",
        "envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication",
        providers={JWT_PROVIDER: provider},
        # First match wins: anonymous calls need nothing, everything else a token.
        rules=[*_anonymous_rules(settings, methods, web),
               {"match": {"prefix": "/"}, "requires": {"provider_name": JWT_PROVIDER}}],
    )


def _transcoder(settings: GatewaySettings, methods: list[Method]) -> Config:
    return _filter(
        "envoy.filters.http.grpc_json_transcoder",
        "envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder",
        proto_descriptor=settings.descriptor_file,
        services=sorted({m.service for m in methods}),
        convert_grpc_status=True,
        auto_mapping=False,
        # A REST body over the limit is refused here (413, in the one error shape),
        # before a service's gRPC limit would answer it with RESOURCE_EXHAUSTED (429).
        max_request_body_size=MAX_REQUEST_BODY_BYTES,
        # Unknown REST paths get 404 here instead of reaching a service, and unknown query
        # parameters 400: left alone, the transcoder would pass such a call on
        # untranscoded, to the catch-all route's empty cluster (a 503). A misspelt filter
        # is an error the client can act on, not silently ignored.
        request_validation_options={"reject_unknown_method": True,
                                    "reject_unknown_query_parameters": True},
        print_options={"add_whitespace": False, "always_print_primitive_fields": True,
                       "always_print_enums_as_ints": False,
                       "preserve_proto_field_names": False},
    )


def _unrouted_cluster() -> Config:
    return {"name": UNROUTED, "type": "STATIC", "connect_timeout": "1s",
            "load_assignment": {"cluster_name": UNROUTED, "endpoints": []}}


def _static_cluster(name: str, host: str, port: int) -> Config:
    return {"name": name, "type": "STATIC", "connect_timeout": "1s",
            "load_assignment": {"cluster_name": name, "endpoints": [
                {"lb_endpoints": [{"endpoint": {"address": _address(host, port)}}]}]}}


def _upstream_cluster(name: str, upstream: Upstream) -> Config:
    cluster = _static_cluster(name, upstream.host, upstream.port)
    cluster["connect_timeout"] = "2s"
    cluster["lb_policy"] = "ROUND_ROBIN"
    if upstream.dns:
        # One host per ready pod (a headless Service), re-resolved often.
        cluster.update(type="STRICT_DNS", dns_lookup_family="V4_PREFERRED",
                       dns_refresh_rate="5s", respect_dns_ttl=False)
    return cluster


def _webhook_cluster(settings: GatewaySettings) -> Config:
    assert settings.webhooks is not None
    return _upstream_cluster(WEBHOOK_CLUSTER, settings.webhooks)  # HTTP/1.1, no health check


def _cluster(area: str, settings: GatewaySettings) -> Config:
    health = settings.health
    interval = _seconds(health.interval_seconds)
    cluster = _upstream_cluster(area, settings.upstreams[area])
    cluster["typed_extension_protocol_options"] = {
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": _typed(
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
            explicit_http_config={"http2_protocol_options": {}},
        ),
    }
    if settings.upstream_tls is not None:
        cluster["transport_socket"] = _upstream_tls(settings.upstream_tls)
    cluster["health_checks"] = [{
        "timeout": _seconds(health.timeout_seconds),
        "interval": interval,
        # Without traffic Envoy would otherwise check only once a minute.
        "no_traffic_interval": interval,
        "no_traffic_healthy_interval": interval,
        "unhealthy_threshold": health.unhealthy_threshold,
        "healthy_threshold": health.healthy_threshold,
        "grpc_health_check": {},
    }]
    return cluster


def _upstream_tls(tls: UpstreamTls) -> Config:
    """Mutual TLS to a service's gateway port: the gateway's certificate, the platform CA.

    A service believes a call's client address only when it came with this
    certificate (services/kit/gateway_tls.py); gRPC servers require ALPN h2.
    """
    return {"name": "envoy.transport_sockets.tls", "typed_config": _typed(
        "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
        common_tls_context={
            "alpn_protocols": ["h2"],
            "tls_certificates": [{"certificate_chain": {"filename": tls.cert_file},
                                  "private_key": {"filename": tls.key_file}}],
            "validation_context": {"trusted_ca": {"filename": tls.ca_file}},
        },
    )}


def _ops_listener(host: str, port: int) -> Config:
    """Envoy's own readiness and Prometheus stats, proxied from the loopback-only admin."""
    routes = [{"match": {"path": path}, "route": {"cluster": "admin"}}
              for path in ("/ready", "/stats/prometheus")]
    chain = _manager("ops", {"name": "ops", "virtual_hosts": [
        {"name": "ops", "domains": ["*"], "routes": routes}]}, [_router()])
    return {"name": "ops", "address": _address(host, port), "filter_chains": [chain]}
