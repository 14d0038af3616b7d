//! Test harness: starts an [`AuthApp`] on a fresh database of either backend
//! with the demo seed, serves it on port 0, and offers a gRPC client plus
//! helpers to issue, inspect and forge tokens.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chataigne_auth::{AuthApp, Config, IssueTokenRequest, Listeners};
use chataigne_common::ErrorCode;
use chataigne_common::codes::{DecodedStatus, decode_status};
use chataigne_common::demo::DEMO_CLIENT_ID;
use chataigne_proto::auth::v1 as pb;
use chataigne_proto::auth::v1::auth_service_client::AuthServiceClient;
use secrecy::SecretString;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::Channel;

/// The protected resource tokens are issued for.
pub const RESOURCE: &str = "https://mcp.chataigne.test/mcp/v1";

/// The credential the harness's client presents to `Authenticate`, as the
/// gateway does.
pub const GATEWAY_CREDENTIAL: &str = "the gateway credential of the auth-service tests";

/// `Authenticate`'s request presenting `credential` (none when `None`) as the
/// gateway's.
pub fn authenticate_request(
    token: &str,
    resource: &str,
    credential: Option<&str>,
) -> tonic::Request<pb::AuthenticateRequest> {
    let mut request = tonic::Request::new(pb::AuthenticateRequest {
        access_token: token.to_owned(),
        resource: resource.to_owned(),
        valid_for_ms: 0,
    });
    if let Some(credential) = credential {
        request.metadata_mut().insert(
            chataigne_common::assertion::AssertionContract::CALLER_METADATA,
            credential.parse().expect("ascii"),
        );
    }
    request
}

/// The key-encryption key of every harness (base64 of 32 bytes).
pub const TEST_KEK: &str = "Y2hhdGFpZ25lIHRlc3Qga2V5LWVuY3J5cHRpb24gayE=";

#[derive(Debug, Clone, Copy)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A database URL for `backend`, or `None` when Postgres is unreachable outside CI.
pub async fn database_url(backend: Backend) -> Option<String> {
    match backend {
        Backend::Sqlite => {
            let path = std::env::temp_dir().join(format!(
                "chataigne-auth-test-{}.db",
                uuid::Uuid::new_v4().simple()
            ));
            Some(format!("sqlite://{}?mode=rwc", path.display()))
        }
        Backend::Postgres => chataigne_common::testing::fresh_postgres_database("auth").await,
    }
}

/// A test configuration on `url`, demo data seeded.
pub fn config(url: &str) -> Config {
    let mut config = Config::default();
    config.database.url = SecretString::from(url.to_owned());
    config.issuer = "https://auth.chataigne.test".to_owned();
    config.seed_demo = true;
    // The demo data and the loopback metadata switch on PostgreSQL too.
    config.allow_insecure_development = true;
    config.oauth.allowed_resources = vec![RESOURCE.to_owned()];
    config.oauth.client_metadata_allow_http_loopback = true;
    config.keys.encryption_key = Some(SecretString::from(TEST_KEK));
    config.gateway_credential = Some(SecretString::from(GATEWAY_CREDENTIAL));
    config
}

/// Opens a stored signing key sealed under `kek` (base64), independently of
/// the service's code: `CKEK1 ‖ nonce ‖ AES-256-GCM(ciphertext ‖ tag)` with
/// the additional data `chataigne/signing-key/v1 NUL ‖ kid`. `None` when it
/// does not open.
pub fn open_sealed_key(kek: &str, kid: &str, material: &[u8]) -> Option<Vec<u8>> {
    use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
    let kek = base64::engine::general_purpose::STANDARD.decode(kek).ok()?;
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &kek).ok()?);
    let body = material.strip_prefix(b"CKEK1")?;
    let (nonce, sealed) = body.split_at_checked(NONCE_LEN)?;
    let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
    let mut aad = b"chataigne/signing-key/v1\0".to_vec();
    aad.extend_from_slice(kid.as_bytes());
    let mut buffer = sealed.to_vec();
    let plain = key.open_in_place(nonce, Aad::from(aad), &mut buffer).ok()?;
    Some(plain.to_vec())
}

/// A running auth-service with a client on it.
pub struct Harness {
    pub app: AuthApp,
    pub backend: Backend,
    pub db_url: String,
    pub http_url: String,
    pub client: AuthServiceClient<Channel>,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Backend::Sqlite = self.backend {
            let path = self
                .db_url
                .trim_start_matches("sqlite://")
                .trim_end_matches("?mode=rwc");
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{path}{suffix}"));
            }
        }
    }
}

impl Harness {
    pub async fn start(backend: Backend) -> Option<Harness> {
        Harness::start_with(backend, |_| {}).await
    }

    /// Like [`Harness::start`], with a hook to adjust the configuration.
    pub async fn start_with(backend: Backend, adjust: impl FnOnce(&mut Config)) -> Option<Harness> {
        let db_url = database_url(backend).await?;
        let mut config = config(&db_url);
        adjust(&mut config);
        let app = AuthApp::build(config).await.expect("build");
        Some(Harness::serve(app, backend, db_url).await)
    }

