"""The chart's rendered objects against the Kubernetes API schemas and checkov's policies.

Three value sets are rendered with the real Helm binary (tests/helm_binary.py): the
defaults, charts/tavla/ci/production-values.yaml and charts/tavla/ci/minimal-values.yaml.

* Every object is validated, strictly (no unknown field), against the OpenAPI schemas
  of the Kubernetes API bundled in the pinned ``kubernetes-validate`` wheel: the newest
  release it carries and the oldest the chart supports (Chart.yaml ``kubeVersion``).
  Nothing is downloaded. Only the custom resources the chart renders for operators
  (Strimzi's KafkaTopic and KafkaUser, the Prometheus Operator's ServiceMonitor and
  PrometheusRule)
  have no schema there; they are named below, and any other kind without a schema fails.
* checkov (pinned, from its own venv that ``make`` builds, tests/tools/) scans the same
  objects once, all three sets in one run. Every finding must be fixed in the chart or
  waived in it with a ``checkov.io/skipN: CKV_...=<reason>`` annotation; a waiver without
  a written reason fails too.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate import utils as kv_utils

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "tavla"
VALUE_SETS: dict[str, tuple[Path, ...]] = {
    "default": (),
    "production": (CHART / "ci" / "production-values.yaml",),
    "minimal": (CHART / "ci" / "minimal-values.yaml",),
}
NAMESPACE = "games"
CHECKOV = ROOT / ".venv" / "tools" / "checkov" / "bin" / "checkov"
# The newest Kubernetes release whose schemas the wheel bundles, and the chart's minimum.
KUBERNETES_VERSIONS = (kubernetes_validate.latest_version(), "1.30.0")
CUSTOM_KINDS = {
    ("kafka.strimzi.io/v1", "KafkaTopic"),
    ("kafka.strimzi.io/v1", "KafkaUser"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
}

Doc = dict[str, Any]


def _helm() -> Path:
    spec = importlib.util.spec_from_file_location("helm_binary", ROOT / "tests" / "helm_binary.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path: Path = module.ensure_helm()
    return path


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    """Each value set's `helm template` output, as text."""
    helm = _helm()
    out = {}
    for name, files in VALUE_SETS.items():
        args = [str(helm), "template", "tavla", str(CHART), "--namespace", NAMESPACE]
        for path in files:
            args += ["-f", str(path)]
        result = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, f"{name}: {result.stderr}"
        out[name] = result.stdout
    return out


@pytest.fixture(scope="module", autouse=True)
def _schemas_parsed_once() -> Any:
    """kubernetes-validate parses the multi-megabyte definitions file on every call; the
    files never change, so each is parsed once here (the validation itself is unchanged)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kv_utils, "schema_contents", functools.cache(kv_utils.schema_contents))
        yield


def _docs(text: str) -> list[Doc]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def test_the_chart_version_floor_is_the_oldest_release_validated() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["kubeVersion"] == ">=1.30.0-0"
    assert KUBERNETES_VERSIONS[0] >= "1.35.0", "the bundled schemas are older than expected"


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("values", sorted(VALUE_SETS))
def test_every_object_fits_the_kubernetes_api_schema(
    rendered: dict[str, str], values: str, version: str
) -> None:
    errors = []
    kinds = set()
    for doc in _docs(rendered[values]):
        where = f"{doc['kind']} {doc['metadata']['name']}"
        kinds.add(doc["kind"])
        if (doc["apiVersion"], doc["kind"]) in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            errors.append(f"{where}: {'.'.join(map(str, error.path))}: {error.message}")
        except kubernetes_validate.SchemaNotFoundError as error:
            errors.append(f"{where}: no schema for {doc['apiVersion']} {doc['kind']}: {error}")
    assert not errors, f"{values} values on Kubernetes {version}:\n" + "\n".join(errors)
    assert {"Deployment", "Service", "Job", "NetworkPolicy", "ConfigMap"} <= kinds


def test_the_schema_check_catches_a_mistyped_field() -> None:
    """The validation really runs strictly: a misspelt field and a wrong type are caught."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "IfNotPresent",
                                    "readinessProbes": {}}]}}  # fmt: skip
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(pod, KUBERNETES_VERSIONS[0], strict=True)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"replicas": "two", "selector": {}, "template": {}}}  # fmt: skip
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[0], strict=True)


@pytest.fixture(scope="module")
def checkov_report(rendered: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Doc:
    """One checkov run over the three value sets (its start-up is most of its cost)."""
    assert CHECKOV.exists(), f"{CHECKOV} is missing: run `make tools` (or `make install`)"
    manifests = tmp_path_factory.mktemp("rendered")
    for name, text in rendered.items():
        (manifests / f"{name}.yaml").write_text(text)
    home = tmp_path_factory.mktemp("checkov-home")
    result = subprocess.run(
        [str(CHECKOV), "--directory", str(manifests), "--framework", "kubernetes",
         "--skip-download", "--output", "json", "--compact"],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "HOME": str(home)},
    )  # fmt: skip
    assert result.stdout.strip(), result.stderr[-3000:]
    report = json.loads(result.stdout)
    if isinstance(report, list):  # one report per framework; only kubernetes runs
        (report,) = report
    assert report["check_type"] == "kubernetes", report
    report["manifests"] = str(manifests)
    return dict(report)


def test_checkov_finds_nothing_that_is_not_fixed_or_waived(checkov_report: Doc) -> None:
    summary = checkov_report["summary"]
    assert summary["parsing_errors"] == 0, summary
    assert summary["passed"] > 1000, summary  # it really checked the three sets
    failed = [
        f"{Path(f['file_path']).stem}: {f['resource']}: {f['check_id']} {f['check_name']}"
        for f in checkov_report["results"]["failed_checks"]
    ]
    assert not failed, "checkov findings (fix them or waive them in the chart):\n" + "\n".join(
        sorted(set(failed))
    )


def test_every_checkov_waiver_says_why(checkov_report: Doc) -> None:
    skipped = checkov_report["results"]["skipped_checks"]
    assert skipped, "no waiver was read: are the checkov.io/skip annotations still rendered?"
    for check in skipped:
        reason = (check.get("check_result") or {}).get("suppress_comment", "")
        assert len(reason) > 20, f"{check['resource']}: {check['check_id']} waived without reason"
