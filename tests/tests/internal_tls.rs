//! TLS on every internal hop, with generated certificates: the three real
//! services with mTLS on both gRPC backends (gateway → auth-service and
//! tool-service, tool-service → auth-service) serve an MCP tool call end to
//! end; a plaintext client, and a client without a certificate, are refused;
//! a certificate replaced on disk is presented to new connections without a
//! restart; an internal caller gets a service token from the auth-service's
//! `/token` over TLS and calls the tool-service with it; a certificate
//! without its key, or an unreadable file, stops the start naming them.

use std::net::SocketAddr;
use std::time::Duration;

use chataigne::StackConfig;
use chataigne_common::balance::{self, Balanced};
use chataigne_common::testing::eventually;
use chataigne_common::tls::{ClientTls, ServerTls};
use chataigne_proto::tools::v1::{ListOrdersRequest, Page, restaurant_client::RestaurantClient};
use chataigne_tests::certs::{Authority, Leaf};
use chataigne_tests::{Backend, Sandbox, TempDir, demo};
use serde_json::{Value, json};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

/// The certificates of one test: a CA bundle, a server leaf per backend and
/// a client leaf (used by the gateway and the tool-service alike).
struct Pki {
    dir: TempDir,
    ca: Authority,
    /// The CA bundle every client trusts (one CA, or several while rotating).
    ca_file: String,
    auth: Leaf,
    tools: Leaf,
    client: Leaf,
}

/// Server certificates name the loopback address the sandbox's URLs use and
/// an in-cluster style DNS name.
fn pki(bundle: &[&Authority]) -> Pki {
    let dir = TempDir::new("internal-tls");
    let ca = Authority::new("chataigne internal CA");
    let mut pem: String = ca.pem.clone();
    for extra in bundle {
        pem.push_str(&extra.pem);
    }
    let ca_file = dir.0.join("ca.pem");
    std::fs::write(&ca_file, pem).expect("bundle written");
    let auth = ca.leaf(&dir.0, "auth", &["127.0.0.1", "auth-service.internal"]);
    let tools = ca.leaf(&dir.0, "tools", &["127.0.0.1", "tool-service.internal"]);
    let client = ca.leaf(&dir.0, "client", &["gateway.internal"]);
    Pki {
        ca_file: ca_file.display().to_string(),
        dir,
        ca,
        auth,
        tools,
        client,
    }
}

impl Pki {
    fn server(&self, leaf: &Leaf, mutual: bool) -> ServerTls {
        ServerTls {
            cert_file: leaf.cert_file.clone(),
            key_file: leaf.key_file.clone(),
            client_ca_file: mutual.then(|| self.ca_file.clone()),
        }
    }

    /// A client trusting the bundle, with the client certificate.
    fn identified(&self) -> ClientTls {
        ClientTls {
            cert_file: Some(self.client.cert_file.clone()),
            key_file: Some(self.client.key_file.clone()),
            ..self.anonymous()
        }
    }

    /// A client trusting the bundle, without a certificate.
    fn anonymous(&self) -> ClientTls {
        ClientTls {
            ca_file: self.ca_file.clone(),
            ..ClientTls::default()
        }
    }

    /// mTLS on both gRPC backends, TLS on the OAuth HTTP listener.
    fn apply(&self, config: &mut StackConfig) {
        config.auth.grpc_tls = Some(self.server(&self.auth, true));
        config.auth.http_tls = Some(self.server(&self.auth, false));
        config.tools.tls = Some(self.server(&self.tools, true));
        config.tools.auth_service_tls = Some(self.identified());
        config.gateway.backend_tls = Some(self.identified());
    }
}

async fn sandbox(pki: &Pki) -> Sandbox {
    Sandbox::start_with(Backend::Sqlite, |config| pki.apply(config))
        .await
        .expect("SQLite sandbox")
}

fn address(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .parse()
        .expect("a loopback address")
}

/// A channel to the backend at `url`: TLS with `tls`, plaintext without.
fn channel(url: &str, tls: Option<&ClientTls>) -> Balanced {
    let options = balance::Options {
        connect_timeout: Duration::from_secs(2),
        tls: tls.map(|tls| tls.connector_for(url).expect("connector")),
        ..balance::Options::default()
    };
    Balanced::fixed(url, vec![address(url)], options).expect("channel")
}

