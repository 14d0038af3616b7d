#!/usr/bin/env python3
"""Lint, render and validate the Chataigne Helm chart for one set of values.

Runs, in-process with Helm's own Go code (helm-python-sdk):
  1. `helm lint --strict` with the values,
  2. `helm template` (schema validation included) as an install,
then validates every rendered document against the Kubernetes OpenAPI schemas
of --kube-version (kubernetes-validate, strict: unknown fields fail), checks
custom resources (ServiceMonitor, HTTPRoute, PrometheusRule) by hand, and checks the chart's
invariants (security contexts, probes, checksums, hooks, NetworkPolicies).

Prints one JSON object on stdout:
  {"ok": bool, "stage": "lint"|"render"|"validate"|"checks"|"done",
   "error": str|null, "lint": [...], "documents": [{template, kind, name, validated}],
   "manifests": [rendered documents], "problems": [str]}
and exits 0 when ok, 1 when not (2 on bad usage).

Usage:
  check_chart.py CHART [-f VALUES.yaml]... [--set-json PATH=JSON]...
                 [--release NAME] [--namespace NS] [--kube-version 1.30.0]
                 [--external-service-account NAME]...
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from typing import Any

import helm_python as helm
import kubernetes_validate
import yaml

# Custom resources kubernetes-validate has no schema for: required fields
# checked here (apiVersion -> kind -> required paths).
CUSTOM_RESOURCES = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): [
        ("spec", "selector"),
        ("spec", "endpoints"),
    ],
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): [
        ("spec", "parentRefs"),
        ("spec", "rules"),
    ],
    ("monitoring.coreos.com/v1", "PrometheusRule"): [
        ("spec", "groups"),
    ],
    ("cert-manager.io/v1", "Certificate"): [
        ("spec", "secretName"),
        ("spec", "issuerRef", "name"),
        ("spec", "dnsNames"),
    ],
}


def deep_merge(base: Any, override: Any) -> Any:
    """Later values files win; maps merge key by key, anything else replaces."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for key, value in override.items():
            out[key] = deep_merge(base.get(key), value) if key in base else copy.deepcopy(value)
        return out
    return copy.deepcopy(override)


