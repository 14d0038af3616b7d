//! Brute-force limits of the authorization server (`governor`, GCRA, in
//! process: each replica counts on its own): sign-in attempts per client
//! address and failed sign-ins per account, requests to `/token`, `/revoke`
//! and `/register` per client address, failed token and revocation requests
//! per `client_id`. Accounts and client ids are kept only as keyed hashes
//! (HMAC-SHA256 under a per-process random key); client addresses as they are.
//!
//! The client address is the socket peer, unless that peer is a configured
//! trusted proxy: then `X-Forwarded-For` is walked from the right and the
//! first untrusted hop is the client (the gateway's rule). An unreadable
//! entry stops the walk at the last trusted hop, which is then the key.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aws_lc_rs::hmac;
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use ipnet::IpNet;

use crate::config::{Limit, RateLimitConfig};

/// Blocked keys kept at most; past this, the oldest-expiring are forgotten
/// first (their limiter state still refuses them once more).
const MAX_BLOCKED: usize = 100_000;

/// A keyed hash of an account or a client id.
pub type HashedKey = [u8; 32];

/// Counts every event of a key; refuses past the quota.
struct Counter<K: Hash + Eq + Clone> {
    limiter: DefaultKeyedRateLimiter<K>,
    clock: DefaultClock,
}

impl<K: Hash + Eq + Clone> Counter<K> {
    fn new(limit: Limit) -> Counter<K> {
        Counter {
            limiter: RateLimiter::keyed(quota(limit)),
            clock: DefaultClock::default(),
        }
    }

