//! The Redis connection of the rate limiter: the shared store of
//! `chataigne_common::redis_store` (standalone or cluster, lazy, with short
//! connect and response timeouts, its mode checked against the
//! configuration), behind a breaker: once the breaker (`ops/breaker.rs`, a
//! background `PING`) has seen Redis down or hung, commands fail at once
//! without waiting.
//!
//! Keys are `<prefix>:<key>` on a standalone server. On a cluster the prefix
//! is a hash tag, `{<prefix>}:<key>`: every key of a deployment hashes to one
//! slot, so the script that checks all the limits of a call (several keys)
//! runs atomically in one round trip there too.

use std::sync::Arc;

use chataigne_common::redis_store::{RedisOptions, RedisStore};
use redis::{FromRedisValue, ScriptInvocation};
use secrecy::ExposeSecret;

use crate::config::RedisConfig;
use crate::error::GatewayError;
use crate::ops::breaker::Breaker;
use crate::ops::counters::Dependency;

/// A cheap-to-clone handle on the shared connection.
#[derive(Clone)]
pub struct RedisHandle {
    store: RedisStore,
    /// Prefix of every key (a hash tag on a cluster).
    prefix: String,
    breaker: Arc<Breaker>,
}

impl RedisHandle {
    /// Prepares the connection without connecting.
    pub fn new(config: &RedisConfig) -> anyhow::Result<Option<RedisHandle>> {
        let Some(url) = &config.url else {
            return Ok(None);
        };
        let store = RedisStore::new(RedisOptions {
            url: url.expose_secret(),
            cluster: config.cluster,
            tls_ca_file: config.tls_ca_file.as_deref(),
            connect_timeout: std::time::Duration::from_millis(config.connect_timeout_ms),
            response_timeout: std::time::Duration::from_millis(config.response_timeout_ms),
            section: "redis",
        })?;
        let prefix = if config.cluster {
            format!("{{{}}}", config.key_prefix)
        } else {
            config.key_prefix.clone()
        };
        Ok(Some(RedisHandle {
            store,
            prefix,
            breaker: Breaker::new(Dependency::Redis.label()),
        }))
    }

    /// Refuses to start on a Redis of the other mode than configured (when
    /// it answers now).
    pub async fn verify_at_start(&self) -> anyhow::Result<()> {
        self.store.verify_at_start().await
    }

    /// The store key of `key` under this deployment's prefix.
    pub fn key(&self, key: &str) -> String {
        format!("{}:{key}", self.prefix)
    }

    /// The breaker of this connection.
    pub fn breaker(&self) -> &Arc<Breaker> {
        &self.breaker
    }

    /// Whether Redis answers `PING` (the breaker's probe; bypasses it).
    pub async fn ping(&self) -> bool {
        self.store.ping().await
    }

    /// Runs a prepared script invocation, bounded by the command timeout;
    /// fails at once while the breaker is open.
    pub async fn run<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<T, GatewayError> {
        if self.breaker.is_open() {
            return Err(GatewayError::StoreDown);
        }
        Ok(self.store.invoke(invocation).await?)
    }
}
