//! Brute-force limits of the authorization server (GCRA): sign-in attempts
//! per client address, failed sign-ins per client address × account, the
//! account's budget of attempts from browsers it has never signed in from,
//! failed sign-ins per recognised device, requests to `/token`, `/revoke`
//! and `/register` per client address, and refused token and revocation
//! requests per client address × `client_id`.
//!
//! Sign-in (`sign_in_allowed`, `sign_in_failed`): guessing an account's
//! password is bounded whatever the attacker does — every attempt from a
//! browser without the account's device cookie spends the account's budget
//! *before* the password is checked (so concurrent guesses cannot overrun
//! it) — while a browser that has signed in to the account before (its
//! device cookie, `http/device.rs`) is never counted there: spending the
//! account's budget keeps guessers out, never the real user. Such a browser
//! is bounded by its own failures instead, and every attempt by its address
//! and its address × account failures. Nothing depends on whether the
//! account exists (the same answers for known and unknown e-mails).
//!
//! The limiters run on tokio's clock (the process clock when running;
//! virtual time in tests with paused time).
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
use governor::clock::{Clock, ReasonablyRealtime};
use governor::middleware::{NoOpMiddleware, StateInformationMiddleware};
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use ipnet::IpNet;

use crate::config::{Limit, RateLimitConfig};

mod shared;

use shared::{Op, SharedLimits};

/// Blocked keys kept at most; past this, the oldest-expiring are forgotten
/// first (their limiter state still refuses them once more).
const MAX_BLOCKED: usize = 100_000;

/// A keyed hash of an account or a client id.
pub type HashedKey = [u8; 32];

/// The limiters' clock: tokio's, so tests can run them in virtual time.
#[derive(Debug, Clone, Copy, Default)]
struct TokioClock;

impl Clock for TokioClock {
    type Instant = Instant;

    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
}

impl ReasonablyRealtime for TokioClock {}

type KeyedLimiter<K, M> = RateLimiter<K, DefaultKeyedStateStore<K>, TokioClock, M>;

/// Counts every event of a key; refuses past the quota.
struct Counter<K: Hash + Eq + Clone> {
    limiter: KeyedLimiter<K, NoOpMiddleware<Instant>>,
    clock: TokioClock,
}

