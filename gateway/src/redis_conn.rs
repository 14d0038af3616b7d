//! The Redis connection shared by the rate limiter and the idempotency cache:
//! a lazy connection manager (the gateway starts while Redis is down) with
//! short connect and response timeouts and few reconnect retries, so a dead
//! Redis fails a command within about `connect + response` timeouts and the
//! manager reconnects by itself when Redis is back.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, ScriptInvocation};
use secrecy::ExposeSecret;

use crate::store_config::RedisConfig;

/// Why a store command did not answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreUnavailable {
    #[error("redis command timed out")]
    Timeout,
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
        }))
    }

    /// The store key of `key` under this deployment's prefix.
    pub fn key(&self, key: &str) -> String {
        format!("{}:{key}", self.prefix)
    }

    /// Runs a prepared script invocation, bounded by the command timeout.
    pub async fn run<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<T, StoreUnavailable> {
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
