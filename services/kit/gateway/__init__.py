"""The API gateway's Envoy configuration: one generator for `tavla dev` and the Helm chart.

`methods` reads the public API from the descriptor set, `settings` holds what
differs between a laptop and a cluster, `config` renders the Envoy bootstrap,
`openapi` generates the OpenAPI document of the REST surface (served at /openapi.json,
with the one error shape every REST error has), `cli` is `tavla gateway config`
(what the chart's init container runs) and `tavla gateway openapi`.
"""
