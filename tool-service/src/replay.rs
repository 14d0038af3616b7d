//! The principal assertions this replica has admitted, by `jti`, until their
//! `exp` plus the clock leeway: an assertion is for one call, so the same
//! `jti` seen again within its lifetime is a replay and is refused. Bounded:
//! when full of unexpired entries, admission fails closed (the caller
//! retries) rather than forgetting one. Per replica: the gateway sends an
//! assertion to exactly one replica, and the assertion's lifetime (no longer
//! than the call's deadline) bounds what a replay to another replica could
//! do (see ARCHITECTURE.md).

use std::collections::HashMap;
use std::sync::Mutex;

use chataigne_common::jws;

/// What [`SeenAssertions::first_use`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Never seen: now remembered until its expiry.
    First,
    /// Seen before and not expired: a replay.
    Again,
    /// Full of unexpired entries: nothing was remembered.
    Full,
}

/// `jti`s (as a 128-bit digest) and the second until which each is kept.
pub struct SeenAssertions {
    capacity: usize,
    seen: Mutex<HashMap<[u8; 16], i64>>,
}

impl SeenAssertions {
    pub fn new(capacity: usize) -> SeenAssertions {
        SeenAssertions {
            capacity: capacity.max(1),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Remembers `jti` until `until` unless it is already remembered at
    /// `now` (a replay) or there is no room.
    pub fn first_use(&self, jti: &str, until: i64, now: i64) -> Seen {
        let digest = jws::digest(&[jti.as_bytes()]);
        let mut key = [0u8; 16];
        key.copy_from_slice(&digest[..16]);
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.get(&key).is_some_and(|kept| now <= *kept) {
            return Seen::Again;
        }
        if seen.len() >= self.capacity && !seen.contains_key(&key) {
            seen.retain(|_, kept| now <= *kept);
            if seen.len() >= self.capacity {
                return Seen::Full;
            }
        }
        seen.insert(key, until);
        Seen::First
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jti_is_accepted_once_until_it_expires() {
        let seen = SeenAssertions::new(8);
        assert_eq!(seen.first_use("a", 100, 0), Seen::First);
        assert_eq!(seen.first_use("a", 100, 50), Seen::Again);
        assert_eq!(seen.first_use("a", 100, 100), Seen::Again);
        assert_eq!(seen.first_use("b", 100, 50), Seen::First);
        // Past its expiry the assertion itself is refused as expired; its
        // entry only makes room.
        assert_eq!(seen.first_use("a", 200, 101), Seen::First);
    }

    #[test]
    fn when_full_of_live_entries_admission_fails_closed() {
        let seen = SeenAssertions::new(2);
        assert_eq!(seen.first_use("a", 10, 0), Seen::First);
        assert_eq!(seen.first_use("b", 50, 0), Seen::First);
        assert_eq!(seen.first_use("c", 50, 5), Seen::Full);
        // Nothing was forgotten to make room.
        assert_eq!(seen.first_use("a", 10, 5), Seen::Again);
        assert_eq!(seen.first_use("b", 50, 5), Seen::Again);
        // Once one expires, there is room again.
        assert_eq!(seen.first_use("c", 50, 11), Seen::First);
        assert_eq!(seen.first_use("b", 50, 11), Seen::Again);
    }
}