    /// The error with which a service on SQLite, configured by `adjust`,
    /// refuses to serve.
    pub async fn refusal(adjust: impl FnOnce(&mut Config)) -> String {
        let db_url = database_url(Backend::Sqlite).await.expect("SQLite");
        let mut config = config(&db_url);
        adjust(&mut config);
        let app = AuthApp::build(config).await.expect("build");
        let listeners = Listeners {
            grpc: TcpListener::bind("127.0.0.1:0").await.unwrap(),
            http: TcpListener::bind("127.0.0.1:0").await.unwrap(),
            metrics: None,
        };
        match app.serve(listeners, std::future::ready(())).await {
            Ok(()) => panic!("the service served"),
            Err(error) => error.to_string(),
        }
    }

    /// Runs `sql` (one or more statements) on the harness's database.
    pub async fn execute(&self, sql: String) {
        let sql = sqlx::AssertSqlSafe(sql);
        match self.backend {
            Backend::Sqlite => {
                let pool = sqlx::SqlitePool::connect(&self.db_url).await.unwrap();
                sqlx::raw_sql(sql).execute(&pool).await.unwrap();
                pool.close().await;
            }
            Backend::Postgres => {
                let pool = sqlx::PgPool::connect(&self.db_url).await.unwrap();
                sqlx::raw_sql(sql).execute(&pool).await.unwrap();
                pool.close().await;
            }
        }
    }

    /// The text values of the first column of `query`, in order.
    pub async fn strings(&self, query: &str) -> Vec<String> {
        let query = sqlx::AssertSqlSafe(query.to_owned());
        match self.backend {
            Backend::Sqlite => {
                let pool = sqlx::SqlitePool::connect(&self.db_url).await.unwrap();
                let rows = sqlx::query_scalar(query).fetch_all(&pool).await.unwrap();
                pool.close().await;
                rows
            }
            Backend::Postgres => {
                let pool = sqlx::PgPool::connect(&self.db_url).await.unwrap();
                let rows = sqlx::query_scalar(query).fetch_all(&pool).await.unwrap();
                pool.close().await;
                rows
            }
        }
    }

    /// Serves an already built app on fresh loopback listeners.
    pub async fn serve(app: AuthApp, backend: Backend, db_url: String) -> Harness {
        let grpc = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let grpc_url = format!("http://{}", grpc.local_addr().unwrap());
        let http_url = format!("http://{}", http.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = app.clone();
        tokio::spawn(async move {
            serving
                .serve(
                    Listeners {
                        grpc,
                        http,
                        metrics: None,
                    },
                    async move {
                        let _ = stopped.await;
                    },
                )
                .await
                .expect("auth-service serves");
        });
        let client = AuthServiceClient::connect(grpc_url).await.unwrap();
        Harness {
            app,
            backend,
            db_url,
            http_url,
            client,
            stop: Some(stop),
        }
    }

    /// Stops serving and drops a Postgres test database (kept when a case
    /// fails, for inspection).
    pub async fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let Backend::Postgres = self.backend else {
            return;
        };
        let Some((_, name)) = self.db_url.rsplit_once('/') else {
            return;
        };
        let drop = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
        let admin = chataigne_common::testing::postgres_admin_url();
        if let Ok(pool) = sqlx::PgPool::connect(&admin).await {
            let _ = sqlx::query(sqlx::AssertSqlSafe(drop)).execute(&pool).await;
        }
    }

    /// An access token for `user_id` through the demo client, for [`RESOURCE`].
    pub async fn token(&self, user_id: &str, scopes: &[&str]) -> chataigne_auth::IssuedToken {
        self.token_for(user_id, scopes, RESOURCE).await
    }

    pub async fn token_for(
        &self,
        user_id: &str,
        scopes: &[&str],
        resource: &str,
    ) -> chataigne_auth::IssuedToken {
        self.app
            .issue_access_token(IssueTokenRequest {
                user_id: user_id.to_owned(),
                client_id: DEMO_CLIENT_ID.to_owned(),
                scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
                resource: resource.to_owned(),
                ttl: None,
            })
            .await
            .expect("issue token")
    }

    pub async fn authenticate(
        &self,
        token: &str,
        resource: &str,
    ) -> Result<pb::AuthenticateResponse, tonic::Status> {
        self.client
            .clone()
            .authenticate(authenticate_request(
                token,
                resource,
                Some(GATEWAY_CREDENTIAL),
            ))
            .await
            .map(tonic::Response::into_inner)
    }

    /// The principal assertion of a fresh token for `user_id` with `scopes`.
    pub async fn assertion(&self, user_id: &str, scopes: &[&str]) -> String {
        let token = self.token(user_id, scopes).await;
        self.authenticate(&token.access_token, RESOURCE)
            .await
            .expect("authenticate")
            .assertion
    }

    pub async fn authorize(
        &self,
        assertion: &str,
        permission: &str,
        organization_id: &str,
        location_id: Option<&str>,
    ) -> Result<pb::AuthorizeResponse, tonic::Status> {
        self.client
            .clone()
            .authorize(pb::AuthorizeRequest {
                assertion: assertion.to_owned(),
                permission: permission.to_owned(),
                organization_id: organization_id.to_owned(),
                location_id: location_id.unwrap_or_default().to_owned(),
            })
            .await
            .map(tonic::Response::into_inner)
    }

