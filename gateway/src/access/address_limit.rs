//! The per-address limit of one request, counted exactly once: before the
//! token for every method but `tools/call`, and for `tools/call` together
//! with the per-tool limit in the same Redis round trip, once both keys are
//! known (or alone, at the end, when the call stopped before its tool limit).
//! An address Redis already refused is refused before any token work, from
//! the limiter's memory of that refusal and without a round trip.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::access::rate_limit::{self, Quota, RateLimiter, Verdict};
use crate::config::{OnStoreFailure, RateLimits};
use crate::error::GatewayError;
use crate::ops::counters::{Dependency, Limit, Metrics, Store};

/// The client's address as the listener established it (the peer, or the
/// address a trusted proxy relayed), carried as a request extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

/// The address limit a request still owes.
pub struct AddressLimit {
    /// The client and its store key; `None` when the address is unknown.
    client: Option<(IpAddr, String)>,
    per_minute: u32,
    /// What a request meets when the store does not answer.
    on_store_failure: OnStoreFailure,
    counted: AtomicBool,
}

impl AddressLimit {
    /// The limit of `client` under the configured quota.
    pub fn new(limits: &RateLimits, client: Option<ClientAddress>) -> AddressLimit {
        let client = client.map(|ClientAddress(ip)| {
            let ip = ip.to_canonical();
            (ip, rate_limit::key("address", &[&ip.to_string()]))
        });
        AddressLimit {
            client,
            per_minute: limits.per_ip_per_minute,
            on_store_failure: limits.on_store_failure,
            counted: AtomicBool::new(false),
        }
    }

    /// Refuses at once an address whose refusal by Redis still holds.
    pub fn refuse_if_known(
        &self,
        limiter: &RateLimiter,
        metrics: &Metrics,
    ) -> Result<(), GatewayError> {
        let Some((_, key)) = &self.client else {
            return Ok(());
        };
        match limiter.known_refusal(key) {
            Some(retry_after) => Err(self.refused(metrics, retry_after)),
            None => Ok(()),
        }
    }

    /// The quota to count with the call's other limits, the first time only
    /// (it is then counted).
    pub fn take(&self) -> Option<Quota<'_>> {
        let (_, key) = self.client.as_ref()?;
        if self.counted.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(Quota {
            key,
            limit: self.per_minute,
        })
    }

    /// Counts the address alone unless it was counted already. A store
    /// failure is met by the configured policy ([`Self::store_failed`]).
    pub async fn count_alone(
        &self,
        limiter: &RateLimiter,
        metrics: &Metrics,
    ) -> Result<(), GatewayError> {
        let Some(quota) = self.take() else {
            return Ok(());
        };
        match limiter.check_all(&[quota]).await {
            Ok(Verdict::Allowed) => Ok(()),
            Ok(Verdict::Limited { retry_after, .. }) => Err(self.refused(metrics, retry_after)),
            Err(error) => self.store_failed(metrics, &error),
        }
    }

    /// A limit check the store could not answer, met by
    /// `rate_limits.on_store_failure`: `fail_open` serves the request without
    /// it (counted; a warning unless the breaker already said Redis is down,
    /// which it logs once per transition), `fail_closed` refuses it with the
    /// retryable dependency error.
    pub fn store_failed(
        &self,
        metrics: &Metrics,
        error: &GatewayError,
    ) -> Result<(), GatewayError> {
        match self.on_store_failure {
            OnStoreFailure::FailOpen => {
                metrics.served_without(Store::RateLimit);
                if !matches!(error, GatewayError::StoreDown) {
                    tracing::warn!(store = "rate_limit", %error, "store unavailable: request served without a limit check");
                }
                Ok(())
            }
            OnStoreFailure::FailClosed => {
                metrics.dependency_error(Dependency::Redis);
                if !matches!(error, GatewayError::StoreDown) {
                    tracing::warn!(store = "rate_limit", %error, "store unavailable: request refused (limits fail closed)");
                }
                Err(GatewayError::LimitStoreUnavailable)
            }
        }
    }

    /// The refusal of this address, counted and logged (the address at info:
    /// it is the client's, not a secret).
    pub fn refused(&self, metrics: &Metrics, retry_after: Duration) -> GatewayError {
        metrics.rate_limited(Limit::Address);
        if let Some((client, _)) = &self.client {
            tracing::info!(client = %client, "request refused by the per-address limit");
        }
        GatewayError::AddressRateLimited { retry_after }
    }
}
