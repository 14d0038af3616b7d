//! The Redis connection the services share their limit counters through: a
//! standalone server (one connection manager) or a Redis Cluster (the
//! cluster client, which routes each command to its key's slot and follows
//! `MOVED`/`ASK` on resharding), chosen by the `cluster` setting next to the
//! URL; `rediss://` connects over TLS in both modes. With a cluster the URL
//! names one seed node (a managed service's configuration endpoint): the
//! client discovers the others from it. Over TLS the server certificate is
//! verified against the system's and the public web roots, or only against
//! the CA of `tls_ca_file` when it is set (a private CA).
//!
//! Connections are lazy — a service starts while Redis is down — and every
//! command is bounded by a timeout. A server of the wrong mode cannot be
//! served correctly (a cluster driven as one server answers `MOVED` or
//! `CROSSSLOT`; a standalone server has no slots for the cluster client), so
//! the first server that answers is asked `INFO cluster` and compared with
//! the configuration: at start-up ([`RedisStore::verify_at_start`]) a mismatch
//! refuses to start with a message naming the setting; found later (Redis was
//! down at start) it fails every command with that message.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, FromRedisValue, ScriptInvocation};
use tokio::sync::OnceCell;

/// How a service reaches its Redis.
#[derive(Debug, Clone, Copy)]
pub struct RedisOptions<'a> {
    /// `redis://` or `rediss://` URL (of one seed node with `cluster`).
    pub url: &'a str,
    /// Whether the server is a Redis Cluster.
    pub cluster: bool,
    /// PEM CA bundle the server certificate must chain to (`rediss://`
    /// only); `None`: the system's and the public web roots.
    pub tls_ca_file: Option<&'a str>,
    /// Bound of one connection attempt.
    pub connect_timeout: Duration,
    /// Bound of one command's answer.
    pub response_timeout: Duration,
    /// The configuration section of these settings (`redis`,
    /// `oauth.rate_limits.redis`), named in every message about them.
    pub section: &'static str,
}

/// Why a command did not answer.
#[derive(Debug, thiserror::Error)]
pub enum RedisFailure {
    #[error("redis command timed out")]
    Timeout,
    /// The server's mode is not the configured one.
    #[error("{0}")]
    WrongMode(String),
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
}

/// A cheap-to-clone handle on the shared connection.
#[derive(Clone)]
pub struct RedisStore {
    connection: Connection,
    /// Plain connections to the configured node, for the mode check.
    seed: Arc<redis::Client>,
    cluster: bool,
    connect_timeout: Duration,
    response_timeout: Duration,
    /// Outer bound of one command, (re)connection included.
    command_timeout: Duration,
    section: &'static str,
    /// The outcome of the mode check, once a server has answered it.
    mode: Arc<OnceCell<Result<(), String>>>,
}

#[derive(Clone)]
enum Connection {
    Standalone(ConnectionManager),
    Cluster {
        client: Arc<ClusterClient>,
        connection: Arc<OnceCell<ClusterConnection>>,
    },
}

/// Whether `info` (the answer to `INFO cluster`) is a cluster node's.
fn is_cluster(info: &str) -> bool {
    info.lines().any(|line| line.trim() == "cluster_enabled:1")
}

