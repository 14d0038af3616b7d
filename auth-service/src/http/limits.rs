//! Brute-force limits of the authorization server (GCRA): sign-in attempts
//! per client address and failed sign-ins per account, requests to `/token`,
//! `/revoke` and `/register` per client address, and refused token and
//! revocation requests per client address × `client_id`. Every failure
//! budget is keyed by what the requester controls: a flood spends its own
//! address's budget, never another user's (a public `client_id` alone is
//! not a key).
//!
//! With `oauth.rate_limits.redis` the counters live in Redis (`shared`), one
//! quota for all replicas; otherwise, and while Redis does not answer, in
//! process (`governor`). Keys are keyed hashes (HMAC-SHA256: under a
//! per-process random key in process, under the configured shared secret in
//! Redis), never the addresses, accounts or client ids themselves.
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

mod shared;

use shared::{Op, SharedLimits};

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

/// What one limit counts: its key in process and, when the counters are
/// shared, in Redis.
pub struct Subject {
    local: HashedKey,
    shared: Option<String>,
}

/// Every limit of the authorization server.
pub struct Limits {
    enabled: bool,
    trusted_proxies: Vec<IpNet>,
    key: hmac::Key,
    shared: Option<SharedLimits>,
    config: RateLimitConfig,
    sign_in_per_address: Counter<HashedKey>,
    sign_in_failures_per_account: FailureCounter<HashedKey>,
    token_per_address: Counter<HashedKey>,
    token_failures: FailureCounter<HashedKey>,
    register_per_address: Counter<HashedKey>,
}

impl Limits {
    /// Refuses to start on a shared Redis of the other mode than configured
    /// (when it answers now).
    pub async fn verify_store_at_start(&self) -> anyhow::Result<()> {
        match &self.shared {
            Some(shared) => shared.verify_at_start().await,
            None => Ok(()),
        }
    }

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
        let shared = match SharedLimits::new(&config.redis) {
            Ok(shared) => shared,
            Err(error) => {
                // Validation refuses such a configuration before this point.
                tracing::error!(%error, "shared rate-limit store unusable: counting in process");
                None
            }
        };
        Limits {
            enabled: config.enabled,
            trusted_proxies: config.trusted_proxies.iter().map(IpNet::trunc).collect(),
            key: hmac::Key::new(hmac::HMAC_SHA256, &secret),
            shared,
            config: config.clone(),
            sign_in_per_address: Counter::new(config.sign_in_per_address),
            sign_in_failures_per_account: FailureCounter::new(config.sign_in_failures_per_account),
            token_per_address: Counter::new(config.token_per_address),
            token_failures: FailureCounter::new(config.token_failures_per_address_and_client),
            register_per_address: Counter::new(config.register_per_address),
        }
    }

    fn subject(&self, kind: &'static str, parts: &[&[u8]]) -> Subject {
        let mut context = hmac::Context::with_key(&self.key);
        context.update(kind.as_bytes());
        for part in parts {
            context.update(&[0]);
            context.update(part);
        }
        let tag = context.sign();
        let mut local = [0u8; 32];
        local.copy_from_slice(&tag.as_ref()[..32]);
        Subject {
            local,
            shared: self.shared.as_ref().map(|shared| shared.key(kind, parts)),
        }
    }

    /// The subject of a client address.
    fn address(&self, kind: &'static str, address: &IpAddr) -> Subject {
        self.subject(kind, &[&address_bytes(address)])
    }

    /// The subject of an account: its email trimmed and lower-cased.
    pub fn account(&self, email: &str) -> Subject {
        self.subject("account", &[email.trim().to_lowercase().as_bytes()])
    }

    /// The subject of the token and revocation failures of a requester: its
    /// client address and the `client_id` it names (empty when none). `None`
    /// when the address is unknown (not served over a socket).
    pub fn token_requester(&self, address: Option<&IpAddr>, client_id: &str) -> Option<Subject> {
        let bytes = address_bytes(address?);
        Some(self.subject("token_failure", &[&bytes, client_id.as_bytes()]))
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

    /// Applies `op` to `subject` under `limit`: in Redis when the counters
    /// are shared and it answers, else `local` on the in-process key.
    async fn decide(
        &self,
        op: Op,
        limit: Limit,
        subject: &Subject,
        local: impl FnOnce(&HashedKey) -> Result<(), Duration>,
    ) -> Result<(), Duration> {
        if !self.enabled {
            return Ok(());
        }
        if let (Some(shared), Some(key)) = (&self.shared, &subject.shared)
            && let Some(decision) = shared.apply(op, key, limit).await
        {
            return decision;
        }
        local(&subject.local)
    }

    /// Counts one event from `address` (none: not counted) on `counter`.
    async fn per_address(
        &self,
        kind: &'static str,
        counter: &Counter<HashedKey>,
        limit: Limit,
        address: Option<&IpAddr>,
    ) -> Result<(), Duration> {
        let Some(address) = address else {
            return Ok(());
        };
        let subject = self.address(kind, address);
        self.decide(Op::Consume, limit, &subject, |key| counter.check(key))
            .await
    }

    /// One sign-in form post from `address`.
    pub async fn sign_in_attempt(&self, address: Option<&IpAddr>) -> Result<(), Duration> {
        let limit = self.config.sign_in_per_address;
        self.per_address("sign_in", &self.sign_in_per_address, limit, address)
            .await
    }

    /// Whether `account` may try to sign in now.
    pub async fn account_allowed(&self, account: &Subject) -> Result<(), Duration> {
        let counter = &self.sign_in_failures_per_account;
        let limit = self.config.sign_in_failures_per_account;
        self.decide(Op::Peek, limit, account, |key| counter.check(key))
            .await
    }

    /// A failed sign-in of `account`; `Err(wait)` when it is refused from now on.
    pub async fn sign_in_failed(&self, account: &Subject) -> Result<(), Duration> {
        let counter = &self.sign_in_failures_per_account;
        let limit = self.config.sign_in_failures_per_account;
        self.decide(Op::Fail, limit, account, |key| counter.failed(key))
            .await
    }

    /// One `/token`, `/revoke` or `/register` request from `address`.
    pub async fn endpoint_request(&self, address: Option<&IpAddr>) -> Result<(), Duration> {
        let limit = self.config.token_per_address;
        self.per_address("endpoint", &self.token_per_address, limit, address)
            .await
    }

    /// One `/register` request from `address`.
    pub async fn registration(&self, address: Option<&IpAddr>) -> Result<(), Duration> {
        let limit = self.config.register_per_address;
        self.per_address("register", &self.register_per_address, limit, address)
            .await
    }

    /// Whether `requester` may use the token and revocation endpoints now.
    pub async fn token_allowed(&self, requester: &Subject) -> Result<(), Duration> {
        let limit = self.config.token_failures_per_address_and_client;
        let counter = &self.token_failures;
        self.decide(Op::Peek, limit, requester, |key| counter.check(key))
            .await
    }

    /// A refused token or revocation request of `requester`.
    pub async fn token_failed(&self, requester: &Subject) {
        let limit = self.config.token_failures_per_address_and_client;
        let counter = &self.token_failures;
        let _ = self
            .decide(Op::Fail, limit, requester, |key| counter.failed(key))
            .await;
    }

    /// Forgets in-process keys whose limits are back to full (bounded
    /// memory); shared keys expire in Redis by themselves.
    pub fn prune(&self) {
        self.sign_in_per_address.prune();
        self.sign_in_failures_per_account.prune();
        self.token_per_address.prune();
        self.token_failures.prune();
        self.register_per_address.prune();
    }
}