    pub async fn resolve(
        &self,
        assertion: &str,
        permission: &str,
    ) -> Result<pb::ResolveAccessResponse, tonic::Status> {
        self.client
            .clone()
            .resolve_access(pb::ResolveAccessRequest {
                assertion: assertion.to_owned(),
                permission: permission.to_owned(),
            })
            .await
            .map(tonic::Response::into_inner)
    }

    /// The oldest stored signing key (kid, PKCS#8), read straight from the
    /// database and opened with [`TEST_KEK`].
    pub async fn signing_key(&self) -> (String, Vec<u8>) {
        let stored = self.stored_signing_keys().await;
        let (kid, material) = stored.into_iter().next().expect("a signing key");
        let pkcs8 = open_sealed_key(TEST_KEK, &kid, &material).expect("sealed under TEST_KEK");
        (kid, pkcs8)
    }

    /// Every stored signing key as it is in the database (kid, stored
    /// bytes), oldest first.
    pub async fn stored_signing_keys(&self) -> Vec<(String, Vec<u8>)> {
        const SQL: &str = "SELECT kid, pkcs8 FROM signing_keys ORDER BY created_at, kid";
        match self.backend {
            Backend::Sqlite => {
                let pool = sqlx::SqlitePool::connect(&self.db_url).await.unwrap();
                sqlx::query_as(SQL).fetch_all(&pool).await.unwrap()
            }
            Backend::Postgres => {
                let pool = sqlx::PgPool::connect(&self.db_url).await.unwrap();
                sqlx::query_as(SQL).fetch_all(&pool).await.unwrap()
            }
        }
    }

    /// Overwrites a stored key's bytes (simulating rows of older releases).
    pub async fn write_signing_key_material(&self, kid: &str, material: &[u8]) {
        const SQL: &str = "UPDATE signing_keys SET pkcs8 = $2 WHERE kid = $1";
        let done = match self.backend {
            Backend::Sqlite => {
                let pool = sqlx::SqlitePool::connect(&self.db_url).await.unwrap();
                let result = sqlx::query(SQL).bind(kid).bind(material).execute(&pool);
                result.await.unwrap().rows_affected()
            }
            Backend::Postgres => {
                let pool = sqlx::PgPool::connect(&self.db_url).await.unwrap();
                let result = sqlx::query(SQL).bind(kid).bind(material).execute(&pool);
                result.await.unwrap().rows_affected()
            }
        };
        assert_eq!(done, 1, "{kid} stored");
    }
}

/// Unix seconds now.
pub fn now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

/// The decoded header and claims of a JWT, unverified.
pub fn parts(token: &str) -> (serde_json::Value, serde_json::Value) {
    let mut segments = token.split('.');
    let mut next = || {
        let bytes = URL_SAFE_NO_PAD.decode(segments.next().unwrap()).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    };
    let header = next();
    let claims = next();
    (header, claims)
}

/// Signs `claims` as ES256 with the given key, `typ` and `kid`.
pub fn forge(claims: &serde_json::Value, typ: &str, kid: &str, pkcs8: &[u8]) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.typ = Some(typ.to_owned());
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(
        &header,
        claims,
        &jsonwebtoken::EncodingKey::from_ec_der(pkcs8),
    )
    .unwrap()
}

/// Asserts `result` is `MCP_UNAUTHENTICATED` with `reason`, and that the
/// message is the generic one.
#[track_caller]
pub fn assert_unauthenticated<T: std::fmt::Debug>(result: Result<T, tonic::Status>, reason: &str) {
    let status = result.expect_err("refused");
    assert_eq!(status.code(), tonic::Code::Unauthenticated, "{status:?}");
    let decoded = decode_status(&status);
    assert_eq!(decoded.code, ErrorCode::Unauthenticated);
    assert_eq!(
        decoded.metadata,
        vec![("reason".to_owned(), reason.to_owned())],
        "{status:?}"
    );
    assert_generic_message(&status, ErrorCode::Unauthenticated);
}

/// Asserts `result` failed with `code` and the code's generic message.
#[track_caller]
pub fn assert_code<T: std::fmt::Debug>(
    result: Result<T, tonic::Status>,
    code: ErrorCode,
) -> DecodedStatus {
    let status = result.expect_err("refused");
    let decoded = decode_status(&status);
    assert_eq!(decoded.code, code, "{status:?}");
    assert_eq!(status.code(), code.grpc_code());
    decoded
}

/// The status message is the shared safe text: it says nothing of the failure detail.
#[track_caller]
pub fn assert_generic_message(status: &tonic::Status, code: ErrorCode) {
    assert_eq!(status.message(), code.default_message());
    for detail in [
        "expired",
        "audience",
        "revoked",
        "banned",
        "consent",
        "session",
        "disabled",
        "signature",
    ] {
        assert!(
            !status.message().to_lowercase().contains(detail),
            "message leaks {detail}: {}",
            status.message()
        );
    }
}