impl<K: Hash + Eq + Clone> Counter<K> {
    fn new(limit: Limit) -> Counter<K> {
        Counter {
            limiter: RateLimiter::dashmap_with_clock(quota(limit), TokioClock),
            clock: TokioClock,
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

type InformedLimiter<K> = KeyedLimiter<K, StateInformationMiddleware>;

/// Counts failures of a key; once its quota is spent, the key is refused
/// before any work until a failure is earned back.
struct FailureCounter<K: Hash + Eq + Clone> {
    limiter: InformedLimiter<K>,
    clock: TokioClock,
    interval: Duration,
    blocked: Mutex<HashMap<K, Instant>>,
}

impl<K: Hash + Eq + Clone> FailureCounter<K> {
    fn new(limit: Limit) -> FailureCounter<K> {
        let quota = quota(limit);
        FailureCounter {
            limiter: RateLimiter::dashmap_with_clock(quota, TokioClock)
                .with_middleware::<StateInformationMiddleware>(),
            clock: TokioClock,
            interval: quota.replenish_interval(),
            blocked: Mutex::new(HashMap::new()),
        }
    }

    /// `Err(wait)` while `key` is refused.
    fn check(&self, key: &K) -> Result<(), Duration> {
        let now = self.clock.now();
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
        let now = self.clock.now();
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
        let now = self.clock.now();
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

/// What one sign-in attempt is counted on (`Limits::sign_in_subjects`).
pub struct SignInSubjects {
    address: Option<IpAddr>,
    pair: Option<Subject>,
    account: Subject,
    device: Option<Subject>,
}

/// An account as the limits and device cookies name it: the e-mail trimmed
/// and lower-cased.
pub fn normalised_account(email: &str) -> String {
    email.trim().to_lowercase()
}

/// Every limit of the authorization server.
pub struct Limits {
    enabled: bool,
    trusted_proxies: Vec<IpNet>,
    key: hmac::Key,
    shared: Option<SharedLimits>,
    config: RateLimitConfig,
    sign_in_per_address: Counter<HashedKey>,
    sign_in_failures_per_pair: FailureCounter<HashedKey>,
    sign_in_per_account: Counter<HashedKey>,
    sign_in_failures_per_device: FailureCounter<HashedKey>,
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
            sign_in_failures_per_pair: FailureCounter::new(
                config.sign_in_failures_per_address_and_account,
            ),
            sign_in_per_account: Counter::new(config.sign_in_attempts_per_account),
            sign_in_failures_per_device: FailureCounter::new(config.sign_in_failures_per_device),
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
    fn account(&self, email: &str) -> Subject {
        self.subject("account", &[normalised_account(email).as_bytes()])
    }

    /// What a sign-in attempt for `email` from `address` (none: not served
    /// over a socket) is counted on; `device` is the id of the browser's
    /// device cookie when it names this account (`http/device.rs`).
    pub fn sign_in_subjects(
        &self,
        address: Option<&IpAddr>,
        email: &str,
        device: Option<&[u8]>,
    ) -> SignInSubjects {
        let account = normalised_account(email);
        SignInSubjects {
            address: address.copied(),
            pair: address.map(|address| {
                self.subject(
                    "sign_in_failure",
                    &[&address_bytes(address), account.as_bytes()],
                )
            }),
            account: self.account(&account),
            device: device.map(|id| self.subject("device", &[id, account.as_bytes()])),
        }
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
    async fn sign_in_attempt(&self, address: Option<&IpAddr>) -> Result<(), Duration> {
        let limit = self.config.sign_in_per_address;
        self.per_address("sign_in", &self.sign_in_per_address, limit, address)
            .await
    }

    /// Whether a sign-in attempt may check its password now, counting it:
    /// on its address; then refused while its address × account has
    /// failed too often; then, from a recognised device, refused while that
    /// device has failed too often, and from any other browser counted on
    /// the account's budget (before the check: concurrent guesses cannot
    /// overrun it). `Err(wait)` when refused.
    pub async fn sign_in_allowed(&self, subjects: &SignInSubjects) -> Result<(), Duration> {
        self.sign_in_attempt(subjects.address.as_ref()).await?;
        if let Some(pair) = &subjects.pair {
            let counter = &self.sign_in_failures_per_pair;
            let limit = self.config.sign_in_failures_per_address_and_account;
            self.decide(Op::Peek, limit, pair, |key| counter.check(key))
                .await?;
        }
        match &subjects.device {
            Some(device) => {
                let counter = &self.sign_in_failures_per_device;
                let limit = self.config.sign_in_failures_per_device;
                self.decide(Op::Peek, limit, device, |key| counter.check(key))
                    .await
            }
            None => {
                let counter = &self.sign_in_per_account;
                let limit = self.config.sign_in_attempts_per_account;
                self.decide(Op::Consume, limit, &subjects.account, |key| {
                    counter.check(key)
                })
                .await
            }
        }
    }

    /// A sign-in attempt that [`Limits::sign_in_allowed`] let through
    /// failed: counted on its address × account and on its device.
    pub async fn sign_in_failed(&self, subjects: &SignInSubjects) {
        if let Some(pair) = &subjects.pair {
            let counter = &self.sign_in_failures_per_pair;
            let limit = self.config.sign_in_failures_per_address_and_account;
            let _ = self
                .decide(Op::Fail, limit, pair, |key| counter.failed(key))
                .await;
        }
        if let Some(device) = &subjects.device {
            let counter = &self.sign_in_failures_per_device;
            let limit = self.config.sign_in_failures_per_device;
            let _ = self
                .decide(Op::Fail, limit, device, |key| counter.failed(key))
                .await;
        }
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
        self.sign_in_failures_per_pair.prune();
        self.sign_in_per_account.prune();
        self.sign_in_failures_per_device.prune();
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
            sign_in_failures_per_address_and_account: Limit::new(2, 60),
            sign_in_failures_per_device: Limit::new(2, 60),
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

    fn ip(n: u32) -> IpAddr {
        IpAddr::V4(std::net::Ipv4Addr::from(0xC633_6400 + n))
    }

    const VICTIM: &str = "camille@example.com";
    const DEVICE: &[u8] = b"the victim's browser";

    /// A wrong guess at `VICTIM` from `address`: whether its password was
    /// checked (not refused by a limit first).
    async fn guess(limits: &Limits, address: IpAddr) -> bool {
        let subjects = limits.sign_in_subjects(Some(&address), VICTIM, None);
        if limits.sign_in_allowed(&subjects).await.is_err() {
            return false;
        }
        limits.sign_in_failed(&subjects).await;
        true
    }

    /// Whether the victim's own browser (its device cookie) may sign in.
    async fn victim_signs_in(limits: &Limits) -> bool {
        let home: IpAddr = "192.0.2.10".parse().unwrap();
        let subjects = limits.sign_in_subjects(Some(&home), VICTIM, Some(DEVICE));
        limits.sign_in_allowed(&subjects).await.is_ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_wrong_passwords_from_ten_addresses_does_not_keep_the_victim_out() {
        let limits = Limits::new(&RateLimitConfig::default());
        for n in 0..10 {
            guess(&limits, ip(n)).await;
            tokio::time::advance(Duration::from_millis(30)).await;
            assert!(victim_signs_in(&limits).await, "after guess {n}");
        }
        // A browser that never signed in to the account now waits, and is told how long.
        let fresh = limits.sign_in_subjects(Some(&ip(99)), VICTIM, None);
        let wait = limits.sign_in_allowed(&fresh).await.unwrap_err();
        assert!(wait <= Duration::from_secs(360), "{wait:?}");
        // Another account is untouched.
        let other = limits.sign_in_subjects(Some(&ip(0)), "louis@example.com", None);
        assert!(limits.sign_in_allowed(&other).await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn one_guess_every_ten_seconds_for_five_minutes_never_keeps_the_victim_out() {
        let limits = Limits::new(&RateLimitConfig::default());
        let mut checked = 0;
        for n in 0..30 {
            if guess(&limits, ip(n % 3)).await {
                checked += 1;
            }
            assert!(victim_signs_in(&limits).await, "after guess {n}");
            tokio::time::advance(Duration::from_secs(10)).await;
        }
        assert!(checked <= 20, "{checked} guesses checked in five minutes");
        assert!(checked < 30, "the guessing is slowed down");
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_twenty_guesses_an_hour_whatever_the_attacker_does() {
        let limits = Limits::new(&RateLimitConfig::default());
        // A fresh address for every guess, one guess a second, for three hours.
        let mut checked_at = Vec::new();
        for second in 0..3 * 3600u32 {
            if guess(&limits, ip(second)).await {
                checked_at.push(second);
            }
            if second % 600 == 0 {
                assert!(victim_signs_in(&limits).await, "at {second} s");
            }
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        for (i, start) in checked_at.iter().enumerate() {
            let in_hour = checked_at[i..]
                .iter()
                .take_while(|at| **at < start + 3600)
                .count();
            assert!(
                in_hour <= 20,
                "{in_hour} guesses in the hour from {start} s"
            );
        }
        assert!(checked_at.len() >= 30, "the budget comes back over time");
    }

    #[tokio::test(start_paused = true)]
    async fn failures_per_address_and_account_and_per_device_are_bounded() {
        let limits = Limits::new(&RateLimitConfig {
            sign_in_per_address: Limit::new(100, 60),
            ..config()
        });
        let address = ip(1);
        // Two failures (the quota) from one address on one account.
        let subjects = limits.sign_in_subjects(Some(&address), VICTIM, Some(DEVICE));
        for _ in 0..2 {
            assert!(limits.sign_in_allowed(&subjects).await.is_ok());
            limits.sign_in_failed(&subjects).await;
        }
        assert!(limits.sign_in_allowed(&subjects).await.is_err());
        // The same address on another account, and the device from another address…
        let other_account = limits.sign_in_subjects(Some(&address), "louis@example.com", None);
        assert!(limits.sign_in_allowed(&other_account).await.is_ok());
        let elsewhere = limits.sign_in_subjects(Some(&ip(2)), VICTIM, Some(DEVICE));
        // …which has spent its own failures: a stolen device cookie is bounded too.
        assert!(limits.sign_in_allowed(&elsewhere).await.is_err());
        let fresh = limits.sign_in_subjects(Some(&ip(2)), VICTIM, Some(b"another browser"));
        assert!(limits.sign_in_allowed(&fresh).await.is_ok());
        // A failure is earned back with time.
        tokio::time::advance(Duration::from_secs(31)).await;
        assert!(limits.sign_in_allowed(&subjects).await.is_ok());
    }

    #[test]
    fn nothing_depends_on_the_account_existing() {
        // The subjects are keyed hashes of what was typed: the same work and
        // the same decisions for any e-mail.
        let limits = Limits::new(&config());
        let a = limits.sign_in_subjects(Some(&ip(1)), " Camille@Example.com", None);
        let b = limits.sign_in_subjects(Some(&ip(1)), "camille@example.com", None);
        assert_eq!(a.account.local, b.account.local);
        assert_eq!(
            a.pair.as_ref().unwrap().local,
            b.pair.as_ref().unwrap().local
        );
        let c = limits.sign_in_subjects(Some(&ip(2)), "camille@example.com", None);
        assert_ne!(a.pair.unwrap().local, c.pair.unwrap().local);
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