def set_path(values: dict, dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = values
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value


def get(doc: Any, *path: Any) -> Any:
    for key in path:
        if isinstance(doc, dict):
            doc = doc.get(key)
        elif isinstance(doc, list) and isinstance(key, int) and key < len(doc):
            doc = doc[key]
        else:
            return None
    return doc


def check_custom(doc: dict) -> list[str]:
    key = (doc.get("apiVersion"), doc.get("kind"))
    problems = []
    if not get(doc, "metadata", "name"):
        problems.append(f"{key[1]}: metadata.name missing")
    for path in CUSTOM_RESOURCES[key]:
        if not get(doc, *path):
            problems.append(f"{key[1]} {get(doc, 'metadata', 'name')}: {'.'.join(path)} missing")
    if key[1] == "ServiceMonitor":
        for endpoint in get(doc, "spec", "endpoints") or []:
            if not endpoint.get("port"):
                problems.append("ServiceMonitor endpoint without port")
    if key[1] == "PrometheusRule":
        groups = get(doc, "spec", "groups") or []
        names = [group.get("name") for group in groups]
        if len(set(names)) != len(names) or not all(names):
            problems.append(f"PrometheusRule: group names must be unique and set: {names}")
        for group in groups:
            rules = group.get("rules") or []
            if not rules:
                problems.append(f"PrometheusRule group {group.get('name')}: no rules")
            for rule in rules:
                what = rule.get("alert") or rule.get("record")
                if not what or not isinstance(rule.get("expr"), str) or not rule["expr"].strip():
                    problems.append(f"PrometheusRule rule {what}: alert/record and expr required")
                if rule.get("alert") and not get(rule, "labels", "severity"):
                    problems.append(f"PrometheusRule alert {what}: labels.severity missing")
                if rule.get("alert") and not get(rule, "annotations", "summary"):
                    problems.append(f"PrometheusRule alert {what}: annotations.summary missing")
    if key[1] == "HTTPRoute":
        for ref in get(doc, "spec", "parentRefs") or []:
            if not ref.get("name"):
                problems.append("HTTPRoute parentRef without name")
        for rule in get(doc, "spec", "rules") or []:
            for backend in rule.get("backendRefs") or []:
                if not backend.get("name") or not isinstance(backend.get("port"), int):
                    problems.append("HTTPRoute backendRef needs name and port")
    return problems


def pod_spec(doc: dict) -> dict | None:
    if doc.get("kind") in ("Deployment", "Job"):
        return get(doc, "spec", "template", "spec")
    if doc.get("kind") == "Pod":
        return doc.get("spec")
    return None


def is_test_hook(doc: dict) -> bool:
    return get(doc, "metadata", "annotations", "helm.sh/hook") == "test"


# ServiceAccounts that exist outside the chart (--external-service-account).
EXTERNAL_SERVICE_ACCOUNTS: set[str] = set()


def check_invariants(docs: list[dict]) -> list[str]:
    """What every valid render of this chart must satisfy."""
    problems: list[str] = []
    names = {(d["kind"], get(d, "metadata", "name")) for d in docs}
    for doc in docs:
        kind, name = doc["kind"], get(doc, "metadata", "name")
        where = f"{kind} {name}"
        if kind == "Secret":
            problems.append(f"{where}: the chart must never create Secrets")
        spec = pod_spec(doc)
        if spec is None:
            continue
        if spec.get("automountServiceAccountToken") is not False:
            problems.append(f"{where}: automountServiceAccountToken must be false")
        account = spec.get("serviceAccountName")
        if account is None and kind == "Pod" and is_test_hook(doc):
            pass  # the namespace's default ServiceAccount, without its token
        elif account in EXTERNAL_SERVICE_ACCOUNTS:
            if ("ServiceAccount", account) in names:
                problems.append(f"{where}: existing ServiceAccount {account} must not be rendered")
        elif ("ServiceAccount", account) not in names:
            problems.append(f"{where}: ServiceAccount {account} not rendered")
        if kind == "Pod" and not is_test_hook(doc):
            problems.append(f"{where}: a bare Pod must be a `helm test` hook")
        pod_sc = spec.get("securityContext") or {}
        if pod_sc.get("runAsNonRoot") is not True:
            problems.append(f"{where}: pod runAsNonRoot must be true")
        if get(pod_sc, "seccompProfile", "type") != "RuntimeDefault":
            problems.append(f"{where}: pod seccompProfile must be RuntimeDefault")
        for container in spec.get("containers", []) + spec.get("initContainers", []):
            sc = container.get("securityContext") or {}
            cwhere = f"{where} container {container.get('name')}"
            if sc.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{cwhere}: readOnlyRootFilesystem must be true")
            if sc.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{cwhere}: allowPrivilegeEscalation must be false")
            if "ALL" not in (get(sc, "capabilities", "drop") or []):
                problems.append(f"{cwhere}: capabilities must drop ALL")
            if not get(container, "resources", "requests"):
                problems.append(f"{cwhere}: resource requests missing")
            for env in container.get("env", []):
                if "value" in env and any(
                    word in env["name"].upper() for word in ("URL", "KEY", "PASSWORD", "TOKEN")
                ) and env["name"] not in ("OTEL_EXPORTER_OTLP_ENDPOINT",):
                    problems.append(f"{cwhere}: {env['name']} must come from a Secret")
        if kind == "Deployment":
            annotations = get(doc, "spec", "template", "metadata", "annotations") or {}
            for checksum in ("checksum/config", "checksum/secret-refs"):
                if len(annotations.get(checksum, "")) != 64:
                    problems.append(f"{where}: pod template annotation {checksum} missing")
            container = spec["containers"][0]
            component = get(doc, "metadata", "labels", "app.kubernetes.io/component")
            for probe in ("livenessProbe", "readinessProbe"):
                if component == "gateway":
                    expected = "/healthz" if probe == "livenessProbe" else "/readyz"
                    if get(container, probe, "httpGet", "path") != expected or get(
                        container, probe, "httpGet", "port"
                    ) != "internal":
                        problems.append(f"{where}: {probe} must be GET {expected} on port internal")
                elif any(m.get("name") == "internal-tls" for m in container.get("volumeMounts", [])):
                    # kubelet's gRPC probes do not speak TLS: a TLS gRPC port
                    # is probed by a TCP connection to it.
                    if get(container, probe, "tcpSocket", "port") != "grpc":
                        problems.append(f"{where}: {probe} must open the TLS gRPC port (tcpSocket)")
                elif not isinstance(get(container, probe, "grpc", "port"), int):
                    problems.append(f"{where}: {probe} must be a gRPC health probe")
        if kind == "Job":
            annotations = get(doc, "metadata", "annotations") or {}
            if annotations.get("helm.sh/hook") != "pre-install,pre-upgrade":
                problems.append(f"{where}: migration Job must be a pre-install,pre-upgrade hook")
            args = spec["containers"][0].get("args")
            if args != ["migrate"]:
                problems.append(f"{where}: migration Job must run `migrate`, got {args}")
    problems += check_backend_grpc_stays_internal(docs)
    return problems


def check_backend_grpc_stays_internal(docs: list[dict]) -> list[str]:
    """The backends' gRPC ports are reachable from the release's own pods
    (and, for the tool-service, labelled internal namespaces) only: no
    NetworkPolicy rule admitting an auth-service gRPC port has a peer outside
    the namespace (namespaceSelector / ipBlock)."""
    problems: list[str] = []
    grpc_ports = set()
    for doc in docs:
        if doc["kind"] != "Deployment":
            continue
        if get(doc, "metadata", "labels", "app.kubernetes.io/component") != "auth-service":
            continue
        for container in get(doc, "spec", "template", "spec", "containers") or []:
            for port in container.get("ports", []):
                if port.get("name") == "grpc":
                    grpc_ports.add(port.get("containerPort"))
    for doc in docs:
        if doc["kind"] != "NetworkPolicy":
            continue
        if get(doc, "metadata", "labels", "app.kubernetes.io/component") != "auth-service":
            continue
        for rule in get(doc, "spec", "ingress") or []:
            ports = {p.get("port") for p in rule.get("ports") or []}
            if not rule.get("ports") or ports & grpc_ports:
                for peer in rule.get("from") or [{}]:
                    if "namespaceSelector" in peer or "ipBlock" in peer or not peer:
                        problems.append(
                            f"NetworkPolicy {get(doc, 'metadata', 'name')}: the auth-service's gRPC "
                            f"port is open beyond the release's pods ({peer})"
                        )
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chart")
    parser.add_argument("-f", "--values", action="append", default=[])
    parser.add_argument("--set-json", action="append", default=[])
    parser.add_argument("--release", default="chataigne")
    parser.add_argument("--namespace", default="chataigne")
    parser.add_argument("--kube-version", default="1.30.0")
    parser.add_argument(
        "--external-service-account",
        action="append",
        default=[],
        help="a ServiceAccount that exists outside the chart (serviceAccount.create=false)",
    )
    args = parser.parse_args()
    EXTERNAL_SERVICE_ACCOUNTS.update(args.external_service_account)

    values: dict = {}
    for path in args.values:
        with open(path, encoding="utf-8") as handle:
            values = deep_merge(values, yaml.safe_load(handle) or {})
    for expression in args.set_json:
        dotted, _, raw = expression.partition("=")
        set_path(values, dotted, json.loads(raw))

    result: dict[str, Any] = {
        "ok": False,
        "stage": "lint",
        "error": None,
        "lint": [],
        "documents": [],
        "manifests": [],
        "problems": [],
        "kube_version": args.kube_version,
        "helm_version": helm.helm_sdk_version(),
    }

    def finish(stage: str, error: str | None = None) -> int:
        result["stage"] = stage
        result["error"] = error
        result["ok"] = error is None and not result["problems"]
        json.dump(result, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0 if result["ok"] else 1

    # 1. lint (strict: warnings are errors; info such as "icon is recommended" is not).
    try:
        report = helm.lint(
            args.chart,
            values,
            strict=True,
            namespace=args.namespace,
            kube_version=f"v{args.kube_version.lstrip('v')}",
        )
    except helm.HelmError as error:
        return finish("lint", f"{type(error).__name__}: {error}")
    result["lint"] = report.get("messages", [])
    lint_errors = [m["error"] for m in result["lint"] if m.get("severity", 0) >= 2]
    lint_errors += report.get("errors") or []
    if lint_errors:
        return finish("lint", "; ".join(lint_errors))

    # 2. template (values.schema.json is applied here too).
    try:
        chart = helm.Chart.load(args.chart)
        chart.validate_schema(values)
        rendered = chart.render(
            values, name=args.release, namespace=args.namespace, revision=1, is_install=True
        )
    except helm.HelmError as error:
        return finish("render", f"{type(error).__name__}: {error}")

    # 3. validate every document.
    for template, text in sorted(rendered.items()):
        if not template.endswith((".yaml", ".yml")):
            continue
        for doc in yaml.safe_load_all(text):
            if not doc:
                continue
            key = (doc.get("apiVersion"), doc.get("kind"))
            entry = {
                "template": template,
                "apiVersion": key[0],
                "kind": key[1],
                "name": get(doc, "metadata", "name"),
            }
            if key in CUSTOM_RESOURCES:
                entry["validated"] = "custom"
                result["problems"] += check_custom(doc)
            else:
                entry["validated"] = "kubernetes"
                try:
                    kubernetes_validate.validate(doc, args.kube_version, strict=True)
                except kubernetes_validate.ValidationError as error:
                    path = ".".join(str(p) for p in error.path)
                    result["problems"].append(
                        f"{key[1]} {entry['name']} ({template}): {path}: {error.message}"
                    )
                except kubernetes_validate.SchemaNotFoundError:
                    result["problems"].append(
                        f"{key[1]} {entry['name']} ({template}): no schema for {key[0]} {key[1]}"
                    )
            result["documents"].append(entry)
            result["manifests"].append(doc)
    if result["problems"]:
        return finish("validate", "rendered documents failed validation")

    # 4. chart invariants.
    result["problems"] += check_invariants(result["manifests"])
    if result["problems"]:
        return finish("checks", "chart invariants violated")
    return finish("done")


if __name__ == "__main__":
    sys.exit(main())
