//! The Redis connection of the rate limiter: a lazy connection manager (the
//! gateway starts while Redis is down) with short connect and response
//! timeouts and few reconnect retries, so a dead Redis fails a command within
//! about `connect + response` timeouts and the manager reconnects by itself
//! when Redis is back; once its breaker (`ops/breaker.rs`, a background `PING`)
//! has seen Redis down or hung, commands fail at once without waiting.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, ScriptInvocation};
use secrecy::ExposeSecret;

use crate::ops::breaker::Breaker;
use crate::ops::counters::Dependency;
use crate::stores::store_config::RedisConfig;

/// Why a store command did not answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreUnavailable {
    #[error("redis command timed out")]
    Timeout,
    #[error("redis known down: breaker open")]
    Open,
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
}

/// A cheap-to-clone handle on the shared connection.
#[derive(Clone)]
pub struct RedisHandle {
    manager: ConnectionManager,
    /// Outer bound of one command, reconnect attempt included.
    command_timeout: Duration,
    /// Prefix of every key.
    prefix: String,
    breaker: Arc<Breaker>,
}

impl RedisHandle {
    /// Prepares the connection without connecting.
    pub fn new(config: &RedisConfig) -> anyhow::Result<Option<RedisHandle>> {
        let Some(url) = &config.url else {
            return Ok(None);
        };
        let connect = Duration::from_millis(config.connect_timeout_ms);
        let response = Duration::from_millis(config.response_timeout_ms);
        let client = redis::Client::open(url.expose_secret())
            .map_err(|_| anyhow::anyhow!("redis.url is not a valid Redis URL"))?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(connect))
            .set_response_timeout(Some(response))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(Duration::from_millis(100));
        let manager = ConnectionManager::new_lazy_with_config(client, manager_config)?;
        Ok(Some(RedisHandle {
            manager,
            command_timeout: connect * 2 + response + Duration::from_millis(100),
            prefix: config.key_prefix.clone(),
            breaker: Breaker::new(Dependency::Redis.label()),
        }))
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
        let mut connection = self.manager.clone();
        let command = redis::cmd("PING");
        let ping = command.query_async::<String>(&mut connection);
        matches!(
            tokio::time::timeout(self.command_timeout, ping).await,
            Ok(Ok(_))
        )
    }

    /// Runs a prepared script invocation, bounded by the command timeout;
    /// fails at once while the breaker is open.
    pub async fn run<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<T, StoreUnavailable> {
        if self.breaker.is_open() {
            return Err(StoreUnavailable::Open);
        }
        let mut connection = self.manager.clone();
        match tokio::time::timeout(
            self.command_timeout,
            invocation.invoke_async(&mut connection),
        )
        .await
        {
            Ok(result) => Ok(result?),
            Err(_) => Err(StoreUnavailable::Timeout),
        }
    }
}
