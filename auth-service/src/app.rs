//! The auth-service application: built from configuration (database,
//! migrations, signing keys, optional demo seed), then served on a gRPC and
//! an HTTP listener until a shutdown future resolves. Cheap to clone.

use std::future::Future;
use std::sync::Arc;

use anyhow::Context;
use futures::FutureExt;
use tokio::net::TcpListener;

use crate::config::Config;
use crate::core::Core;
use crate::error::AuthError;
use crate::key_encryption::KeyProtection;
use crate::metrics::{AuthMetrics, Scrape};
use crate::model::{Access, Authenticated, Principal};
use crate::oauth::OAuthServer;
use crate::tokens::Tokens;
use crate::{grpc, http, keys, seed, store};

/// The listeners the service serves on, bound by the caller.
pub struct Listeners {
    pub grpc: TcpListener,
    pub http: TcpListener,
    /// Prometheus `/metrics` (internal), when metrics are enabled.
    pub metrics: Option<TcpListener>,
}

/// A built auth-service: serve it, or drive its management API.
#[derive(Clone)]
pub struct AuthApp {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    core: Arc<Core>,
    http: http::Shared,
    metrics: Arc<AuthMetrics>,
}

impl AuthApp {
    /// Validates `config`, connects to the database named by its URL scheme,
    /// applies migrations, seeds the demo set if asked, and loads (or creates)
    /// the signing key.
    pub async fn build(config: Config) -> anyhow::Result<AuthApp> {
        config.validate()?;
        config.validate_tls()?;
        let database = format!(
            "database {}",
            chataigne_common::startup::redacted_url(config.database.url())
        );
        // Connection and migrations, retried while the database comes up.
        let store = chataigne_common::startup::retry(&database, &config.startup, || {
            store::connect(&config.database)
        })
        .await?;
        if config.seed_demo {
            seed::seed_demo(&*store)
                .await
                .map_err(|e| anyhow::anyhow!("seeding the demo data: {e}"))?;
            seed::seed_demo_passwords(&*store)
                .await
                .map_err(|e| anyhow::anyhow!("seeding the demo passwords: {e}"))?;
        }
        if config.allow_insecure_development {
            chataigne_common::production::warn_insecure_development("auth-service");
        }
        let key_protection = KeyProtection::from_secret(config.keys.encryption_key.as_ref())?;
        let keys = keys::load_or_generate(&*store, &key_protection).await?;
        let issuer = config.resolved_issuer();
        if config.issuer.is_empty() {
            tracing::warn!(%issuer, "issuer not configured; derived from the HTTP listen address");
        }
        if config.oauth.allowed_resources.is_empty() {
            tracing::warn!(
                "oauth.allowed_resources is empty: every authorization request is refused"
            );
        }
        if !config.oauth.auto_approve_user_for_tests.is_empty() {
            tracing::warn!(
                "oauth.auto_approve_user_for_tests is set: authorization requests are approved without sign-in"
            );
        }
        let core = Arc::new(Core::new(
            store,
            Tokens::new(keys, issuer),
            key_protection,
            config.assertion_ttl_secs,
            config.oauth.service_audience.clone(),
        ));
        let oauth = OAuthServer::new(
            core.clone(),
            config.oauth.clone(),
            config.access_token_ttl_secs,
            config.session_ttl_secs,
        );
        // Device cookies are signed under a key derived from the
        // key-encryption key: the same on every replica.
        let keks = config
            .keys
            .encryption_key
            .as_ref()
            .map(crate::key_encryption::parse_keks)
            .transpose()?
            .unwrap_or_default();
        let device_secrets: Vec<&[u8]> = keks.iter().map(|kek| kek.as_slice()).collect();
        let http = Arc::new(http::HttpState::new(oauth, &device_secrets)?);
        let metrics = Arc::new(AuthMetrics::new()?);
        Ok(AuthApp {
            inner: Arc::new(Inner {
                config,
                core,
                http,
                metrics,
            }),
        })
    }

