//! The Helm chart (helm/chataigne) lints, renders and validates against the
//! Kubernetes schemas with real Helm, for the default values, the HA and the
//! minimal examples and the Gateway API mode; invalid combinations fail to
//! render with a message saying why.
//!
//! Driven by tests/helm/check_chart.py (Helm as a library through
//! helm-python-sdk, schemas from kubernetes-validate), run with the Python
//! named by CHATAIGNE_TEST_HELM_PYTHON: a virtualenv with tests/helm/requirements.txt.
//! Without it the tests are skipped, except under CI=true where they fail.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn python() -> Option<String> {
    match std::env::var("CHATAIGNE_TEST_HELM_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ if std::env::var("CI").as_deref() == Ok("true") => {
            panic!(
                "CHATAIGNE_TEST_HELM_PYTHON must name a Python with tests/helm/requirements.txt in CI"
            )
        }
        _ => {
            eprintln!("skipping the Helm chart test: CHATAIGNE_TEST_HELM_PYTHON is not set");
            None
        }
    }
}

/// The driver's JSON report and whether it succeeded.
struct Report {
    ok: bool,
    json: Value,
}

impl Report {
    fn stage(&self) -> &str {
        self.json["stage"].as_str().unwrap_or_default()
    }

    fn error(&self) -> &str {
        self.json["error"].as_str().unwrap_or_default()
    }