/// Whether the backend's health check answers over `tls` (or plaintext).
async fn answers(url: &str, tls: Option<&ClientTls>) -> bool {
    HealthClient::new(channel(url, tls))
        .check(HealthCheckRequest::default())
        .await
        .is_ok()
}

/// The DER of the leaf certificate the server at `url` presents to a new
/// connection.
async fn presented(url: &str, tls: &ClientTls) -> Option<Vec<u8>> {
    let connector = tls.connector_for(url).ok()?;
    let stream = connector.connect(address(url)).await.ok()?;
    let (_, session) = stream.get_ref();
    session
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|leaf| leaf.as_ref().to_vec())
}

fn https(url: &str) -> String {
    url.replacen("http://", "https://", 1)
}

fn organizations(result: &Value) -> Vec<String> {
    assert_ne!(result["isError"], true, "tool call failed: {result}");
    result["structuredContent"]["data"]["organizations"]
        .as_array()
        .unwrap_or_else(|| panic!("no organizations: {result}"))
        .iter()
        .filter_map(|o| o["id"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn an_mcp_tool_call_crosses_every_internal_hop_over_mutual_tls() {
    let pki = pki(&[]);
    let sandbox = sandbox(&pki).await;
    // Gateway → auth-service (Authenticate), gateway → tool-service, and
    // tool-service → auth-service (Authorize), each over mTLS.
    let manager = sandbox.token(demo::USER_MANAGER).await;
    let result = sandbox
        .call_tool(&manager, "chataigne_organizations_list", json!({}))
        .await;
    assert_eq!(organizations(&result), vec![demo::ORG_BISTRO.to_owned()]);
    let orders = sandbox
        .call_tool(
            &manager,
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 1}),
        )
        .await;
    assert_ne!(orders["isError"], true, "orders over TLS: {orders}");
    sandbox.shutdown().await;
}

#[tokio::test]
async fn plaintext_clients_and_clients_without_a_certificate_are_refused() {
    let pki = pki(&[]);
    let sandbox = sandbox(&pki).await;
    for url in [&sandbox.tools_grpc_url, &sandbox.auth_grpc_url] {
        assert!(
            !answers(url, None).await,
            "{url}: a plaintext (h2c) client is refused"
        );
        assert!(
            !answers(url, Some(&pki.anonymous())).await,
            "{url}: mTLS required, a client without a certificate is refused"
        );
        let stranger = Authority::new("another CA");
        let foreign = stranger.leaf(&pki.dir.0, "foreign", &["gateway.internal"]);
        let signed_elsewhere = ClientTls {
            cert_file: Some(foreign.cert_file),
            key_file: Some(foreign.key_file),
            ..pki.anonymous()
        };
        assert!(
            !answers(url, Some(&signed_elsewhere)).await,
            "{url}: a client certificate of another CA is refused"
        );
        assert!(
            answers(url, Some(&pki.identified())).await,
            "{url}: a client with a certificate of the CA is served"
        );
    }
    // The OAuth HTTP listener serves TLS only, too.
    let plain = reqwest::Client::new()
        .get(format!(
            "{}{}",
            sandbox.auth_http_url,
            chataigne_auth::JWKS_PATH
        ))
        .send()
        .await;
    assert!(
        plain.is_err() || plain.is_ok_and(|r| !r.status().is_success()),
        "plain HTTP to the TLS listener is not served"
    );
    sandbox.shutdown().await;
}

#[tokio::test]
async fn a_certificate_replaced_on_disk_is_presented_to_new_connections_without_restart() {
    // The clients trust the current and the next CA (a rotation bundle).
    let next = Authority::new("next internal CA");
    let pki = pki(&[&next]);
    let sandbox = sandbox(&pki).await;
    let url = sandbox.tools_grpc_url.clone();
    let client = pki.identified();
    assert_eq!(presented(&url, &client).await, Some(pki.tools.der.clone()));

    // Renewal: the Secret's files are replaced in place.
    let renewed = next.leaf(&pki.dir.0, "tools", &["127.0.0.1", "tool-service.internal"]);
    assert_ne!(renewed.der, pki.tools.der);
    // Files are looked at again every few seconds; generous bound.
    eventually(
        "the renewed certificate is presented",
        Duration::from_secs(30),
        || async { presented(&url, &client).await == Some(renewed.der.clone()) },
    )
    .await;
    // The same process still serves tool calls end to end.
    let manager = sandbox.token(demo::USER_MANAGER).await;
    let result = sandbox
        .call_tool(&manager, "chataigne_organizations_list", json!({}))
        .await;
    assert_eq!(organizations(&result), vec![demo::ORG_BISTRO.to_owned()]);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn an_internal_caller_gets_a_service_token_over_tls_and_calls_the_tool_service() {
    let pki = pki(&[]);
    let sandbox = sandbox(&pki).await;
    let (client_id, secret) = sandbox
        .service_account(
            "bistro-reporting",
            "orders.read location.read",
            demo::ORG_BISTRO,
            "analyst",
        )
        .await;
    // The in-cluster route: straight to the auth-service's `/token`, over
    // TLS verified with the internal CA.
    let ca = reqwest::Certificate::from_pem(pki.ca.pem.as_bytes()).expect("CA");
    let http = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(ca)
        .build()
        .expect("HTTPS client");
    let response = http
        .post(format!("{}/token", https(&sandbox.auth_http_url)))
        .basic_auth(&client_id, Some(&secret))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .expect("token endpoint reachable over TLS");
    assert_eq!(response.status(), 200);
    // A listener serving TLS itself sends HSTS, whatever its issuer.
    assert_eq!(
        response.headers()["strict-transport-security"],
        "max-age=31536000"
    );
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body: Value = response.json().await.expect("token response");
    let token = body["access_token"].as_str().expect("access token");

    let mut restaurant =
        RestaurantClient::new(channel(&sandbox.tools_grpc_url, Some(&pki.identified())));
    let mut request = tonic::Request::new(ListOrdersRequest {
        location_id: demo::LOC_PARIS.to_owned(),
        page: Some(Page {
            limit: 3,
            cursor: String::new(),
        }),
        ..ListOrdersRequest::default()
    });
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("ascii"),
    );
    let orders = restaurant
        .list_orders(request)
        .await
        .expect("orders with the service token, over mTLS")
        .into_inner()
        .orders;
    assert!(!orders.is_empty());
    assert!(orders.iter().all(|o| o.location_id == demo::LOC_PARIS));
    sandbox.shutdown().await;
}

#[tokio::test]
async fn a_certificate_without_its_key_or_an_unreadable_file_stops_the_start() {
    let pki = pki(&[]);
    // Without the key, from the environment alone: the key is named.
    let env = [(
        "CHATAIGNE_TLS__CERT_FILE".to_owned(),
        pki.tools.cert_file.clone(),
    )];
    let refused =
        chataigne_common::config::load_from_env(&chataigne_tools::Config::default(), None, env)
            .expect_err("a certificate without its key");
    assert!(refused.to_string().contains("key_file"), "{refused}");
    let mut gateway = chataigne_gateway::Config {
        backend_tls: Some(ClientTls {
            cert_file: Some(pki.client.cert_file.clone()),
            ..pki.anonymous()
        }),
        ..chataigne_gateway::Config::default()
    };
    let refused = gateway.validate().expect_err("client certificate, no key");
    assert!(
        refused.to_string().contains("backend_tls.key_file"),
        "{refused}"
    );
    gateway.backend_tls = Some(pki.identified());
    gateway.validate().expect("a complete client configuration");

    // An unreadable file stops the whole stack's start, naming the path.
    let missing = pki.dir.0.join("absent.key");
    let dir = TempDir::new("internal-tls-start");
    let mut config = StackConfig::embedded(&dir.0);
    pki.apply(&mut config);
    config.tools.tls = Some(ServerTls {
        key_file: missing.display().to_string(),
        ..pki.server(&pki.tools, true)
    });
    let Err(error) = chataigne::start(config).await else {
        panic!("the stack started with an unreadable key file");
    };
    let message = format!("{error:#}");
    assert!(message.contains("tls.key_file"), "{message}");
    assert!(
        message.contains(&missing.display().to_string()),
        "{message}"
    );
}
