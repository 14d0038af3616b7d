//! The Helm chart (helm/chataigne) lints, renders and validates against the
//! Kubernetes schemas with real Helm, for the default values, the HA and the
//! minimal examples and the Gateway API mode; the authorization server is
//! published (on its own host or by path on the MCP host), the
//! ServiceMonitor scrapes the three services and profile hosts (a provider
//! subdomain per AI platform) get an endpoint, an allowed token audience and
//! a route; internal TLS is wired from cert-manager or existing Secrets
//! (mounts, each service's TLS sections, probes) and labelled internal
//! namespaces reach the auth-service's `/token`; invalid combinations fail
//! to render with a message saying why.
//!
//! Driven by tests/helm/check_chart.py (Helm as a library through
//! helm-python-sdk, schemas from kubernetes-validate), run with the Python
//! named by CHATAIGNE_TEST_HELM_PYTHON: a virtualenv with tests/helm/requirements.txt.
//! Without it the tests are skipped, except under CI=true where they fail.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

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
    check_with(python, values, set_json, &[])
}

/// [`check`] with more arguments for the driver.
fn check_with(python: &str, values: &[&str], set_json: &[&str], extra: &[&str]) -> Report {
    let root = repo_root();
    let mut command = Command::new(python);
    command
        .current_dir(&root)
        .arg(root.join("tests/helm/check_chart.py"))
        .arg(root.join("helm/chataigne"))
        .args(["--release", "chataigne", "--namespace", "chataigne"])
        .args(extra);
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
    } else if name.ends_with("SENTRY__DSN") {
        "https://publickey@sentry.example.com/42".to_owned()
    } else if name.ends_with("KEYS__ENCRYPTION_KEY") {
        // The auth-service's key-encryption key: base64 of 32 bytes.
        "Y2hhdGFpZ25lIHRlc3Qga2V5LWVuY3J5cHRpb24gayE=".to_owned()
    } else {
        // Keys and secrets: long enough for every service's bound and not
        // guessable (a repeated or sequential value is refused).
        "q8J1r0-Zk2VwYh4uN7bT3sXeLm9PaCdF5f0c9a3e7b1d2846".to_owned()
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

/// The paths the auth-service serves (its router's routes), as the chart
/// must publish them.
fn oauth_paths() -> Vec<&'static str> {
    let mut paths = vec![
        chataigne_auth::AUTHORIZE_PATH,
        chataigne_auth::TOKEN_PATH,
        chataigne_auth::REVOKE_PATH,
        chataigne_auth::REGISTER_PATH,
        chataigne_auth::METADATA_PATH,
        chataigne_auth::OIDC_METADATA_PATH,
        chataigne_auth::JWKS_PATH,
    ];
    paths.sort_unstable();
    paths
}

/// The (host, path, service, port) routes of an Ingress.
fn ingress_routes(ingress: &Value) -> Vec<(String, String, String, u64)> {
    let mut routes = Vec::new();
    for rule in ingress["spec"]["rules"].as_array().expect("rules") {
        for path in rule["http"]["paths"].as_array().expect("paths") {
            assert_eq!(path["pathType"], "Prefix", "{path}");
            routes.push((
                str_at(rule, "/host").to_owned(),
                str_at(path, "/path").to_owned(),
                str_at(path, "/backend/service/name").to_owned(),
                path["backend"]["service"]["port"]["number"]
                    .as_u64()
                    .expect("port number"),
            ));
        }
    }
    routes
}