    /// Counts one event; `Err(wait)` when refused.
    fn check(&self, key: &K) -> Result<(), Duration> {
        self.limiter
            .check_key(key)
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    fn prune(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

type InformedLimiter<K> =
    RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock, StateInformationMiddleware>;

/// Counts failures of a key; once its quota is spent, the key is refused
/// before any work until a failure is earned back.
struct FailureCounter<K: Hash + Eq + Clone> {
    limiter: InformedLimiter<K>,
    clock: DefaultClock,
    interval: Duration,
    blocked: Mutex<HashMap<K, Instant>>,
}

impl<K: Hash + Eq + Clone> FailureCounter<K> {
    fn new(limit: Limit) -> FailureCounter<K> {
        let quota = quota(limit);
        FailureCounter {
            limiter: RateLimiter::keyed(quota).with_middleware::<StateInformationMiddleware>(),
            clock: DefaultClock::default(),
            interval: quota.replenish_interval(),
            blocked: Mutex::new(HashMap::new()),
        }
    }

    /// `Err(wait)` while `key` is refused.
    fn check(&self, key: &K) -> Result<(), Duration> {
        let now = Instant::now();
        let blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
        match blocked.get(key) {
            Some(until) if *until > now => Err(until.duration_since(now)),
            _ => Ok(()),
        }
    }

    /// Counts one failure; `Err(wait)` when the key is refused from now on.
    fn failed(&self, key: &K) -> Result<(), Duration> {
        let wait = match self.limiter.check_key(key) {
            Ok(state) if state.remaining_burst_capacity() > 0 => return Ok(()),
            Ok(_) => self.interval,
            Err(not_until) => not_until.wait_time_from(self.clock.now()),
        };
        let now = Instant::now();
        let mut blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
        if blocked.len() >= MAX_BLOCKED {
            blocked.retain(|_, until| *until > now);
        }
        if blocked.len() < MAX_BLOCKED {
            blocked.insert(key.clone(), now + wait);
        }
        Err(wait)
    }

    fn prune(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
        let now = Instant::now();
        let mut blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
        blocked.retain(|_, until| *until > now);
        blocked.shrink_to_fit();
    }
}

/// `max` per `per_secs`, in bursts of `max`.
fn quota(limit: Limit) -> Quota {
    let max = NonZeroU32::new(limit.max).unwrap_or(NonZeroU32::MIN);
    let period = Duration::from_secs(limit.per_secs.max(1)) / max.get();
    Quota::with_period(period.max(Duration::from_nanos(1)))
        .unwrap_or_else(|| Quota::per_second(max))
        .allow_burst(max)
}

/// Every limit of the authorization server.
pub struct Limits {
    enabled: bool,
    trusted_proxies: Vec<IpNet>,
    key: hmac::Key,
    sign_in_per_address: Counter<IpAddr>,
    sign_in_failures_per_account: FailureCounter<HashedKey>,
    token_per_address: Counter<IpAddr>,
    token_failures_per_client: FailureCounter<HashedKey>,
    register_per_address: Counter<IpAddr>,
}

impl Limits {
    pub fn new(config: &RateLimitConfig) -> Limits {
        let mut secret = [0u8; 32];
        if SystemRandom::new().fill(&mut secret).is_err() {
            // Still keyed per process by the time of start; the hashes only
            // keep accounts out of memory dumps in clear.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            secret[..16].copy_from_slice(&nanos.to_le_bytes());
        }
        Limits {
            enabled: config.enabled,
            trusted_proxies: config.trusted_proxies.iter().map(IpNet::trunc).collect(),
            key: hmac::Key::new(hmac::HMAC_SHA256, &secret),
            sign_in_per_address: Counter::new(config.sign_in_per_address),
            sign_in_failures_per_account: FailureCounter::new(config.sign_in_failures_per_account),
            token_per_address: Counter::new(config.token_per_address),
            token_failures_per_client: FailureCounter::new(config.token_failures_per_client),
            register_per_address: Counter::new(config.register_per_address),
        }
    }

    fn hashed(&self, domain: &str, value: &str) -> HashedKey {
        let mut context = hmac::Context::with_key(&self.key);
        context.update(domain.as_bytes());
        context.update(&[0]);
        context.update(value.as_bytes());
        let tag = context.sign();
        let mut out = [0u8; 32];
        out.copy_from_slice(&tag.as_ref()[..32]);
        out
    }

    /// The key of an account: its email trimmed and lower-cased, hashed.
    pub fn account(&self, email: &str) -> HashedKey {
        self.hashed("account", &email.trim().to_lowercase())
    }

    /// The key of a client id, hashed.
    pub fn client(&self, client_id: &str) -> HashedKey {
        self.hashed("client", client_id)
    }

    /// The client address of a request from socket peer `peer`.
    pub fn client_address(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let trusted = |ip: &IpAddr| self.trusted_proxies.iter().any(|net| net.contains(ip));
        let mut current = peer.to_canonical();
        if !trusted(&current) {
            return current;
        }
        let mut entries = Vec::new();
        for value in headers.get_all("x-forwarded-for") {
            let Ok(value) = value.to_str() else {
                return current;
            };
            entries.extend(value.split(',').map(str::trim).filter(|e| !e.is_empty()));
        }
        for entry in entries.iter().rev() {
            let Some(ip) = parse_entry(entry) else {
                return current;
            };
            current = ip;
            if !trusted(&current) {
                return current;
            }
        }
        current
    }

    fn counted<K: Hash + Eq + Clone>(
        &self,
        counter: &Counter<K>,
        key: Option<&K>,
    ) -> Result<(), Duration> {
        match key {
            Some(key) if self.enabled => counter.check(key),
            _ => Ok(()),
        }
    }

    /// One sign-in form post from `address`.
    pub fn sign_in_attempt(&self, address: Option<&IpAddr>) -> Result<(), Duration> {
        self.counted(&self.sign_in_per_address, address)
    }

    /// Whether `account` may try to sign in now.
    pub fn account_allowed(&self, account: &HashedKey) -> Result<(), Duration> {
        if !self.enabled {
            return Ok(());
        }
        self.sign_in_failures_per_account.check(account)
    }

    /// A failed sign-in of `account`; `Err(wait)` when it is refused from now on.
    pub fn sign_in_failed(&self, account: &HashedKey) -> Result<(), Duration> {
        if !self.enabled {
            return Ok(());
        }
        self.sign_in_failures_per_account.failed(account)
    }

    /// One `/token`, `/revoke` or `/register` request from `address`.
    pub fn endpoint_request(&self, address: Option<&IpAddr>) -> Result<(), Duration> {
        self.counted(&self.token_per_address, address)
    }

    /// One `/register` request from `address`.
    pub fn registration(&self, address: Option<&IpAddr>) -> Result<(), Duration> {
        self.counted(&self.register_per_address, address)
    }

    /// Whether `client` may use the token and revocation endpoints now.
    pub fn client_allowed(&self, client: &HashedKey) -> Result<(), Duration> {
        if !self.enabled {
            return Ok(());
        }
        self.token_failures_per_client.check(client)
    }

    /// A refused token or revocation request of `client`.
    pub fn client_failed(&self, client: &HashedKey) {
        if self.enabled {
            let _ = self.token_failures_per_client.failed(client);
        }
    }

    /// Forgets keys whose limits are back to full (bounded memory).
    pub fn prune(&self) {
        self.sign_in_per_address.prune();
        self.sign_in_failures_per_account.prune();
        self.token_per_address.prune();
        self.token_failures_per_client.prune();
        self.register_per_address.prune();
    }
}

/// One `X-Forwarded-For` entry: an address, optionally with a port or in brackets.
fn parse_entry(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<SocketAddr>().ok().map(|addr| addr.ip()))
        .or_else(|| {
            entry
                .strip_prefix('[')
                .and_then(|rest| rest.strip_suffix(']'))
                .and_then(|inner| inner.parse().ok())
        })
        .map(|ip: IpAddr| ip.to_canonical())
}

/// The client address of a request, when the server knows its socket peer.
pub struct ClientAddress(pub Option<IpAddr>);

impl FromRequestParts<super::Shared> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &super::Shared,
    ) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        Ok(ClientAddress(peer.map(|peer| {
            state.limits.client_address(peer, &parts.headers)
        })))
    }
}