/// The octets of `address`, IPv4-mapped IPv6 read as IPv4.
fn address_bytes(address: &IpAddr) -> Vec<u8> {
    match address.to_canonical() {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
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
            limits.account(" Camille@Example.com ").local,
            limits.account("camille@example.com").local
        );
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        assert_ne!(
            limits.account("a@example.com").local,
            limits.address("account", &ip).local
        );
        assert!(
            limits.account("a@example.com").shared.is_none(),
            "in process"
        );
    }

    #[tokio::test]
    async fn failures_block_an_account_after_the_quota_and_not_before() {
        let limits = Limits::new(&config());
        let account = limits.account("x@example.com");
        let other = limits.account("y@example.com");
        assert!(limits.account_allowed(&account).await.is_ok());
        assert!(limits.sign_in_failed(&account).await.is_ok());
        assert!(limits.account_allowed(&account).await.is_ok());
        let wait = limits.sign_in_failed(&account).await.unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert!(limits.account_allowed(&account).await.is_err());
        assert!(limits.account_allowed(&other).await.is_ok());
    }

    #[tokio::test]
    async fn token_failures_are_keyed_by_address_and_client_id() {
        let limits = Limits::new(&RateLimitConfig {
            token_failures_per_address_and_client: Limit::new(2, 300),
            ..config()
        });
        let attacker: IpAddr = "198.51.100.66".parse().unwrap();
        let user: IpAddr = "192.0.2.7".parse().unwrap();
        let flood = limits
            .token_requester(Some(&attacker), "public-client")
            .unwrap();
        for _ in 0..3 {
            limits.token_failed(&flood).await;
        }
        assert!(limits.token_allowed(&flood).await.is_err());
        // The same public client from another address, and another client
        // from the flooding address, keep their budgets.
        let other_user = limits
            .token_requester(Some(&user), "public-client")
            .unwrap();
        assert!(limits.token_allowed(&other_user).await.is_ok());
        let other_client = limits.token_requester(Some(&attacker), "other").unwrap();
        assert!(limits.token_allowed(&other_client).await.is_ok());
        assert!(limits.token_requester(None, "public-client").is_none());
    }

    #[tokio::test]
    async fn attempts_per_address_are_counted_and_disabled_limits_never_refuse() {
        let limits = Limits::new(&config());
        let address: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..3 {
            assert!(limits.sign_in_attempt(Some(&address)).await.is_ok());
        }
        let wait = limits.sign_in_attempt(Some(&address)).await.unwrap_err();
        assert_eq!(retry_after_secs(wait), 20);
        assert!(limits.sign_in_attempt(None).await.is_ok());
        let off = Limits::new(&RateLimitConfig {
            enabled: false,
            ..config()
        });
        for _ in 0..10 {
            assert!(off.sign_in_attempt(Some(&address)).await.is_ok());
        }
    }
}