    fn manifests(&self) -> &[Value] {
        self.json["manifests"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    fn find(&self, kind: &str, name: &str) -> &Value {
        self.manifests()
            .iter()
            .find(|m| m["kind"] == kind && m["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{kind} {name} not rendered"))
    }

    fn all(&self, kind: &str) -> Vec<&Value> {
        self.manifests()
            .iter()
            .filter(|m| m["kind"] == kind)
            .collect()
    }

    fn assert_valid(&self, what: &str) {
        assert!(
            self.ok,
            "{what}: stage {} failed: {}\nproblems: {:#}",
            self.stage(),
            self.error(),
            self.json["problems"]
        );
        assert_eq!(self.stage(), "done");
        assert!(!self.manifests().is_empty(), "{what}: nothing rendered");
    }
}

fn check(python: &str, values: &[&str], set_json: &[&str]) -> Report {
    let root = repo_root();
    let mut command = Command::new(python);
    command
        .current_dir(&root)
        .arg(root.join("tests/helm/check_chart.py"))
        .arg(root.join("helm/chataigne"))
        .args(["--release", "chataigne", "--namespace", "chataigne"]);
    for file in values {
        command.arg("-f").arg(root.join(file));
    }
    for expression in set_json {
        command.arg("--set-json").arg(expression);
    }
    let output = command.output().expect("run tests/helm/check_chart.py");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let json: Value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!(
            "driver printed no JSON report ({error}); exit {:?}\nstdout: {stdout}\nstderr: {}",
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let ok = output.status.success() && json["ok"] == true;
    Report { ok, json }
}

const TEST_VALUES: &str = "tests/helm/values-test.yaml";

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{pointer} missing in {value:#}"))
}

/// The component labels of the pods a NetworkPolicy rule's peers select.
fn peer_components(rule: &Value) -> Vec<String> {
    rule["from"]
        .as_array()
        .expect("from peers")
        .iter()
        .map(|peer| {
            assert!(
                peer.get("namespaceSelector").is_none() && peer.get("ipBlock").is_none(),
                "peer must be a pod of this release: {peer}"
            );
            str_at(
                peer,
                "/podSelector/matchLabels/app.kubernetes.io~1component",
            )
            .to_owned()
        })
        .collect()
}

/// A plausible value for a secret-backed variable, by what it holds.
fn secret_value(name: &str) -> String {
    if name.ends_with("DATABASE__URL") {
        "postgres://chataigne:secret@db.internal:5432/chataigne".to_owned()
    } else if name.ends_with("REDIS__URL") {
        "redis://redis.internal:6379".to_owned()
    } else {
        // Keys and secrets: long enough for every service's bound.
        "k".repeat(48)
    }
}

/// The secret-backed environment variable names of a Deployment's container.
fn secret_env(report: &Report, deployment: &str) -> Vec<(String, String)> {
    let container =
        &report.find("Deployment", deployment)["spec"]["template"]["spec"]["containers"][0];
    container["env"]
        .as_array()
        .map(|env| {
            env.iter()
                .filter(|e| e["valueFrom"]["secretKeyRef"].is_object())
                .map(|e| {
                    let name = e["name"].as_str().unwrap().to_owned();
                    let value = secret_value(&name);
                    (name, value)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every service accepts what the chart gives it: the configuration file
/// rendered for it and the secret-backed variables of its Deployment (keys
/// its typed config knows — unknown keys are refused — and values that pass
/// its start-up validation).
fn assert_services_accept_their_config(report: &Report) {
    let config = report.find("ConfigMap", "chataigne-config");
    let dir = std::env::temp_dir().join(format!("chataigne-chart-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str| {
        let path = dir.join(name);
        std::fs::write(&path, config["data"][name].as_str().unwrap()).unwrap();
        path
    };
    let gateway: chataigne_gateway::Config = chataigne_common::config::load_from_env(
        &chataigne_gateway::Config::default(),
        Some(&file("gateway.toml")),
        secret_env(report, "chataigne-gateway"),
    )
    .expect("the gateway reads its file and variables");
    gateway
        .validate()
        .expect("the gateway's configuration is valid");
    let auth: chataigne_auth::Config = chataigne_common::config::load_from_env(
        &chataigne_auth::Config::default(),
        Some(&file("auth-service.toml")),
        secret_env(report, "chataigne-auth-service"),
    )
    .expect("the auth-service reads its file and variables");
    auth.validate()
        .expect("the auth-service's configuration is valid");
    // The authorization server issues tokens for exactly the public endpoint.
    let endpoint = format!("{}/mcp/v1", gateway.public_url.clone().unwrap_or_default());
    assert_eq!(auth.oauth.allowed_resources, vec![endpoint]);
    let tools: chataigne_tools::Config = chataigne_common::config::load_from_env(
        &chataigne_tools::Config::default(),
        Some(&file("tool-service.toml")),
        secret_env(report, "chataigne-tool-service"),
    )
    .expect("the tool-service reads its file and variables");
    tools
        .validate()
        .expect("the tool-service's configuration is valid");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn default_values_render_lint_and_validate() {
    let Some(python) = python() else { return };
    let report = check(&python, &[TEST_VALUES], &[]);
    report.assert_valid("default values");
    assert_services_accept_their_config(&report);

    // Three Deployments, Services, ServiceAccounts, HPAs, PDBs; no Secret.
    for component in ["gateway", "auth-service", "tool-service"] {
        let name = format!("chataigne-{component}");
        for kind in [
            "Deployment",
            "Service",
            "ServiceAccount",
            "HorizontalPodAutoscaler",
            "PodDisruptionBudget",
            "NetworkPolicy",
        ] {
            report.find(kind, &name);
        }
        let deployment = report.find("Deployment", &name);
        let pod = &deployment["spec"]["template"];
        let annotations = pod["metadata"]["annotations"]
            .as_object()
            .expect("annotations");
        assert_eq!(annotations["checksum/config"].as_str().unwrap().len(), 64);
        assert_eq!(pod["spec"]["automountServiceAccountToken"], false);
        let container = &pod["spec"]["containers"][0];
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(
            container["securityContext"]["allowPrivilegeEscalation"],
            false
        );
        assert_eq!(
            container["securityContext"]["capabilities"]["drop"][0],
            "ALL"
        );
        assert_eq!(pod["spec"]["securityContext"]["runAsNonRoot"], true);
        assert_eq!(
            pod["spec"]["securityContext"]["seccompProfile"]["type"],
            "RuntimeDefault"
        );
        assert!(
            pod["spec"]["topologySpreadConstraints"]
                .as_array()
                .is_some_and(|c| c.len() == 2),
            "{name}: zone and node spread"
        );
        // No secret value inline: database/Redis URLs and keys come from Secrets.
        for env in container["env"].as_array().unwrap() {
            let var = env["name"].as_str().unwrap();
            if var.starts_with("CHATAIGNE_") {
                assert!(
                    env["valueFrom"]["secretKeyRef"]["name"].is_string(),
                    "{name}: {env}"
                );
            }
        }
    }
    assert!(
        report.all("Secret").is_empty(),
        "the chart never creates Secrets"
    );

    // Probes: HTTP /healthz and /readyz on the gateway's internal port; gRPC
    // health on the backends.
    let gateway = &report.find("Deployment", "chataigne-gateway")["spec"]["template"]["spec"]["containers"]
        [0];
    assert_eq!(gateway["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(gateway["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(gateway["readinessProbe"]["httpGet"]["port"], "internal");
    let internal = gateway["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "internal")
        .expect("internal port");
    assert_eq!(internal["containerPort"], 9090);
    for (component, port) in [("auth-service", 50051), ("tool-service", 50052)] {
        let container = &report.find("Deployment", &format!("chataigne-{component}"))["spec"]["template"]
            ["spec"]["containers"][0];
        assert_eq!(
            container["livenessProbe"]["grpc"]["port"], port,
            "{component}"
        );
        assert_eq!(
            container["readinessProbe"]["grpc"]["port"], port,
            "{component}"
        );
    }

    // Ingress mode: TLS from the named secret on the public paths only.
    let ingress = report.find("Ingress", "chataigne-gateway");
    assert_eq!(ingress["spec"]["tls"][0]["secretName"], "chataigne-tls");
    let paths: Vec<&str> = ingress["spec"]["rules"][0]["http"]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/mcp/", "/.well-known/oauth-protected-resource/"]);
    // The internal port is on its own Service, never on the public one.
    let public = report.find("Service", "chataigne-gateway");
    assert!(
        public["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["targetPort"] == "public")
    );

    // The gateway's configuration carries the Google egress CIDRs (seed 004)
    // and the in-cluster backend URLs.
    let config = report.find("ConfigMap", "chataigne-config");
    let gateway_toml = config["data"]["gateway.toml"].as_str().unwrap();
    for cidr in [
        "108.177.64.0/20",
        "142.250.88.0/22",
        "172.217.80.0/20",
        "192.178.20.0/22",
        "192.179.0.0/20",
        "74.125.232.0/24",
        "136.121.40.0/21",
    ] {
        assert!(
            gateway_toml.contains(&format!("\"{cidr}\"")),
            "{cidr} in {gateway_toml}"
        );
    }
    assert!(gateway_toml.contains(
        "tool_service_url = \"http://chataigne-tool-service.chataigne.svc.cluster.local:50052\""
    ));
    assert!(
        config["data"]["tool-service.toml"]
            .as_str()
            .unwrap()
            .contains("listen = \"0.0.0.0:50052\"")
    );

    // NetworkPolicies: auth-service gRPC only from the gateway and the
    // tool-service pods; the tool-service also from labelled namespaces.
    let auth = report.find("NetworkPolicy", "chataigne-auth-service");
    let rules = auth["spec"]["ingress"].as_array().unwrap();
    assert_eq!(rules.len(), 1, "one ingress rule: {auth:#}");
    let mut from = peer_components(&rules[0]);
    from.sort();
    assert_eq!(from, ["gateway", "tool-service"]);
    assert_eq!(rules[0]["ports"][0]["port"], 50051);
    let tools = report.find("NetworkPolicy", "chataigne-tool-service");
    let peers = tools["spec"]["ingress"][0]["from"].as_array().unwrap();
    assert!(peers.iter().any(|p| {
        p["namespaceSelector"]["matchLabels"]["chataigne.io/internal-callers"] == "true"
    }));
    let egress = serde_json::to_string(&tools["spec"]["egress"]).unwrap();
    assert!(
        egress.contains("10.20.0.0/24") && egress.contains("5432"),
        "{egress}"
    );
    let gateway_np = report.find("NetworkPolicy", "chataigne-gateway");
    let egress = serde_json::to_string(&gateway_np["spec"]["egress"]).unwrap();
    assert!(
        egress.contains("10.21.0.0/24") && egress.contains("6379"),
        "{egress}"
    );
    assert!(
        !egress.contains("10.20.0.0/24"),
        "the gateway never talks to Postgres"
    );

    // Migrations: hook Jobs running `migrate` for both databases, auth first.
    for (component, weight) in [("auth-service", "-10"), ("tool-service", "-5")] {
        let job = report.find("Job", &format!("chataigne-migrate-{component}"));
        let annotations = &job["metadata"]["annotations"];
        assert_eq!(annotations["helm.sh/hook"], "pre-install,pre-upgrade");
        assert_eq!(annotations["helm.sh/hook-weight"], weight);
        let container = &job["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["args"][0], "migrate");
        assert!(str_at(container, "/image").contains(&format!("/{component}:")));
    }
}

#[test]
fn ha_example_terminates_tls_in_the_gateway_on_443() {
    let Some(python) = python() else { return };
    let report = check(&python, &["helm/chataigne/examples/values-ha.yaml"], &[]);
    report.assert_valid("HA example");
    assert_services_accept_their_config(&report);

    let service = report.find("Service", "chataigne-gateway");
    assert_eq!(service["spec"]["type"], "LoadBalancer");
    assert_eq!(service["spec"]["externalTrafficPolicy"], "Local");
    assert_eq!(service["spec"]["ports"][0]["port"], 443);
    assert_eq!(service["spec"]["ports"][0]["name"], "https");
    assert!(report.all("Ingress").is_empty());

    let pod = &report.find("Deployment", "chataigne-gateway")["spec"]["template"]["spec"];
    let tls = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "tls")
        .expect("tls volume");
    assert_eq!(tls["secret"]["secretName"], "chataigne-mcp-tls");
    let config = report.find("ConfigMap", "chataigne-config");
    let gateway_toml = config["data"]["gateway.toml"].as_str().unwrap();
    assert!(
        gateway_toml.contains("cert_file = \"/etc/chataigne/tls/tls.crt\""),
        "{gateway_toml}"
    );
    // Integers stay integers in the TOML files.
    let tools_toml = config["data"]["tool-service.toml"].as_str().unwrap();
    assert!(
        tools_toml.contains("max_connections = 32\n"),
        "{tools_toml}"
    );

    // With in-pod TLS the public port is open to the allowed CIDRs only.
    let np = report.find("NetworkPolicy", "chataigne-gateway");
    let public_rule = &np["spec"]["ingress"][0];
    let blocks: Vec<&str> = public_rule["from"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| str_at(p, "/ipBlock/cidr"))
        .collect();
    assert!(
        blocks.contains(&"74.125.232.0/24") && blocks.len() == 7,
        "{blocks:?}"
    );

    let hpa = report.find("HorizontalPodAutoscaler", "chataigne-gateway");
    assert_eq!(hpa["spec"]["minReplicas"], 3);
    let pdb = report.find("PodDisruptionBudget", "chataigne-tool-service");
    assert_eq!(pdb["spec"]["maxUnavailable"], 1);
    assert!(pdb["spec"].get("minAvailable").is_none());

    let monitor = report.find("ServiceMonitor", "chataigne");
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(monitor["spec"]["endpoints"][0]["port"], "metrics");
    let documents = report.json["documents"].as_array().unwrap();
    assert!(
        documents
            .iter()
            .any(|d| d["kind"] == "ServiceMonitor" && d["validated"] == "custom")
    );
    let env = &pod["containers"][0]["env"];
    assert!(
        env.as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "OTEL_EXPORTER_OTLP_ENDPOINT")
    );
}

#[test]
fn minimal_example_renders_without_autoscaling_or_policies() {
    let Some(python) = python() else { return };
    let report = check(
        &python,
        &["helm/chataigne/examples/values-minimal.yaml"],
        &[],
    );
    report.assert_valid("minimal example");
    assert_services_accept_their_config(&report);
    assert!(report.all("HorizontalPodAutoscaler").is_empty());
    assert!(report.all("PodDisruptionBudget").is_empty());
    assert!(report.all("NetworkPolicy").is_empty());
    let deployment = report.find("Deployment", "chataigne-tool-service");
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(
        report.find("Service", "chataigne-gateway")["spec"]["ports"][0]["port"],
        80
    );
}

#[test]
fn gateway_api_mode_renders_an_httproute() {
    let Some(python) = python() else { return };
    let report = check(
        &python,
        &[TEST_VALUES],
        &[
            "ingress.enabled=false",
            "httpRoute.enabled=true",
            r#"httpRoute.parentRefs=[{"name":"public","namespace":"gateway-system","sectionName":"https"}]"#,
        ],
    );
    report.assert_valid("Gateway API mode");
    let route = report.find("HTTPRoute", "chataigne-gateway");
    assert_eq!(route["spec"]["parentRefs"][0]["name"], "public");
    assert_eq!(
        route["spec"]["rules"][0]["backendRefs"][0]["name"],
        "chataigne-gateway"
    );
    assert!(report.all("Ingress").is_empty());
}

fn assert_fails(report: &Report, stage: &str, message: &str) {
    assert!(
        !report.ok,
        "must not render: {:#}",
        report.json["documents"]
    );
    assert_eq!(report.stage(), stage, "{}", report.error());
    assert!(
        report.error().contains(message),
        "expected {message:?} in {:?}",
        report.error()
    );
}

#[test]
fn invalid_combinations_fail_to_render() {
    let Some(python) = python() else { return };

    // Both an Ingress and in-pod TLS.
    let report = check(
        &python,
        &[TEST_VALUES],
        &[r#"gateway.tls={"enabled":true,"secretName":"mcp-tls"}"#],
    );
    assert_fails(
        &report,
        "render",
        "exactly one way of exposing the gateway on 443",
    );

    // In-pod TLS without a certificate secret.
    let report = check(
        &python,
        &[TEST_VALUES],
        &["ingress.enabled=false", r#"gateway.tls={"enabled":true}"#],
    );
    assert_fails(
        &report,
        "render",
        "gateway.tls.enabled needs gateway.tls.secretName",
    );

    // HPA minReplicas above maxReplicas.
    let report = check(
        &python,
        &[TEST_VALUES],
        &[r#"toolService.autoscaling={"minReplicas":5,"maxReplicas":3}"#],
    );
    assert_fails(
        &report,
        "render",
        "toolService.autoscaling.minReplicas (5) must not exceed maxReplicas (3)",
    );

    // A PDB that would block every eviction (HPA off, minAvailable = replicas).
    let report = check(
        &python,
        &[TEST_VALUES],
        &[
            r#"authService.autoscaling={"enabled":false}"#,
            "authService.replicas=2",
            r#"authService.pdb={"minAvailable":2}"#,
        ],
    );
    assert_fails(
        &report,
        "render",
        "authService.pdb.minAvailable (2) must be lower than the replica count (2",
    );

    // A missing secret reference.
    let report = check(&python, &[TEST_VALUES], &[r#"secrets.redisUrl.name="""#]);
    assert_fails(&report, "render", "secrets.redisUrl.name");

    // A value of the wrong type is refused by values.schema.json (lint
    // applies the schema first; so do install, upgrade and template).
    let report = check(&python, &[TEST_VALUES], &[r#"gateway.replicas="two""#]);
    assert_fails(&report, "lint", "/gateway/replicas");

    // A CIDR that is not one.
    let report = check(
        &python,
        &[TEST_VALUES],
        &[r#"gateway.allowedCidrs=["not-a-cidr"]"#],
    );
    assert_fails(&report, "lint", "/gateway/allowedCidrs/0");
}