/// The `Retry-After` value for `wait`: whole seconds, at least one.
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs()
        .saturating_add(u64::from(wait.subsec_nanos() > 0))
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> RateLimitConfig {
        RateLimitConfig {
            trusted_proxies: vec!["10.0.0.0/8".parse().unwrap()],
            sign_in_per_address: Limit::new(3, 60),
            sign_in_failures_per_account: Limit::new(2, 60),
            ..RateLimitConfig::default()
        }
    }

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in xff {
            headers.append("x-forwarded-for", value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn the_client_address_is_the_first_untrusted_hop_from_the_right() {
        let limits = Limits::new(&config());
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // An untrusted peer: its forwarding headers are ignored.
        assert_eq!(
            limits.client_address(ip("203.0.113.9"), &headers(&["198.51.100.1"])),
            ip("203.0.113.9")
        );
        // A trusted proxy: walk from the right, skipping trusted hops.
        assert_eq!(
            limits.client_address(
                ip("10.0.0.1"),
                &headers(&["198.51.100.7, 192.0.2.5", "10.1.1.1:8080"])
            ),
            ip("192.0.2.5")
        );
        // An unreadable entry stops at the last trusted hop.
        assert_eq!(
            limits.client_address(ip("10.0.0.1"), &headers(&["garbage"])),
            ip("10.0.0.1")
        );
        assert_eq!(
            limits.client_address(ip("::ffff:203.0.113.9"), &HeaderMap::new()),
            ip("203.0.113.9")
        );
    }

    #[test]
    fn accounts_are_normalised_and_hashed() {
        let limits = Limits::new(&config());
        assert_eq!(
            limits.account(" Camille@Example.com "),
            limits.account("camille@example.com")
        );
        assert_ne!(
            limits.account("a@example.com"),
            limits.client("a@example.com")
        );
    }

    #[test]
    fn failures_block_an_account_after_the_quota_and_not_before() {
        let limits = Limits::new(&config());
        let account = limits.account("x@example.com");
        let other = limits.account("y@example.com");
        assert!(limits.account_allowed(&account).is_ok());
        assert!(limits.sign_in_failed(&account).is_ok());
        assert!(limits.account_allowed(&account).is_ok());
        let wait = limits.sign_in_failed(&account).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert!(limits.account_allowed(&account).is_err());
        assert!(limits.account_allowed(&other).is_ok());
    }

    #[test]
    fn attempts_per_address_are_counted_and_disabled_limits_never_refuse() {
        let limits = Limits::new(&config());
        let address: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..3 {
            assert!(limits.sign_in_attempt(Some(&address)).is_ok());
        }
        let wait = limits.sign_in_attempt(Some(&address)).unwrap_err();
        assert_eq!(retry_after_secs(wait), 20);
        assert!(limits.sign_in_attempt(None).is_ok());
        let off = Limits::new(&RateLimitConfig {
            enabled: false,
            ..config()
        });
        for _ in 0..10 {
            assert!(off.sign_in_attempt(Some(&address)).is_ok());
        }
    }
}