/// The PathPrefix values of an HTTPRoute's single rule, and its backend.
fn httproute_paths(route: &Value) -> (Vec<String>, String, u64) {
    let rules = route["spec"]["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), 1, "{route:#}");
    let paths = rules[0]["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| {
            assert_eq!(m["path"]["type"], "PathPrefix");
            str_at(m, "/path/value").to_owned()
        })
        .collect();
    let backend = &rules[0]["backendRefs"][0];
    (
        paths,
        str_at(backend, "/name").to_owned(),
        backend["port"].as_u64().expect("backend port"),
    )
}

/// The ingress rules of a NetworkPolicy that admit `port`.
fn rules_admitting(policy: &Value, port: u64) -> Vec<&Value> {
    policy["spec"]["ingress"]
        .as_array()
        .map(|rules| {
            rules
                .iter()
                .filter(|rule| {
                    rule["ports"]
                        .as_array()
                        .is_some_and(|ports| ports.iter().any(|p| p["port"] == port))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The auth-service publishes its OAuth port to the Ingress controller and
/// to the labelled internal namespaces (their in-cluster route to `/token`),
/// nothing else: its gRPC port is admitted from the release's own pods only.
fn assert_oauth_port_open_to_the_ingress_controller_only(report: &Report) {
    let auth = report.find("NetworkPolicy", "chataigne-auth-service");
    let grpc = rules_admitting(auth, 50051);
    assert_eq!(grpc.len(), 1, "{auth:#}");
    let mut from = peer_components(grpc[0]);
    from.sort();
    assert_eq!(from, ["gateway", "tool-service"]);
    assert_eq!(grpc[0]["ports"].as_array().map(Vec::len), Some(1));
    let oauth = rules_admitting(auth, 8081);
    assert_eq!(oauth.len(), 2, "{auth:#}");
    let mut selected = Vec::new();
    for rule in oauth {
        assert_eq!(
            rule["ports"].as_array().map(Vec::len),
            Some(1),
            "oauth-http only, never gRPC: {auth:#}"
        );
        let peers = rule["from"].as_array().expect("peers");
        assert_eq!(peers.len(), 1);
        selected.push(peers[0]["namespaceSelector"]["matchLabels"].clone());
    }
    assert_eq!(
        selected,
        [
            serde_json::json!({"kubernetes.io/metadata.name": "ingress-nginx"}),
            serde_json::json!({"chataigne.io/internal-callers": "true"}),
        ]
    );
}

/// Every service accepts what the chart gives it: the configuration file
/// rendered for it and the secret-backed variables of its Deployment (keys
/// its typed config knows — unknown keys are refused — and values that pass
/// its start-up validation). Returns the gateway's and the auth-service's
/// configurations as they load them.
fn assert_services_accept_their_config(
    report: &Report,
) -> (chataigne_gateway::Config, chataigne_auth::Config) {
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
    // The authorization server issues tokens for exactly the gateway's
    // endpoints: each one's canonical URL, its own public URL (or the
    // gateway's) followed by its path.
    let resources: Vec<String> = gateway
        .endpoints
        .iter()
        .map(|endpoint| {
            let origin = endpoint
                .public_url
                .as_deref()
                .or(gateway.public_url.as_deref())
                .expect("a public URL");
            format!("{}{}", origin.trim_end_matches('/'), endpoint.path)
        })
        .collect();
    assert_eq!(auth.oauth.allowed_resources, resources);
    let tools: chataigne_tools::Config = chataigne_common::config::load_from_env(
        &chataigne_tools::Config::default(),
        Some(&file("tool-service.toml")),
        secret_env(report, "chataigne-tool-service"),
    )
    .expect("the tool-service reads its file and variables");
    tools
        .validate()
        .expect("the tool-service's configuration is valid");
    tools
        .require_shared_secrets()
        .expect("the tool-service gets the secrets its replicas share");
    let _ = std::fs::remove_dir_all(&dir);
    (gateway, auth)
}

/// The default endpoint: `/mcp/v1` on the gateway's public URL, any host.
fn default_endpoint() -> chataigne_gateway::EndpointConfig {
    chataigne_gateway::EndpointConfig {
        path: "/mcp/v1".to_owned(),
        profile: chataigne_gateway::Profile::Default,
        hosts: Vec::new(),
        public_url: None,
        ..Default::default()
    }
}

/// The MCP 2026-07-28 endpoint: `/mcp/v2` on the gateway's public URL.
fn modern_endpoint() -> chataigne_gateway::EndpointConfig {
    chataigne_gateway::EndpointConfig {
        path: "/mcp/v2".to_owned(),
        revision: chataigne_gateway::Revision::V2026_07_28,
        ..default_endpoint()
    }
}

/// The endpoint of a profile host: `/mcp/v1` on `https://<host>`.
fn host_endpoint(
    host: &str,
    profile: chataigne_gateway::Profile,
) -> chataigne_gateway::EndpointConfig {
    chataigne_gateway::EndpointConfig {
        path: "/mcp/v1".to_owned(),
        profile,
        hosts: vec![host.to_owned()],
        public_url: Some(format!("https://{host}")),
        ..Default::default()
    }
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
        // Liveness never depends on the database; readiness does (the
        // overall status), tolerating a blip.
        assert_eq!(
            container["livenessProbe"]["grpc"]["service"], "liveness",
            "{component}"
        );
        assert!(
            container["readinessProbe"]["grpc"]["service"].is_null(),
            "{component}"
        );
        assert_eq!(
            container["readinessProbe"]["failureThreshold"], 6,
            "{component}"
        );
    }
    assert_eq!(gateway["readinessProbe"]["failureThreshold"], 6);

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
    // The backends are called through their headless Services (every ready
    // pod, balanced by the caller).
    assert!(gateway_toml.contains(
        "tool_service_url = \"http://chataigne-tool-service-headless.chataigne.svc.cluster.local:50052\""
    ));
    for component in ["tool-service", "auth-service"] {
        let name = format!("chataigne-{component}-headless");
        let headless = report.find("Service", &name);
        assert_eq!(headless["spec"]["clusterIP"], "None", "{name}");
        assert_eq!(headless["spec"]["ports"][0]["name"], "grpc", "{name}");
    }
    assert!(
        config["data"]["tool-service.toml"]
            .as_str()
            .unwrap()
            .contains("listen = \"0.0.0.0:50052\"")
    );

    // NetworkPolicies: auth-service gRPC only from the gateway and the
    // tool-service pods, its OAuth port from the Ingress controller and the
    // labelled namespaces (their route to /token), its metrics port (served
    // by default) from the monitoring namespace; the tool-service also from
    // labelled namespaces.
    let auth = report.find("NetworkPolicy", "chataigne-auth-service");
    let rules = auth["spec"]["ingress"].as_array().expect("ingress rules");
    assert_eq!(
        rules.len(),
        4,
        "gRPC, OAuth and metrics rules only: {auth:#}"
    );
    assert_eq!(
        rules[3]["ports"][0]["port"], 9090,
        "the metrics port, from monitoring: {auth:#}"
    );
    assert_oauth_port_open_to_the_ingress_controller_only(&report);

    // The authorization server is public: an Ingress on the host of
    // authorizationServer, with its own TLS secret, routing exactly the
    // auth-service's HTTP paths to its oauth-http port.
    let oauth = report.find("Ingress", "chataigne-auth-service");
    assert_eq!(oauth["spec"]["ingressClassName"], "nginx");
    assert_eq!(oauth["spec"]["tls"][0]["hosts"][0], "auth.example.com");
    assert_eq!(oauth["spec"]["tls"][0]["secretName"], "chataigne-auth-tls");
    let routes = ingress_routes(oauth);
    let mut paths: Vec<&str> = routes.iter().map(|r| r.1.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(paths, oauth_paths());
    assert!(
        routes
            .iter()
            .all(|(host, _, service, port)| host == "auth.example.com"
                && service == "chataigne-auth-service"
                && *port == 8081)
    );
    let service = report.find("Service", "chataigne-auth-service");
    assert_eq!(service["spec"]["type"], "ClusterIP");
    assert!(
        service["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "oauth-http"
                && p["port"] == 8081
                && p["targetPort"] == "oauth-http")
    );

    // The signing-key encryption key reaches the auth-service and its
    // migration Job from a Secret, and nothing else.
    let kek_env = |container: &Value| -> Vec<Value> {
        container["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "CHATAIGNE_KEYS__ENCRYPTION_KEY")
            .cloned()
            .collect()
    };
    let auth_container = &report.find("Deployment", "chataigne-auth-service")["spec"]["template"]["spec"]
        ["containers"][0];
    let migrate_container = &report.find("Job", "chataigne-migrate-auth-service")["spec"]["template"]
        ["spec"]["containers"][0];
    for container in [auth_container, migrate_container] {
        let env = kek_env(container);
        assert_eq!(env.len(), 1, "{container:#}");
        assert_eq!(
            env[0]["valueFrom"]["secretKeyRef"]["name"],
            "chataigne-auth-kek"
        );
        assert_eq!(
            env[0]["valueFrom"]["secretKeyRef"]["key"],
            "signing-key-encryption-key"
        );
    }
    for other in ["chataigne-gateway", "chataigne-tool-service"] {
        let container =
            &report.find("Deployment", other)["spec"]["template"]["spec"]["containers"][0];
        assert!(kek_env(container).is_empty(), "{other}");
    }
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
    let (gateway_config, auth_config) = assert_services_accept_their_config(&report);
    // The Connected Apps Platform on its provider subdomain, served by the
    // gateway's own listener (its certificate covers both hosts): an
    // endpoint with the google profile and its token audience, no route.
    assert_eq!(
        gateway_config.endpoints,
        [
            default_endpoint(),
            modern_endpoint(),
            host_endpoint("gemini.mcp.example.com", chataigne_gateway::Profile::Google)
        ]
    );
    assert_eq!(
        auth_config.oauth.allowed_resources,
        [
            "https://mcp.example.com/mcp/v1",
            "https://mcp.example.com/mcp/v2",
            "https://gemini.mcp.example.com/mcp/v1"
        ]
    );

    let service = report.find("Service", "chataigne-gateway");
    assert_eq!(service["spec"]["type"], "LoadBalancer");
    assert_eq!(service["spec"]["externalTrafficPolicy"], "Local");
    assert_eq!(service["spec"]["ports"][0]["port"], 443);
    assert_eq!(service["spec"]["ports"][0]["name"], "https");
    // No Ingress in front of the gateway (the authorization server's only).
    let ingresses: Vec<&str> = report
        .all("Ingress")
        .into_iter()
        .map(|i| str_at(i, "/metadata/name"))
        .collect();
    assert_eq!(ingresses, ["chataigne-auth-service"]);

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

    // Alerting rules, the dashboard and a priority class.
    report.find("PrometheusRule", "chataigne");
    report.find("ConfigMap", "chataigne-dashboard");
    for component in ["gateway", "auth-service", "tool-service"] {
        let name = format!("chataigne-{component}");
        assert_eq!(
            report.find("Deployment", &name)["spec"]["template"]["spec"]["priorityClassName"],
            "chataigne"
        );
    }

    let monitor = report.find("ServiceMonitor", "chataigne");
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(monitor["spec"]["endpoints"][0]["port"], "metrics");
    let documents = report.json["documents"].as_array().unwrap();
    assert!(
        documents
            .iter()
            .any(|d| d["kind"] == "ServiceMonitor" && d["validated"] == "custom")
    );
    // It scrapes the three services: each has a "<name>-internal" Service
    // carrying the selected labels, whose `metrics` port reaches a named
    // container port of that service's pods, and Prometheus's namespace may
    // reach that port through the service's NetworkPolicy.
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .unwrap();
    let mut selected: Vec<&str> = report
        .all("Service")
        .into_iter()
        .filter(|service| {
            selector
                .iter()
                .all(|(k, v)| &service["metadata"]["labels"][k] == v)
        })
        .map(|service| str_at(service, "/metadata/name"))
        .collect();
    selected.sort_unstable();
    assert_eq!(
        selected,
        [
            "chataigne-auth-service-internal",
            "chataigne-gateway-internal",
            "chataigne-tool-service-internal"
        ]
    );
    for (component, target) in [
        ("gateway", "internal"),
        ("auth-service", "metrics"),
        ("tool-service", "metrics"),
    ] {
        let service = report.find("Service", &format!("chataigne-{component}-internal"));
        assert_eq!(service["spec"]["type"], "ClusterIP");
        assert_eq!(
            service["spec"]["selector"]["app.kubernetes.io/component"],
            component
        );
        let metrics = service["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "metrics")
            .unwrap_or_else(|| panic!("{component}: metrics port"));
        assert_eq!(metrics["targetPort"], target, "{component}");
        let port = metrics["port"].as_u64().unwrap();
        let container = &report.find("Deployment", &format!("chataigne-{component}"))["spec"]["template"]
            ["spec"]["containers"][0];
        assert!(
            container["ports"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == target && p["containerPort"] == port),
            "{component}: container port {target} = {port}"
        );
        let policy = report.find("NetworkPolicy", &format!("chataigne-{component}"));
        let from_monitoring = rules_admitting(policy, port)
            .into_iter()
            .filter(|rule| {
                rule["from"].as_array().is_some_and(|peers| {
                    peers.iter().any(|p| {
                        p["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
                            == "monitoring"
                    })
                })
            })
            .count();
        assert_eq!(from_monitoring, 1, "{component}: {policy:#}");
    }
    // The backends are told to listen there.
    for file in ["auth-service.toml", "tool-service.toml"] {
        let toml = config["data"][file].as_str().unwrap();
        assert!(
            toml.contains("metrics_listen = \"0.0.0.0:9090\"\n"),
            "{file}: {toml}"
        );
    }

    // With in-pod TLS the authorization server still gets its own Ingress
    // (its own host and certificate), and only its OAuth port is opened.
    let oauth = report.find("Ingress", "chataigne-auth-service");
    assert_eq!(oauth["spec"]["tls"][0]["secretName"], "chataigne-auth-tls");
    assert_eq!(oauth["spec"]["rules"][0]["host"], "auth.example.com");
    assert_oauth_port_open_to_the_ingress_controller_only(&report);
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
    let oauth = report.find("Ingress", "chataigne-auth-service");
    assert_eq!(
        oauth["spec"]["rules"][0]["host"],
        "auth.staging.example.com"
    );
    assert_eq!(
        oauth["spec"]["tls"][0]["secretName"],
        "chataigne-auth-staging-tls"
    );
    // Behind the same Ingress controller, the authorization server believes
    // the gateway's trusted proxies for its per-address rate limits.
    let auth_toml = report.find("ConfigMap", "chataigne-config")["data"]["auth-service.toml"]
        .as_str()
        .unwrap();
    assert!(
        auth_toml.contains("[oauth.rate_limits]\ntrusted_proxies = [\"10.0.0.0/8\"]"),
        "{auth_toml}"
    );
    let deployment = report.find("Deployment", "chataigne-tool-service");
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(
        report.find("Service", "chataigne-gateway")["spec"]["ports"][0]["port"],
        80
    );
}

/// By default all three services serve their metrics (each on an internal
/// Service), and each takes extra environment sources (`extraEnvFrom`).
#[test]
fn metrics_are_served_by_default_and_each_service_takes_extra_env_sources() {
    let Some(python) = python() else { return };
    let report = check(
        &python,
        &[TEST_VALUES],
        &[
            r#"gateway.extraEnvFrom=[{"secretRef":{"name":"gateway-extra"}}]"#,
            r#"authService.extraEnvFrom=[{"configMapRef":{"name":"auth-extra"}}]"#,
            r#"toolService.extraEnvFrom=[{"secretRef":{"name":"tools-extra"}}]"#,
        ],
    );
    report.assert_valid("metrics and extra env sources");
    for (component, config, source) in [
        (
            "gateway",
            "gateway.toml",
            json!({"secretRef": {"name": "gateway-extra"}}),
        ),
        (
            "auth-service",
            "auth-service.toml",
            json!({"configMapRef": {"name": "auth-extra"}}),
        ),
        (
            "tool-service",
            "tool-service.toml",
            json!({"secretRef": {"name": "tools-extra"}}),
        ),
    ] {
        report.find("Service", &format!("chataigne-{component}-internal"));
        let toml = report.find("ConfigMap", "chataigne-config")["data"][config]
            .as_str()
            .unwrap();
        if component != "gateway" {
            assert!(toml.contains("metrics_listen"), "{component}: {toml}");
        }
        let container = &report.find("Deployment", &format!("chataigne-{component}"))["spec"]["template"]
            ["spec"]["containers"][0];
        assert_eq!(container["envFrom"], json!([source]), "{component}");
    }
}

/// Every object names its namespace: the release's, or `namespaceOverride`,
/// which the in-cluster addresses the services are given follow too.
#[test]
fn every_object_names_its_namespace_the_releases_or_the_override() {
    let Some(python) = python() else { return };
    for (set, namespace) in [
        (&[][..], "chataigne"),
        (&[r#"namespaceOverride="restaurants""#][..], "restaurants"),
    ] {
        let report = check(&python, &[TEST_VALUES], set);
        report.assert_valid(namespace);
        for manifest in report.manifests() {
            assert_eq!(
                manifest["metadata"]["namespace"], namespace,
                "{} {}",
                manifest["kind"], manifest["metadata"]["name"]
            );
        }
        let config = report.find("ConfigMap", "chataigne-config")["data"]["gateway.toml"]
            .as_str()
            .unwrap();
        assert!(
            config.contains(&format!(".{namespace}.svc.")),
            "{namespace}: {config}"
        );
    }
}

#[test]
fn the_sentry_dsn_reaches_every_service_from_a_secret_by_reference_and_only_when_named() {
    let Some(python) = python() else { return };
    let sentry_env = |report: &Report, deployment: &str| {
        let container =
            &report.find("Deployment", deployment)["spec"]["template"]["spec"]["containers"][0];
        let env = container["env"].as_array().cloned().unwrap_or_default();
        let find = |name: &str| env.iter().find(|e| e["name"] == name).cloned();
        (
            find("CHATAIGNE_SENTRY__DSN"),
            find("CHATAIGNE_SENTRY__ENVIRONMENT"),
        )
    };
    let deployments = [
        "chataigne-gateway",
        "chataigne-auth-service",
        "chataigne-tool-service",
    ];
    let off = check(&python, &[TEST_VALUES], &[]);
    off.assert_valid("without a Sentry DSN");
    for deployment in deployments {
        assert_eq!(sentry_env(&off, deployment), (None, None), "{deployment}");
    }
    let on = check(
        &python,
        &[TEST_VALUES],
        &[
            r#"secrets.sentryDsn={"name":"chataigne-sentry","key":"dsn","env":"CHATAIGNE_SENTRY__DSN"}"#,
            r#"sentry={"environment":"staging"}"#,
        ],
    );
    on.assert_valid("with a Sentry DSN");
    for deployment in deployments {
        let (dsn, environment) = sentry_env(&on, deployment);
        let dsn = dsn.unwrap_or_else(|| panic!("{deployment}: no CHATAIGNE_SENTRY__DSN"));
        assert_eq!(
            dsn["valueFrom"]["secretKeyRef"],
            serde_json::json!({"name": "chataigne-sentry", "key": "dsn"}),
            "{deployment}: the DSN by reference, never a value"
        );
        assert!(dsn.get("value").is_none(), "{dsn}");
        assert_eq!(
            environment.map(|e| e["value"].clone()),
            Some(serde_json::json!("staging")),
            "{deployment}"
        );
    }
    // The services accept the DSN the Secret would hold.
    assert_services_accept_their_config(&on);
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

    // The authorization server: its own HTTPRoute on the same parents, for
    // its host, to the auth-service's oauth-http port.
    let oauth = report.find("HTTPRoute", "chataigne-auth-service");
    assert_eq!(oauth["spec"]["parentRefs"], route["spec"]["parentRefs"]);
    assert_eq!(
        oauth["spec"]["hostnames"],
        serde_json::json!(["auth.example.com"])
    );
    let (mut paths, backend, port) = httproute_paths(oauth);
    paths.sort_unstable();
    assert_eq!(paths, oauth_paths());
    assert_eq!((backend.as_str(), port), ("chataigne-auth-service", 8081));
    assert_oauth_port_open_to_the_ingress_controller_only(&report);
}

#[test]
fn profile_hosts_get_an_endpoint_an_audience_and_a_route() {
    use chataigne_gateway::Profile;
    let Some(python) = python() else { return };
    // Ingress: the Connected Apps Platform on gemini.mcp.example.com (the
    // main certificate covers it), another platform with a certificate of
    // its own.
    let hosts = r#"gateway.profileHosts=[
        {"host": "gemini.mcp.example.com", "profile": "google"},
        {"host": "other.mcp.example.com", "profile": "default", "tls": {"secretName": "other-tls"}}
    ]"#;
    let report = check(&python, &[TEST_VALUES], &[hosts]);
    report.assert_valid("profile hosts, Ingress");
    let (gateway, auth) = assert_services_accept_their_config(&report);
    assert_eq!(
        gateway.endpoints,
        [
            default_endpoint(),
            modern_endpoint(),
            host_endpoint("gemini.mcp.example.com", Profile::Google),
            host_endpoint("other.mcp.example.com", Profile::Default),
        ]
    );
    assert_eq!(
        gateway.public_url.as_deref(),
        Some("https://mcp.example.com")
    );
    assert_eq!(
        auth.oauth.allowed_resources,
        [
            "https://mcp.example.com/mcp/v1",
            "https://mcp.example.com/mcp/v2",
            "https://gemini.mcp.example.com/mcp/v1",
            "https://other.mcp.example.com/mcp/v1",
        ]
    );
    // Every host gets the gateway's paths (the MCP endpoint and its
    // protected-resource metadata), nothing else.
    let ingress = report.find("Ingress", "chataigne-gateway");
    let routes = ingress_routes(ingress);
    for host in [
        "mcp.example.com",
        "gemini.mcp.example.com",
        "other.mcp.example.com",
    ] {
        let on_host: Vec<(&str, &str, u64)> = routes
            .iter()
            .filter(|r| r.0 == host)
            .map(|r| (r.1.as_str(), r.2.as_str(), r.3))
            .collect();
        assert_eq!(
            on_host,
            [
                ("/mcp/", "chataigne-gateway", 80),
                (
                    "/.well-known/oauth-protected-resource/",
                    "chataigne-gateway",
                    80
                ),
            ],
            "{host}"
        );
    }
    assert_eq!(routes.len(), 6);
    assert_eq!(
        ingress["spec"]["tls"],
        serde_json::json!([
            {"hosts": ["mcp.example.com", "gemini.mcp.example.com"], "secretName": "chataigne-tls"},
            {"hosts": ["other.mcp.example.com"], "secretName": "other-tls"},
        ])
    );

    // Gateway API: a route of their own for the profile hosts, same parents,
    // paths and backend; the MCP host's route is unchanged.
    let hosts = r#"gateway.profileHosts=[{"host": "gemini.mcp.example.com", "profile": "google"}]"#;
    let report = check(
        &python,
        &[TEST_VALUES],
        &[
            "ingress.enabled=false",
            "httpRoute.enabled=true",
            r#"httpRoute.parentRefs=[{"name":"public","namespace":"gateway-system"}]"#,
            hosts,
        ],
    );
    report.assert_valid("profile hosts, Gateway API");
    let (gateway, auth) = assert_services_accept_their_config(&report);
    assert_eq!(gateway.endpoints.len(), 3);
    assert_eq!(
        auth.oauth.allowed_resources,
        [
            "https://mcp.example.com/mcp/v1",
            "https://mcp.example.com/mcp/v2",
            "https://gemini.mcp.example.com/mcp/v1",
        ]
    );
    let main = report.find("HTTPRoute", "chataigne-gateway");
    assert_eq!(
        main["spec"]["hostnames"],
        serde_json::json!(["mcp.example.com"])
    );
    let profiles = report.find("HTTPRoute", "chataigne-gateway-profiles");
    assert_eq!(
        profiles["spec"]["hostnames"],
        serde_json::json!(["gemini.mcp.example.com"])
    );
    assert_eq!(profiles["spec"]["parentRefs"], main["spec"]["parentRefs"]);
    assert_eq!(httproute_paths(profiles), httproute_paths(main));
    assert_eq!(
        httproute_paths(profiles).0,
        ["/mcp/", "/.well-known/oauth-protected-resource/"]
    );
    // Without profile hosts there is no such route.
    let report = check(
        &python,
        &[TEST_VALUES],
        &[
            "ingress.enabled=false",
            "httpRoute.enabled=true",
            r#"httpRoute.parentRefs=[{"name":"public"}]"#,
        ],
    );
    report.assert_valid("Gateway API, no profile hosts");
    assert_eq!(report.all("HTTPRoute").len(), 2);
}

/// No path of one service is a path prefix of the other's (element-wise,
/// as Prefix and PathPrefix match).
fn assert_disjoint(gateway: &[String], oauth: &[String]) {
    for g in gateway {
        for a in oauth {
            let g = format!("{}/", g.trim_end_matches('/'));
            let a = format!("{}/", a.trim_end_matches('/'));
            assert!(
                !g.starts_with(&a) && !a.starts_with(&g),
                "{g} and {a} overlap"
            );
        }
    }
}

#[test]
fn the_authorization_server_can_share_the_mcp_host_by_path() {
    let Some(python) = python() else { return };
    // Ingress: a second Ingress on the same host, reusing its certificate.
    let report = check(
        &python,
        &[TEST_VALUES],
        &[
            r#"authorizationServer="https://mcp.example.com""#,
            r#"oauthRoute.ingress.tls.secretName="""#,
        ],
    );
    report.assert_valid("shared host, Ingress");
    assert_services_accept_their_config(&report);
    let gateway = ingress_routes(report.find("Ingress", "chataigne-gateway"));
    let oauth_ingress = report.find("Ingress", "chataigne-auth-service");
    assert_eq!(
        oauth_ingress["spec"]["tls"][0]["secretName"],
        "chataigne-tls"
    );
    let oauth = ingress_routes(oauth_ingress);
    assert!(
        gateway
            .iter()
            .chain(&oauth)
            .all(|route| route.0 == "mcp.example.com")
    );
    let paths = |routes: &[(String, String, String, u64)]| -> Vec<String> {
        routes.iter().map(|r| r.1.clone()).collect()
    };
    assert_disjoint(&paths(&gateway), &paths(&oauth));
    assert_eq!(oauth.len(), oauth_paths().len());

    // Gateway API: two HTTPRoutes on the same hostname, disjoint paths.
    let report = check(
        &python,
        &[TEST_VALUES],
        &[
            r#"authorizationServer="https://mcp.example.com""#,
            "ingress.enabled=false",
            "httpRoute.enabled=true",
            r#"httpRoute.parentRefs=[{"name":"public","namespace":"gateway-system"}]"#,
        ],
    );
    report.assert_valid("shared host, Gateway API");
    let gateway = report.find("HTTPRoute", "chataigne-gateway");
    let oauth = report.find("HTTPRoute", "chataigne-auth-service");
    assert_eq!(oauth["spec"]["hostnames"], gateway["spec"]["hostnames"]);
    assert_disjoint(&httproute_paths(gateway).0, &httproute_paths(oauth).0);

    // The route can be switched off (published by other means): no object,
    // and the OAuth port is closed to all but the labelled internal
    // namespaces (their route to /token) unless networkPolicy.oauthHttpFrom
    // names peers.
    let report = check(&python, &[TEST_VALUES], &["oauthRoute.enabled=false"]);
    report.assert_valid("no OAuth route");
    assert_eq!(report.all("Ingress").len(), 1);
    let auth = report.find("NetworkPolicy", "chataigne-auth-service");
    let oauth = rules_admitting(auth, 8081);
    assert_eq!(oauth.len(), 1, "{auth:#}");
    assert_eq!(
        oauth[0]["from"][0]["namespaceSelector"]["matchLabels"]["chataigne.io/internal-callers"],
        "true"
    );
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

/// Values that must not render, set over the test values: the `--set-json`
/// expressions, the stage that refuses them and what the refusal says.
const INVALID: &[(&[&str], &str, &str)] = &[
    // Both an Ingress and in-pod TLS.
    (
        &[r#"gateway.tls={"enabled":true,"secretName":"mcp-tls"}"#],
        "render",
        "exactly one way of exposing the gateway on 443",
    ),
    // In-pod TLS without a certificate secret.
    (
        &["ingress.enabled=false", r#"gateway.tls={"enabled":true}"#],
        "render",
        "gateway.tls.enabled needs gateway.tls.secretName",
    ),
    // HPA minReplicas above maxReplicas.
    (
        &[r#"toolService.autoscaling={"minReplicas":5,"maxReplicas":3}"#],
        "render",
        "toolService.autoscaling.minReplicas (5) must not exceed maxReplicas (3)",
    ),
    // A PDB that would block every eviction (HPA off, minAvailable = replicas).
    (
        &[
            r#"authService.autoscaling={"enabled":false}"#,
            "authService.replicas=2",
            r#"authService.pdb={"minAvailable":2}"#,
        ],
        "render",
        "authService.pdb.minAvailable (2) must be lower than the replica count (2",
    ),
    // A missing secret reference.
    (
        &[r#"secrets.redisUrl.name="""#],
        "render",
        "secrets.redisUrl.name",
    ),
    (
        &[r#"secrets.signingKeyEncryptionKey.name="""#],
        "render",
        "secrets.signingKeyEncryptionKey.name",
    ),
    // The authorization server published on a path of its host: its
    // endpoints live at the root.
    (
        &[r#"authorizationServer="https://auth.example.com/oauth""#],
        "render",
        "oauthRoute.enabled needs authorizationServer as https://<host>",
    ),
    // Its own host but no certificate for it.
    (
        &[r#"oauthRoute.ingress.tls.secretName="""#],
        "render",
        "oauthRoute.ingress.tls.secretName is required",
    ),
    // On the MCP host with a gateway path that swallows its paths.
    (
        &[
            r#"authorizationServer="https://mcp.example.com""#,
            r#"ingress.paths=["/mcp/", "/.well-known/"]"#,
        ],
        "render",
        "overlaps the gateway's path /.well-known/ on the shared host mcp.example.com",
    ),
    // An HTTPRoute for the gateway without hostnames matches every host,
    // the authorization server's too.
    (
        &[
            "ingress.enabled=false",
            "httpRoute.enabled=true",
            r#"httpRoute.parentRefs=[{"name":"public"}]"#,
            "httpRoute.hostnames=[]",
            r#"httpRoute.paths=["/"]"#,
        ],
        "render",
        "overlaps the gateway's path / on the shared host auth.example.com",
    ),
    // On the MCP host while the gateway's LoadBalancer owns that name.
    (
        &[
            "ingress.enabled=false",
            r#"gateway.tls={"enabled":true,"secretName":"mcp-tls"}"#,
            r#"authorizationServer="https://mcp.example.com""#,
        ],
        "render",
        "the authorization server needs a host of its own",
    ),
    // A ServiceMonitor that would miss the backends.
    (
        &[
            "serviceMonitor.enabled=true",
            "authService.metrics.enabled=false",
        ],
        "render",
        "serviceMonitor.enabled scrapes all three services: set authService.metrics.enabled",
    ),
    // Alerts on the backends' metrics need them served.
    (
        &[
            "prometheusRule.enabled=true",
            "authService.metrics.enabled=false",
        ],
        "render",
        "prometheusRule.enabled alerts on all three services' metrics: set authService.metrics.enabled",
    ),
    // A latency threshold that is not a bucket bound of the histogram.
    (
        &[
            "prometheusRule.enabled=true",
            "authService.metrics.enabled=true",
            "toolService.metrics.enabled=true",
            "prometheusRule.latency.thresholdSeconds=2",
        ],
        "lint",
        "/prometheusRule/latency/thresholdSeconds",
    ),
    // An existing ServiceAccount without its name.
    (
        &[r#"gateway.serviceAccount={"create":false}"#],
        "render",
        "gateway.serviceAccount.create=false needs gateway.serviceAccount.name",
    ),
    (
        &[r#"migrations.serviceAccount={"create":false}"#],
        "render",
        "migrations.serviceAccount.create=false needs migrations.serviceAccount.name",
    ),
    // A metrics port on top of the service's gRPC port.
    (
        &[r#"toolService.metrics={"enabled":true,"port":50052}"#],
        "render",
        "toolService.metrics.port (50052) must differ",
    ),
    // A value of the wrong type is refused by values.schema.json (lint
    // applies the schema first; so do install, upgrade and template).
    (&[r#"gateway.replicas="two""#], "lint", "/gateway/replicas"),
    // A CIDR that is not one.
    (
        &[r#"gateway.allowedCidrs=["not-a-cidr"]"#],
        "lint",
        "/gateway/allowedCidrs/0",
    ),
    // A client profile the gateway does not have (the schema's enum).
    (
        &[r#"gateway.profileHosts=[{"host":"gemini.mcp.example.com","profile":"gemini"}]"#],
        "lint",
        "/gateway/profileHosts/0/profile",
    ),
    // A profile host that is a URL, not a DNS name.
    (
        &[r#"gateway.profileHosts=[{"host":"https://gemini.mcp.example.com","profile":"google"}]"#],
        "lint",
        "/gateway/profileHosts/0/host",
    ),
    // The same host twice (with two profiles).
    (
        &[
            r#"gateway.profileHosts=[{"host":"gemini.mcp.example.com","profile":"google"},{"host":"gemini.mcp.example.com","profile":"default"}]"#,
        ],
        "render",
        "gateway.profileHosts: gemini.mcp.example.com is listed twice",
    ),
    // The MCP host itself, which the default endpoint serves.
    (
        &[r#"gateway.profileHosts=[{"host":"mcp.example.com","profile":"google"}]"#],
        "render",
        "gateway.profileHosts[0]: mcp.example.com is the MCP host",
    ),
    // The authorization server's host.
    (
        &[r#"gateway.profileHosts=[{"host":"auth.example.com","profile":"google"}]"#],
        "render",
        "gateway.profileHosts[0]: auth.example.com is the authorization server's host",
    ),
    // A certificate of its own where no Ingress would use it.
    (
        &[
            "ingress.enabled=false",
            "httpRoute.enabled=true",
            r#"httpRoute.parentRefs=[{"name":"public"}]"#,
            r#"gateway.profileHosts=[{"host":"gemini.mcp.example.com","profile":"google","tls":{"secretName":"gemini-tls"}}]"#,
        ],
        "render",
        "gateway.profileHosts[0].tls.secretName is used by the Ingress only",
    ),
    // Endpoints written by hand next to the ones the chart writes.
    (
        &[
            r#"gateway.profileHosts=[{"host":"gemini.mcp.example.com","profile":"google"}]"#,
            r#"gateway.config={"endpoints":[{"path":"/mcp/v2"}]}"#,
        ],
        "render",
        "gateway.config.endpoints and gateway.profileHosts are exclusive",
    ),
];

#[test]
fn invalid_combinations_fail_to_render() {
    let Some(python) = python() else { return };
    for (set_json, stage, message) in INVALID {
        let report = check(&python, &[TEST_VALUES], set_json);
        assert_fails(&report, stage, message);
    }
}

/// The promtool named by CHATAIGNE_TEST_PROMTOOL (scripts/test.sh fetches
/// Debian's); without it the rule checks are skipped, except under CI=true.
fn promtool() -> Option<String> {
    match std::env::var("CHATAIGNE_TEST_PROMTOOL") {
        Ok(promtool) if !promtool.is_empty() => Some(promtool),
        _ if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CHATAIGNE_TEST_PROMTOOL must name promtool in CI (scripts/test.sh fetches it)")
        }
        _ => {
            eprintln!("skipping the promtool checks: CHATAIGNE_TEST_PROMTOOL is not set");
            None
        }
    }
}

/// Runs promtool with `args` in `dir`; panics with its output unless it succeeds.
fn run_promtool(promtool: &str, dir: &Path, args: &[&str]) -> String {
    let output = Command::new(promtool)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run promtool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "promtool {args:?}:\n{text}");
    text
}

/// A rule file `{groups: ...}` as JSON (a subset of YAML, which promtool reads).
fn write_rules(dir: &Path, name: &str, groups: &Value) -> PathBuf {
    let path = dir.join(name);
    let file = serde_json::json!({ "groups": groups });
    std::fs::write(&path, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    path
}

fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chataigne-{what}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every PromQL expression of the dashboard's panels.
fn dashboard_queries(dashboard: &Value) -> Vec<String> {
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries.push(str_at(target, "/expr").to_owned());
        }
    }
    queries
}

const OBSERVABILITY: &[&str] = &[
    "prometheusRule.enabled=true",
    r#"prometheusRule.labels={"release":"kube-prometheus-stack"}"#,
    r#"prometheusRule.alertLabels={"team":"restaurant-platform"}"#,
    r#"prometheusRule.runbookUrl="https://runbooks.example.com/chataigne""#,
    "dashboard.enabled=true",
    r#"dashboard.namespace="monitoring""#,
    r#"dashboard.annotations={"grafana_folder":"Chataigne"}"#,
    "serviceMonitor.enabled=true",
    "authService.metrics.enabled=true",
    "toolService.metrics.enabled=true",
];

#[test]
fn alert_rules_check_and_fire_and_the_dashboard_queries_parse() {
    let Some(python) = python() else { return };
    let report = check(&python, &[TEST_VALUES], OBSERVABILITY);
    report.assert_valid("rules and dashboard");

    // The PrometheusRule: the release's alerts, labelled for the operator.
    let rule = report.find("PrometheusRule", "chataigne");
    assert_eq!(
        rule["metadata"]["labels"]["release"],
        "kube-prometheus-stack"
    );
    let groups = &rule["spec"]["groups"];
    let alerts: Vec<&Value> = groups
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|group| group["rules"].as_array().unwrap())
        .collect();
    let mut names: Vec<&str> = alerts.iter().map(|a| str_at(a, "/alert")).collect();
    names.dedup();
    names.sort_unstable();
    names.dedup();
    assert_eq!(
        names,
        [
            "ChataigneAllowlistRefusals",
            "ChataigneDependencyDown",
            "ChataigneHighErrorRatio",
            "ChataigneLatencyBudgetBurn",
            "ChataigneLatencyBudgetBurnSlow",
            "ChataigneRateLimitRefusals",
            "ChataigneRateLimitsDegraded",
            "ChataigneTargetDown",
        ]
    );
    for alert in &alerts {
        let name = str_at(alert, "/alert");
        assert_eq!(alert["labels"]["team"], "restaurant-platform", "{name}");
        assert!(
            str_at(alert, "/expr").contains("namespace=\"chataigne\""),
            "{name} selects the release's namespace"
        );
        assert_eq!(
            str_at(alert, "/annotations/runbook_url"),
            format!(
                "https://runbooks.example.com/chataigne#{}",
                name.to_lowercase()
            )
        );
    }

    // The Grafana dashboard ConfigMap: the chart's JSON, for the sidecar.
    let dashboard = report.find("ConfigMap", "chataigne-dashboard");
    assert_eq!(dashboard["metadata"]["namespace"], "monitoring");
    assert_eq!(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
    assert_eq!(
        dashboard["metadata"]["annotations"]["grafana_folder"],
        "Chataigne"
    );
    let json: Value = serde_json::from_str(str_at(dashboard, "/data/chataigne.json"))
        .expect("the dashboard is JSON");
    let shipped: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("helm/chataigne/dashboards/chataigne.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(json, shipped);
    assert_eq!(json["uid"], "chataigne-mcp");
    let queries = dashboard_queries(&json);
    assert!(queries.len() >= 15, "{queries:#?}");

    let Some(promtool) = promtool() else { return };
    let dir = temp_dir("rules");
    // The rules as rendered: syntax, PromQL and annotation templates.
    write_rules(&dir, "rendered.yaml", groups);
    let checked = run_promtool(&promtool, &dir, &["check", "rules", "rendered.yaml"]);
    assert!(checked.contains("SUCCESS: 9 rules found"), "{checked}");
    // Their behaviour, on synthetic series (tests/helm/alerts_test.yaml):
    // annotations left out, their text is not under test.
    let mut bare = groups.clone();
    for group in bare.as_array_mut().unwrap() {
        for rule in group["rules"].as_array_mut().unwrap() {
            rule.as_object_mut().unwrap().remove("annotations");
            // The test runs without the operator's extra labels.
            rule["labels"].as_object_mut().unwrap().remove("team");
        }
    }
    write_rules(&dir, "rules.yaml", &bare);
    std::fs::copy(
        repo_root().join("tests/helm/alerts_test.yaml"),
        dir.join("alerts_test.yaml"),
    )
    .unwrap();
    run_promtool(&promtool, &dir, &["test", "rules", "alerts_test.yaml"]);
    // Every dashboard query parses, with Grafana's variables given values.
    let records: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(i, query)| {
            let expr = query
                .replace("$__rate_interval", "5m")
                .replace("$namespace", "chataigne")
                .replace("$release", "chataigne");
            serde_json::json!({"record": format!("dashboard:query_{i}"), "expr": expr})
        })
        .collect();
    write_rules(
        &dir,
        "dashboard.yaml",
        &serde_json::json!([{"name": "dashboard", "rules": records}]),
    );
    run_promtool(&promtool, &dir, &["check", "rules", "dashboard.yaml"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The priority class of a pod template or pod spec.
fn priority(spec: &Value) -> Option<&str> {
    spec["priorityClassName"].as_str()
}

fn pod_spec<'a>(report: &'a Report, kind: &str, name: &str) -> &'a Value {
    let doc = report.find(kind, name);
    if kind == "Pod" {
        &doc["spec"]
    } else {
        &doc["spec"]["template"]["spec"]
    }
}

#[test]
fn pods_take_a_priority_class_extra_volumes_and_containers_and_existing_service_accounts() {
    let Some(python) = python() else { return };
    // Defaults: no priority class, the chart's own ServiceAccounts.
    let report = check(&python, &[TEST_VALUES], &[]);
    report.assert_valid("defaults");
    for component in ["gateway", "auth-service", "tool-service"] {
        let name = format!("chataigne-{component}");
        let spec = pod_spec(&report, "Deployment", &name);
        assert_eq!(priority(spec), None, "{name}");
        assert_eq!(spec["serviceAccountName"], name.as_str());
        assert_eq!(spec["containers"].as_array().map(Vec::len), Some(1));
        assert!(spec.get("initContainers").is_none());
        report.find("ServiceAccount", &name);
    }

    let sidecar = r#"{"name": "log-shipper", "image": "registry.example.com/shipper:1.0",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
        "securityContext": {"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "spool", "mountPath": "/spool"}]}"#;
    let init = r#"{"name": "wait-for-proxy", "image": "registry.example.com/wait:1.0",
        "resources": {"requests": {"cpu": "10m"}},
        "securityContext": {"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false,
                            "capabilities": {"drop": ["ALL"]}}}"#;
    let containers = format!("gateway.extraContainers=[{sidecar}]");
    let inits = format!("gateway.extraInitContainers=[{init}]");
    let report = check_with(
        &python,
        &[TEST_VALUES],
        &[
            r#"priorityClassName="chataigne-critical""#,
            r#"toolService.priorityClassName="chataigne-batch""#,
            r#"gateway.extraVolumes=[{"name": "spool", "emptyDir": {"sizeLimit": "16Mi"}}, {"name": "ca", "configMap": {"name": "corporate-ca"}}]"#,
            r#"gateway.extraVolumeMounts=[{"name": "ca", "mountPath": "/etc/ssl/corporate", "readOnly": true}]"#,
            &containers,
            &inits,
            r#"authService.serviceAccount={"create": false, "name": "auth-workload"}"#,
            r#"toolService.serviceAccount={"create": true, "name": "tools-workload"}"#,
            r#"migrations.serviceAccount={"create": false, "name": "migrator"}"#,
        ],
        &[
            "--external-service-account",
            "auth-workload",
            "--external-service-account",
            "migrator",
        ],
    );
    report.assert_valid("priority, extras, service accounts");

    // Priority classes: the global one, overridden per service.
    for (kind, name, expected) in [
        ("Deployment", "chataigne-gateway", "chataigne-critical"),
        ("Deployment", "chataigne-auth-service", "chataigne-critical"),
        ("Deployment", "chataigne-tool-service", "chataigne-batch"),
        (
            "Job",
            "chataigne-migrate-auth-service",
            "chataigne-critical",
        ),
        (
            "Job",
            "chataigne-migrate-tool-service",
            "chataigne-critical",
        ),
        ("Pod", "chataigne-test-smoke", "chataigne-critical"),
    ] {
        assert_eq!(
            priority(pod_spec(&report, kind, name)),
            Some(expected),
            "{kind} {name}"
        );
    }

    // Extra volumes, mounts, containers: the gateway's pods only.
    let gateway = pod_spec(&report, "Deployment", "chataigne-gateway");
    let volumes: Vec<&str> = gateway["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| str_at(v, "/name"))
        .collect();
    assert_eq!(volumes, ["config", "tmp", "spool", "ca"]);
    let containers: Vec<&str> = gateway["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| str_at(c, "/name"))
        .collect();
    assert_eq!(containers, ["gateway", "log-shipper"]);
    assert_eq!(gateway["initContainers"][0]["name"], "wait-for-proxy");
    let mounts: Vec<&str> = gateway["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| str_at(m, "/mountPath"))
        .collect();
    assert_eq!(
        mounts,
        ["/etc/chataigne/gateway.toml", "/tmp", "/etc/ssl/corporate"]
    );
    assert_eq!(
        gateway["containers"][1]["volumeMounts"][0]["mountPath"],
        "/spool"
    );
    for other in ["chataigne-auth-service", "chataigne-tool-service"] {
        let spec = pod_spec(&report, "Deployment", other);
        assert_eq!(
            spec["containers"].as_array().map(Vec::len),
            Some(1),
            "{other}"
        );
        assert_eq!(spec["volumes"].as_array().map(Vec::len), Some(2), "{other}");
    }

    // ServiceAccounts: an existing one is used, not rendered; a named one
    // the chart creates is rendered under that name.
    let auth = pod_spec(&report, "Deployment", "chataigne-auth-service");
    assert_eq!(auth["serviceAccountName"], "auth-workload");
    let accounts: Vec<&str> = report
        .all("ServiceAccount")
        .iter()
        .map(|sa| str_at(sa, "/metadata/name"))
        .collect();
    for absent in [
        "auth-workload",
        "chataigne-auth-service",
        "migrator",
        "chataigne-migrate",
    ] {
        assert!(!accounts.contains(&absent), "{absent} in {accounts:?}");
    }
    assert!(accounts.contains(&"tools-workload"), "{accounts:?}");
    assert!(accounts.contains(&"chataigne-gateway"), "{accounts:?}");
    let tools = pod_spec(&report, "Deployment", "chataigne-tool-service");
    assert_eq!(tools["serviceAccountName"], "tools-workload");
    for job in [
        "chataigne-migrate-auth-service",
        "chataigne-migrate-tool-service",
    ] {
        assert_eq!(
            pod_spec(&report, "Job", job)["serviceAccountName"],
            "migrator"
        );
    }
}

/// Runs the smoke script of the rendered test Pod, with its environment
/// pointed at `gateway_internal` (no retries): its exit status and output.
fn run_smoke(script: &str, gateway_internal: &str, env: &[(String, String)]) -> (bool, String) {
    let output = Command::new("sh")
        .args(["-c", script])
        .env("GATEWAY_INTERNAL", gateway_internal)
        .envs(env.iter().map(|(name, value)| (name, value)))
        .env("SMOKE_RETRIES", "0")
        .output()
        .expect("run sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[test]
fn the_helm_test_pod_smoke_tests_the_gateway_and_its_backends() {
    let Some(python) = python() else { return };
    let report = check(&python, &[TEST_VALUES], &[]);
    report.assert_valid("test Pod");
    let pod = report.find("Pod", "chataigne-test-smoke");
    assert_eq!(pod["metadata"]["annotations"]["helm.sh/hook"], "test");
    assert_eq!(
        pod["metadata"]["annotations"]["helm.sh/hook-delete-policy"],
        "before-hook-creation,hook-succeeded"
    );
    let container = &pod["spec"]["containers"][0];
    assert_eq!(container["image"], "docker.io/curlimages/curl:8.11.1");
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(pod["spec"]["automountServiceAccountToken"], false);
    let env = &container["env"][0];
    assert_eq!(env["name"], "GATEWAY_INTERNAL");
    assert_eq!(
        env["value"],
        "http://chataigne-gateway-internal.chataigne.svc.cluster.local:9090"
    );
    // Without a service account: health only, and the script says so.
    assert_eq!(container["env"].as_array().map(Vec::len), Some(1));
    let health_only = str_at(container, "/args/0").to_owned();
    assert!(health_only.contains("no service account configured"));

    let np = report.find("NetworkPolicy", "chataigne-tool-service");
    assert!(
        !serde_json::to_string(np).unwrap().contains("\"test\""),
        "without a service account the tool-service admits no test Pod: {np:#}"
    );

    // With one: a token from the authorization server, then a read tool on
    // the tool-service's gRPC API (the audience of service-account tokens),
    // the credentials from the Secret.
    let report = check(
        &python,
        &[TEST_VALUES],
        &[r#"tests.serviceAccount.secret="smoke-account""#],
    );
    report.assert_valid("test Pod with a service account");
    let with_account = &report.find("Pod", "chataigne-test-smoke")["spec"]["containers"][0];
    let env: Vec<&Value> = with_account["env"].as_array().unwrap().iter().collect();
    let named = |name: &str| {
        *env.iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {env:?}"))
    };
    assert_eq!(named("SMOKE_ISSUER")["value"], "https://auth.example.com");
    assert_eq!(
        named("SMOKE_TOOL_SERVICE_GRPC")["value"],
        "http://chataigne-tool-service-headless.chataigne.svc.cluster.local:50052"
    );
    let np = report.find("NetworkPolicy", "chataigne-tool-service");
    let from_test: Vec<&Value> = np["spec"]["ingress"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|rule| {
            rule["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "test"
        })
        .collect();
    assert_eq!(from_test.len(), 1, "{np:#}");
    assert_eq!(
        from_test[0]["ports"],
        serde_json::json!([{"protocol": "TCP", "port": 50052}])
    );
    assert_eq!(
        named("SMOKE_CLIENT_ID")["valueFrom"]["secretKeyRef"],
        serde_json::json!({"name": "smoke-account", "key": "client-id"})
    );
    assert_eq!(
        named("SMOKE_CLIENT_SECRET")["valueFrom"]["secretKeyRef"],
        serde_json::json!({"name": "smoke-account", "key": "client-secret"})
    );
    assert!(
        env.iter().all(|e| e
            .get("value")
            .is_none_or(|v| !v.to_string().contains("secret"))),
        "no credential in the Pod spec: {env:?}"
    );
    let script = str_at(with_account, "/args/0");
    assert_eq!(script, health_only, "one script, driven by its environment");
    assert!(script.contains("grant_type=client_credentials"), "{script}");
    assert!(script.contains("chataigne_organizations_list"), "{script}");
    // The gateway's NetworkPolicy admits it to the internal port only.
    let np = report.find("NetworkPolicy", "chataigne-gateway");
    let from_test: Vec<&Value> = np["spec"]["ingress"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|rule| {
            rule["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "test"
        })
        .collect();
    assert_eq!(from_test.len(), 1, "{np:#}");
    assert_eq!(
        from_test[0]["ports"],
        serde_json::json!([{"protocol": "TCP", "port": 9090}])
    );

    // A digest pins the test image; tests.enabled=false renders neither.
    let digest = format!("sha256:{}", "a".repeat(64));
    let pinned = format!(r#"tests.image.digest="{digest}""#);
    let report = check(&python, &[TEST_VALUES], &[&pinned]);
    report.assert_valid("pinned test image");
    assert_eq!(
        report.find("Pod", "chataigne-test-smoke")["spec"]["containers"][0]["image"],
        format!("docker.io/curlimages/curl@{digest}").as_str()
    );
    let off = check(&python, &[TEST_VALUES], &["tests.enabled=false"]);
    off.assert_valid("no test Pod");
    assert!(off.all("Pod").is_empty());
    let np = off.find("NetworkPolicy", "chataigne-gateway");
    assert!(
        !serde_json::to_string(np).unwrap().contains("\"test\""),
        "{np:#}"
    );

    // The script itself, against a running stack: it passes, and it names
    // what is wrong once the tool-service is down.
    if Command::new("curl").arg("--version").output().is_err() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "curl is needed to run the smoke script"
        );
        eprintln!("skipping the smoke script: no curl");
        return;
    }
    let script = str_at(container, "/args/0").to_owned();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let sandbox = chataigne_tests::Sandbox::start(chataigne_tests::Backend::Sqlite)
            .await
            .expect("sandbox");
        let url = sandbox.gateway_internal_url.clone();
        let (ok, output) = tokio::task::spawn_blocking({
            let (script, url) = (script.clone(), url.clone());
            move || run_smoke(&script, &url, &[])
        })
        .await
        .unwrap();
        assert!(ok, "{output}");
        assert!(output.contains("smoke test passed"), "{output}");
        assert!(output.contains("no service account configured"), "{output}");
        // With a service account of the running stack: the tool is called.
        let (client_id, secret) = sandbox
            .service_account(
                "smoke",
                "businessOrganization.read",
                chataigne_tests::demo::ORG_BISTRO,
                "manager",
            )
            .await;
        let account = vec![
            (
                "SMOKE_ISSUER".to_owned(),
                sandbox.stack.auth_http_url.clone(),
            ),
            (
                "SMOKE_TOOL_SERVICE_GRPC".to_owned(),
                sandbox.tools_grpc_url.clone(),
            ),
            ("SMOKE_CLIENT_ID".to_owned(), client_id),
            ("SMOKE_CLIENT_SECRET".to_owned(), secret.clone()),
        ];
        let (ok, output) = tokio::task::spawn_blocking({
            let (script, url, account) = (script.clone(), url.clone(), account.clone());
            move || run_smoke(&script, &url, &account)
        })
        .await
        .unwrap();
        assert!(ok, "{output}");
        assert!(
            output.contains("called chataigne_organizations_list"),
            "{output}"
        );
        assert!(!output.contains(&secret), "the secret is never printed");
        // A wrong secret: no token, said so.
        let mut wrong = account.clone();
        wrong[3].1 = "not-the-secret".to_owned();
        let (ok, output) = tokio::task::spawn_blocking({
            let (script, url) = (script.clone(), url.clone());
            move || run_smoke(&script, &url, &wrong)
        })
        .await
        .unwrap();
        assert!(!ok, "{output}");
        assert!(
            output.contains("no token for the service account"),
            "{output}"
        );
        sandbox.stop_tool_service().await.expect("stopped");
        let (ok, output) = tokio::task::spawn_blocking(move || run_smoke(&script, &url, &[]))
            .await
            .unwrap();
        assert!(!ok, "{output}");
        assert!(output.contains("/readyz"), "{output}");
        sandbox.shutdown().await;
    });
}

/// The rendered file of `component` written to a fresh directory, and its
/// secret-backed variables (see [`rendered_config!`]).
fn rendered_file(report: &Report, component: &str) -> (PathBuf, Vec<(String, String)>) {
    let config = report.find("ConfigMap", "chataigne-config");
    let dir = std::env::temp_dir().join(format!("chataigne-chart-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let name = format!("{component}.toml");
    let path = dir.join(&name);
    std::fs::write(&path, config["data"][&name].as_str().unwrap()).unwrap();
    (path, secret_env(report, &format!("chataigne-{component}")))
}

/// A service's typed configuration as it loads the file the chart rendered
/// for it (and its secret-backed variables).
macro_rules! rendered_config {
    ($report:expr, $config:ty, $component:expr) => {{
        let (path, env) = rendered_file($report, $component);
        let loaded: $config =
            chataigne_common::config::load_from_env(&<$config>::default(), Some(&path), env)
                .unwrap_or_else(|error| panic!("{} reads its file: {error}", $component));
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
        loaded
    }};
}

/// The Secret behind a Deployment's `internal-tls` volume and where its
/// container mounts it; `None` without one.
fn internal_tls_volume(report: &Report, deployment: &str) -> Option<(String, String)> {
    let spec = &report.find("Deployment", deployment)["spec"]["template"]["spec"];
    let volume = spec["volumes"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == "internal-tls")?;
    let mount = spec["containers"][0]["volumeMounts"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == "internal-tls")
        .expect("the internal-tls volume is mounted");
    assert!(
        mount.get("subPath").is_none(),
        "a subPath mount never sees a renewed Secret"
    );
    let items: Vec<&str> = volume["secret"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["key"].as_str().unwrap())
        .collect();
    assert_eq!(items, ["tls.crt", "tls.key", "ca.crt"]);
    Some((
        str_at(volume, "/secret/secretName").to_owned(),
        str_at(mount, "/mountPath").to_owned(),
    ))
}

fn host_of(url: &str) -> String {
    url.parse::<http::Uri>()
        .expect("a URL")
        .host()
        .expect("a host")
        .to_owned()
}

#[test]
fn internal_tls_is_wired_from_cert_manager_or_existing_secrets() {
    let Some(python) = python() else { return };
    const DIR: &str = "/etc/chataigne/internal-tls";
    let with_cert_manager = r#"internalTls={"enabled":true,"oauthHttp":true,"certManager":{"enabled":true,"issuerRef":{"name":"internal-ca","kind":"ClusterIssuer"}}}"#;
    let report = check(&python, &[TEST_VALUES], &[with_cert_manager]);
    report.assert_valid("internal TLS with cert-manager");

    // One Certificate per component, into the Secret that component mounts,
    // serving and identifying, naming the host every caller dials.
    let gateway = rendered_config!(&report, chataigne_gateway::Config, "gateway");
    let auth = rendered_config!(&report, chataigne_auth::Config, "auth-service");
    let tools = rendered_config!(&report, chataigne_tools::Config, "tool-service");
    let dialled = [
        ("auth-service", host_of(&gateway.auth_service_url)),
        ("tool-service", host_of(&gateway.tool_service_url)),
        ("auth-service", host_of(&tools.auth_service_url)),
    ];
    assert_eq!(report.all("Certificate").len(), 3);
    for component in ["gateway", "auth-service", "tool-service"] {
        let deployment = format!("chataigne-{component}");
        let certificate = report.find("Certificate", &format!("{deployment}-internal-tls"));
        let (secret, mount) = internal_tls_volume(&report, &deployment).expect("mounted");
        assert_eq!(secret, format!("{deployment}-internal-tls"));
        assert_eq!(str_at(certificate, "/spec/secretName"), secret);
        assert_eq!(mount, DIR);
        assert_eq!(str_at(certificate, "/spec/issuerRef/name"), "internal-ca");
        assert_eq!(str_at(certificate, "/spec/issuerRef/kind"), "ClusterIssuer");
        let usages = &certificate["spec"]["usages"];
        for usage in ["server auth", "client auth"] {
            assert!(
                usages.as_array().unwrap().iter().any(|u| u == usage),
                "{usages}"
            );
        }
        let names = &certificate["spec"]["dnsNames"];
        for (_, host) in dialled.iter().filter(|(c, _)| *c == component) {
            assert!(
                names.as_array().unwrap().iter().any(|n| n == host.as_str()),
                "{component}'s certificate names {host}: {names}"
            );
        }
        let pod = &report.find("Deployment", &deployment)["spec"]["template"];
        assert_eq!(
            pod["metadata"]["annotations"]["checksum/internal-tls-secret-name"]
                .as_str()
                .map(str::len),
            Some(64)
        );
        if component != "gateway" {
            // kubelet's gRPC probes speak no TLS: TCP to the gRPC port.
            let container = &pod["spec"]["containers"][0];
            for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
                assert_eq!(container[probe]["tcpSocket"]["port"], "grpc", "{probe}");
                assert!(container[probe].get("grpc").is_none());
            }
        }
    }

    // Each service reads the mounted files through its typed configuration.
    let client = Some(chataigne_common::tls::ClientTls {
        ca_file: format!("{DIR}/ca.crt"),
        cert_file: Some(format!("{DIR}/tls.crt")),
        key_file: Some(format!("{DIR}/tls.key")),
        server_name: None,
    });
    let mutual = Some(chataigne_common::tls::ServerTls {
        cert_file: format!("{DIR}/tls.crt"),
        key_file: format!("{DIR}/tls.key"),
        client_ca_file: Some(format!("{DIR}/ca.crt")),
    });
    assert_eq!(gateway.backend_tls, client);
    assert_eq!(tools.auth_service_tls, client);
    assert_eq!(tools.tls, mutual);
    assert_eq!(auth.grpc_tls, mutual);
    // `/token` callers authenticate as OAuth clients: no client certificate.
    assert_eq!(
        auth.http_tls,
        mutual.clone().map(|tls| chataigne_common::tls::ServerTls {
            client_ca_file: None,
            ..tls
        })
    );
    gateway.validate().expect("gateway configuration");
    auth.validate().expect("auth-service configuration");
    tools.validate().expect("tool-service configuration");
    for service in ["chataigne-auth-service", "chataigne-tool-service"] {
        for name in [service.to_owned(), format!("{service}-headless")] {
            let ports = &report.find("Service", &name)["spec"]["ports"];
            let grpc = ports
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == "grpc")
                .unwrap();
            assert_eq!(grpc["appProtocol"], "https", "{name}");
        }
    }
    let oauth = report.find("Service", "chataigne-auth-service")["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "oauth-http")
        .unwrap()
        .clone();
    assert_eq!(oauth["appProtocol"], "https");
    // The in-cluster route to /token: labelled internal namespaces reach the
    // OAuth port, never the auth-service's gRPC port.
    assert_oauth_port_open_to_the_ingress_controller_only(&report);

    // Existing Secrets, plain OAuth HTTP, no mTLS, a server name override:
    // no Certificate, the named Secrets mounted.
    let existing = r#"internalTls={"enabled":true,"mutual":false,"serverName":"chataigne.internal","secrets":{"gateway":"gw-tls","authService":"auth-tls","toolService":"tools-tls"}}"#;
    let report = check(&python, &[TEST_VALUES], &[existing]);
    report.assert_valid("internal TLS from existing Secrets");
    assert!(report.all("Certificate").is_empty());
    for (deployment, secret) in [
        ("chataigne-gateway", "gw-tls"),
        ("chataigne-auth-service", "auth-tls"),
        ("chataigne-tool-service", "tools-tls"),
    ] {
        let (name, _) = internal_tls_volume(&report, deployment).expect("mounted");
        assert_eq!(name, secret);
    }
    let auth = rendered_config!(&report, chataigne_auth::Config, "auth-service");
    assert_eq!(auth.grpc_tls.and_then(|t| t.client_ca_file), None);
    assert_eq!(auth.http_tls, None);
    let gateway = rendered_config!(&report, chataigne_gateway::Config, "gateway");
    assert_eq!(
        gateway.backend_tls.and_then(|t| t.server_name).as_deref(),
        Some("chataigne.internal")
    );

    // Off (the default): plaintext, gRPC probes, nothing mounted; and the
    // token route can be closed.
    let closed = r#"networkPolicy.internalCallers.tokenEndpoint=false"#;
    let report = check(&python, &[TEST_VALUES], &[closed]);
    report.assert_valid("internal TLS off, no token route");
    assert!(internal_tls_volume(&report, "chataigne-tool-service").is_none());
    let container = &report.find("Deployment", "chataigne-tool-service")["spec"]["template"]["spec"]
        ["containers"][0];
    assert!(container["readinessProbe"]["grpc"]["port"].is_u64());
    let gateway = rendered_config!(&report, chataigne_gateway::Config, "gateway");
    assert_eq!(gateway.backend_tls, None);
    let auth = report.find("NetworkPolicy", "chataigne-auth-service");
    assert_eq!(rules_admitting(auth, 8081).len(), 1, "{auth:#}");

    // cert-manager without an issuer, or without internal TLS, says why.
    let no_issuer = r#"internalTls={"enabled":true,"certManager":{"enabled":true}}"#;
    let report = check(&python, &[TEST_VALUES], &[no_issuer]);
    assert_fails(&report, "render", "internalTls.certManager.issuerRef.name");
    let not_enabled = r#"internalTls={"enabled":false,"oauthHttp":true}"#;
    let report = check(&python, &[TEST_VALUES], &[not_enabled]);
    assert_fails(&report, "render", "need internalTls.enabled");
}