    /// Serves the gRPC AuthService, the HTTP endpoints and (when given its
    /// listener) `/metrics` until `shutdown` resolves; in-flight requests
    /// finish first.
    pub async fn serve(
        self,
        listeners: Listeners,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        self.inner.http.limits.verify_store_at_start().await?;
        let shutdown = shutdown.shared();
        let grpc_addr = listeners.grpc.local_addr()?;
        let http_addr = listeners.http.local_addr()?;
        tracing::info!(grpc = %grpc_addr, http = %http_addr, issuer = %self.issuer(), "auth-service serving");
        let metrics = self.inner.metrics.clone();
        let config = &self.inner.config;
        // TLS when configured, certificates re-read when their files change.
        let grpc_tls = config.grpc_tls.as_ref().map(|t| t.acceptor()).transpose()?;
        let http_tls = config
            .http_tls
            .as_ref()
            .map(|t| t.http_acceptor())
            .transpose()?;
        let grpc = grpc::serve(
            self.inner.core.clone(),
            grpc::GatewayCredential::new(config.gateway_credential.clone()),
            metrics.clone(),
            &config.grpc_server,
            chataigne_common::grpc_server::GrpcListener {
                tcp: listeners.grpc,
                tls: grpc_tls,
            },
            shutdown.clone(),
        );
        let hsts = chataigne_common::hardening::Hsts {
            include_subdomains: config.http.hsts_include_subdomains,
        }
        .header(config.http_tls.is_some(), &config.resolved_issuer());
        let router = http::stack::public(
            http::router(self.inner.http.clone()),
            &config.http,
            metrics.clone(),
            hsts,
        );
        let connections = config.http.connections.clone();
        let proxies: Vec<ipnet::IpNet> = config
            .oauth
            .rate_limits
            .trusted_proxies
            .iter()
            .copied()
            .map(chataigne_common::http_server::canonical_net)
            .collect();
        let observed = metrics.clone();
        let scrape = Arc::new(Scrape {
            metrics,
            core: self.inner.core.clone(),
        });
        let metrics_shutdown = shutdown.clone();
        let exposition = async move {
            match listeners.metrics {
                Some(listener) => {
                    chataigne_common::metrics::serve(listener, scrape, metrics_shutdown)
                        .await
                        .context("metrics server")
                }
                None => Ok(()),
            }
        };
        let pruning = http::spawn_limit_pruning(self.inner.http.clone());
        let state = self.inner.http.clone();
        let cleanup = tokio::spawn(async move { state.oauth.clean_up_periodically().await });
        let reload_every = std::time::Duration::from_secs(self.inner.config.key_reload_secs);
        let core = self.inner.core.clone();
        let reloader = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(reload_every);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                if let Err(error) = core.reload_keys().await {
                    tracing::warn!(%error, "periodic signing key reload failed");
                }
            }
        });
        let http = async move {
            // Connection discipline at accept; every request carries the
            // socket peer (`ConnectInfo<SocketAddr>`), which feeds the
            // sign-in and token endpoint limits. Trusted proxies are held to
            // the total connection cap only.
            let direct = chataigne_common::http_server::Direct::new(move |ip| {
                proxies.iter().any(|net| net.contains(&ip))
            });
            // Then the TLS handshake, when `http_tls` is set.
            let admission = chataigne_common::tls::TlsAdmission::new(direct, http_tls);
            let observer: chataigne_common::http_server::Observer =
                Arc::new(move |reason| observed.connection_closed(reason));
            chataigne_common::http_server::serve(
                listeners.http,
                connections,
                admission,
                router,
                observer,
                shutdown,
            )
            .await
            .context("HTTP server")
        };
        let served = tokio::try_join!(grpc, http, exposition);
        reloader.abort();
        pruning.abort();
        cleanup.abort();
        served?;
        tracing::info!("auth-service stopped");
        Ok(())
    }

    /// The issuer URL written into every token.
    pub fn issuer(&self) -> &str {
        self.inner.core.tokens().issuer()
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The published JWK Set.
    pub fn jwks(&self) -> serde_json::Value {
        self.inner.core.tokens().keys().jwks().clone()
    }

    /// In-process `Authenticate` (same checks as the gRPC call, the
    /// assertion's lifetime bounded by `assertion_ttl_secs` alone).
    pub async fn authenticate(
        &self,
        access_token: &str,
        resource: &str,
    ) -> Result<Authenticated, AuthError> {
        self.inner
            .core
            .authenticate(access_token, resource, None)
            .await
    }

    /// In-process `Authorize` (same checks as the gRPC call).
    pub async fn authorize(
        &self,
        assertion: &str,
        permission: &str,
        organization_id: &str,
        location_id: Option<&str>,
    ) -> Result<Principal, AuthError> {
        self.inner
            .core
            .authorize(assertion, permission, organization_id, location_id)
            .await
    }

    /// In-process `ResolveAccess` (same checks as the gRPC call).
    pub async fn resolve_access(
        &self,
        assertion: &str,
        permission: &str,
    ) -> Result<Access, AuthError> {
        self.inner.core.resolve_access(assertion, permission).await
    }

    /// Deletes expired and long-revoked codes, refresh tokens, browser
    /// sessions and sessions now (the periodic cleanup's work, in batches).
    pub async fn purge_expired(&self) -> Result<crate::Purged, AuthError> {
        self.inner.http.oauth.purge_expired().await
    }

    pub(crate) fn core(&self) -> &Core {
        &self.inner.core
    }
}

/// Builds the service from `config` and serves it until `shutdown` resolves.
pub async fn run(
    config: Config,
    listeners: Listeners,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    AuthApp::build(config)
        .await?
        .serve(listeners, shutdown)
        .await
}