impl RedisStore {
    /// Prepares the connection without connecting; an unusable URL is an
    /// error naming the setting (never the URL, which may hold a password).
    pub fn new(options: RedisOptions<'_>) -> anyhow::Result<RedisStore> {
        let section = options.section;
        let invalid = || anyhow::anyhow!("{section}.url is not a valid redis:// or rediss:// URL");
        if options.url.starts_with("rediss://") {
            // Redis's TLS takes the process's default provider.
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        }
        let certificates = match options.tls_ca_file {
            None => None,
            Some(path) => {
                anyhow::ensure!(
                    options.url.starts_with("rediss://"),
                    "{section}.tls_ca_file is set but {section}.url is not a rediss:// URL"
                );
                let pem = std::fs::read(path).map_err(|error| {
                    anyhow::anyhow!("{section}.tls_ca_file {path:?} cannot be read: {error}")
                })?;
                Some(redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem),
                })
            }
        };
        let seed = match &certificates {
            None => redis::Client::open(options.url),
            Some(certificates) => redis::Client::build_with_tls(options.url, certificates.clone()),
        }
        .map_err(|_| invalid())?;
        let connection = if options.cluster {
            let mut builder = ClusterClient::builder([options.url]);
            if let Some(certificates) = certificates {
                builder = builder.certs(certificates);
            }
            let client = builder
                .connection_timeout(options.connect_timeout)
                .response_timeout(options.response_timeout)
                .retries(1)
                .min_retry_wait(10)
                .max_retry_wait(100)
                .build()
                .map_err(|_| invalid())?;
            Connection::Cluster {
                client: Arc::new(client),
                connection: Arc::new(OnceCell::new()),
            }
        } else {
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(options.connect_timeout))
                .set_response_timeout(Some(options.response_timeout))
                .set_number_of_retries(1)
                .set_min_delay(Duration::from_millis(10))
                .set_max_delay(Duration::from_millis(100));
            Connection::Standalone(
                ConnectionManager::new_lazy_with_config(seed.clone(), config)
                    .map_err(|_| invalid())?,
            )
        };
        Ok(RedisStore {
            connection,
            seed: Arc::new(seed),
            cluster: options.cluster,
            connect_timeout: options.connect_timeout,
            response_timeout: options.response_timeout,
            command_timeout: options.connect_timeout * 2
                + options.response_timeout
                + Duration::from_millis(100),
            section,
            mode: Arc::new(OnceCell::new()),
        })
    }

    /// Whether the configuration names a cluster.
    pub fn is_cluster(&self) -> bool {
        self.cluster
    }

    /// Checks the server's mode against the configuration, when it answers
    /// now: a mismatch is an error naming the setting; an unreachable Redis
    /// is not (the service starts while Redis is down, and checks once it
    /// answers).
    pub async fn verify_at_start(&self) -> anyhow::Result<()> {
        match tokio::time::timeout(self.command_timeout, self.checked_mode()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(RedisFailure::WrongMode(message))) => Err(anyhow::anyhow!(message)),
            Ok(Err(error)) => {
                tracing::warn!(section = self.section, %error, "redis unreachable at start: its mode is checked once it answers");
                Ok(())
            }
            Err(_) => {
                tracing::warn!(
                    section = self.section,
                    "redis unreachable at start: its mode is checked once it answers"
                );
                Ok(())
            }
        }
    }

    /// The mode check, asked of the configured node once it answers.
    async fn checked_mode(&self) -> Result<(), RedisFailure> {
        let outcome = self
            .mode
            .get_or_try_init(|| async {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(self.connect_timeout))
                    .set_response_timeout(Some(self.response_timeout));
                let mut connection = self
                    .seed
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?;
                let info: String = redis::cmd("INFO")
                    .arg("cluster")
                    .query_async(&mut connection)
                    .await?;
                let section = self.section;
                Ok::<_, redis::RedisError>(match (self.cluster, is_cluster(&info)) {
                    (true, false) => Err(format!(
                        "{section}.cluster is true but the Redis at {section}.url is not a Redis Cluster: set {section}.cluster = false"
                    )),
                    (false, true) => Err(format!(
                        "the Redis at {section}.url is a Redis Cluster: set {section}.cluster = true"
                    )),
                    _ => Ok(()),
                })
            })
            .await?;
        outcome.clone().map_err(RedisFailure::WrongMode)
    }

    /// Runs a prepared script invocation, bounded by the command timeout
    /// (connection and mode check included).
    pub async fn invoke<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<T, RedisFailure> {
        let run = async {
            self.checked_mode().await?;
            Ok(match &self.connection {
                Connection::Standalone(manager) => {
                    invocation.invoke_async(&mut manager.clone()).await?
                }
                Connection::Cluster { client, connection } => {
                    let connection = connection
                        .get_or_try_init(|| client.get_async_connection())
                        .await?;
                    invocation.invoke_async(&mut connection.clone()).await?
                }
            })
        };
        tokio::time::timeout(self.command_timeout, run)
            .await
            .unwrap_or(Err(RedisFailure::Timeout))
    }

    /// Whether Redis answers `PING` (on every primary of a cluster) and is
    /// of the configured mode.
    pub async fn ping(&self) -> bool {
        let run = async {
            self.checked_mode().await?;
            let ping = redis::cmd("PING");
            match &self.connection {
                Connection::Standalone(manager) => {
                    ping.query_async::<String>(&mut manager.clone()).await?;
                }
                Connection::Cluster { client, connection } => {
                    let connection = connection
                        .get_or_try_init(|| client.get_async_connection())
                        .await?;
                    ping.query_async::<String>(&mut connection.clone()).await?;
                }
            }
            Ok::<_, RedisFailure>(())
        };
        matches!(
            tokio::time::timeout(self.command_timeout, run).await,
            Ok(Ok(()))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_is_read_from_info_cluster() {
        assert!(is_cluster("# Cluster\r\ncluster_enabled:1\r\n"));
        assert!(!is_cluster("# Cluster\r\ncluster_enabled:0\r\n"));
        assert!(!is_cluster(""));
    }

    /// A `redis-server` serving TLS only, with a certificate of a private
    /// CA, on a free port; killed when dropped.
    struct TlsRedis {
        server: std::process::Child,
        port: u16,
        dir: std::path::PathBuf,
    }

    impl Drop for TlsRedis {
        fn drop(&mut self) {
            let _ = self.server.kill();
            let _ = self.server.wait();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn tls_redis() -> Option<TlsRedis> {
        if std::process::Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
        {
            assert!(!crate::testing::in_ci(), "redis-server is required in CI");
            eprintln!("skipping: redis-server is not installed");
            return None;
        }
        let dir =
            std::env::temp_dir().join(format!("chataigne-redis-tls-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        std::fs::write(dir.join("ca.pem"), ca.self_signed(&ca_key).unwrap().pem()).unwrap();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        std::fs::write(dir.join("redis.crt"), leaf.pem()).unwrap();
        std::fs::write(dir.join("redis.key"), key.serialize_pem()).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let file = |name: &str| dir.join(name).display().to_string();
        let server = std::process::Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--tls-port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .args([
                "--tls-cert-file",
                &file("redis.crt"),
                "--tls-key-file",
                &file("redis.key"),
            ])
            .args([
                "--tls-auth-clients",
                "no",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        Some(TlsRedis { server, port, dir })
    }

    /// `rediss://` with the private CA: the mode is checked and scripts run
    /// over TLS; without the CA the server is not trusted.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rediss_verifies_the_server_against_the_configured_ca() {
        let Some(redis) = tls_redis() else {
            return;
        };
        let url = format!("rediss://127.0.0.1:{}", redis.port);
        let ca = redis.dir.join("ca.pem").display().to_string();
        let options = |tls_ca_file| RedisOptions {
            url: &url,
            cluster: false,
            tls_ca_file,
            connect_timeout: Duration::from_millis(500),
            response_timeout: Duration::from_millis(500),
            section: "redis",
        };
        let store = RedisStore::new(options(Some(&ca))).unwrap();
        let script = redis::Script::new("return 41 + tonumber(ARGV[1])");
        let answer: i64 = crate::testing::eventually_some(
            "the TLS server answers",
            Duration::from_secs(10),
            || async { store.invoke(&script.arg(1)).await.ok() },
        )
        .await;
        assert_eq!(answer, 42);
        store.verify_at_start().await.unwrap();
        assert!(store.ping().await);
        let untrusted = RedisStore::new(options(None)).unwrap();
        assert!(untrusted.invoke::<i64>(&script.arg(1)).await.is_err());
        assert!(!untrusted.ping().await);
        // A CA for a plain connection is a mistake, named.
        let plain = format!("redis://127.0.0.1:{}", redis.port);
        let Err(error) = RedisStore::new(RedisOptions {
            url: &plain,
            ..options(Some(&ca))
        }) else {
            panic!("a CA with redis:// is refused");
        };
        assert!(error.to_string().contains("redis.tls_ca_file"), "{error}");
    }

    #[test]
    fn an_invalid_url_names_the_setting_not_the_url() {
        let options = RedisOptions {
            url: "redis://:hunter2@[bad",
            cluster: false,
            tls_ca_file: None,
            connect_timeout: Duration::from_millis(10),
            response_timeout: Duration::from_millis(10),
            section: "redis",
        };
        let Err(error) = RedisStore::new(options) else {
            panic!("an invalid URL is refused");
        };
        let message = error.to_string();
        assert!(message.contains("redis.url"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }
}
