//! What a production configuration refuses: the settings made for demos and
//! tests (checked by each service, on PostgreSQL, unless
//! `allow_insecure_development` is set), plain-http URLs outside loopback,
//! and weak secrets (too short, one repeated pattern, a sequence, too few
//! distinct bytes). Every refusal names the environment variable the
//! operator sets ([`crate::config::env_var`]), never the value.

use crate::config::env_var;

/// The key that lets a PostgreSQL deployment keep the settings made for
/// demos and tests.
pub const ALLOW_INSECURE: &str = "allow_insecure_development";

/// Whether `url`'s host is loopback: `localhost`, `127.0.0.0/8` or `[::1]`.
pub fn is_loopback_url(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match authority.rsplit_once('@') {
        Some((_, host)) => host,
        None => authority,
    };
    if let Some(v6) = host.strip_prefix('[') {
        let inner = v6.split(']').next().unwrap_or_default();
        return inner
            .parse::<std::net::Ipv6Addr>()
            .is_ok_and(|ip| ip.is_loopback());
    }
    let host = host.split(':').next().unwrap_or_default();
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Refuses a plain `http://` URL whose host is not loopback at `key`.
pub fn require_https_outside_loopback(key: &str, url: &str) -> anyhow::Result<()> {
    let plain = url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
    anyhow::ensure!(
        !plain || is_loopback_url(url),
        "{key} ({}) is a plain http:// URL outside loopback: use https://, or set {ALLOW_INSECURE} ({}) = true for a development deployment",
        env_var(key),
        env_var(ALLOW_INSECURE)
    );
    Ok(())
}

/// Refuses a switch made for demos or tests (`why` says what it does).
pub fn refuse_development_switch(key: &str, why: &str) -> anyhow::Result<()> {
    anyhow::bail!(
        "{key} ({}) {why}: refused with PostgreSQL; set {ALLOW_INSECURE} ({}) = true only for a development deployment",
        env_var(key),
        env_var(ALLOW_INSECURE)
    )
}

/// The warning every start logs while `allow_insecure_development` is set.
pub fn warn_insecure_development(service: &str) {
    tracing::warn!(
        service,
        variable = %env_var(ALLOW_INSECURE),
        "allow_insecure_development is set: demo and test settings are accepted; never use this in production"
    );
}

/// Refuses a secret (`bytes`, the value or its decoding) at `key` shorter
/// than `min_len` bytes or of low entropy. `what` names the entry when the
/// key holds several (e.g. "entry 2 of ").
pub fn check_secret(key: &str, what: &str, bytes: &[u8], min_len: usize) -> anyhow::Result<()> {
    let variable = env_var(key);
    anyhow::ensure!(
        bytes.len() >= min_len,
        "{what}{key} ({variable}) must be at least {min_len} bytes: generate it, e.g. `openssl rand -base64 32`"
    );
    if let Some(reason) = low_entropy(bytes) {
        anyhow::bail!(
            "{what}{key} ({variable}) is {reason}: generate a random one, e.g. `openssl rand -base64 32`"
        );
    }
    Ok(())
}

/// Why `bytes` is guessable, if it is: one short pattern repeated, a
/// sequence (most steps between neighbours 0 or ±1), or few distinct bytes.
fn low_entropy(bytes: &[u8]) -> Option<&'static str> {
    let len = bytes.len();
    if len == 0 {
        return Some("empty");
    }
    let repeated = (1..=len / 4).any(|unit| {
        bytes
            .iter()
            .enumerate()
            .skip(unit)
            .all(|(i, byte)| *byte == bytes[i - unit])
    });
    if repeated {
        return Some("one short pattern repeated");
    }
    let steps = bytes.windows(2).filter(|pair| {
        let step = pair[1].wrapping_sub(pair[0]);
        matches!(step, 0 | 1 | 255)
    });
    if steps.count() * 2 > len.saturating_sub(1) {
        return Some("a sequence of neighbouring bytes");
    }
    let mut seen = [false; 256];
    for byte in bytes {
        seen[usize::from(*byte)] = true;
    }
    if seen.iter().filter(|seen| **seen).count() < 8 {
        return Some("made of too few distinct bytes");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised_and_nothing_else() {
        for url in [
            "http://127.0.0.1:8081",
            "http://localhost/x",
            "http://[::1]:9/",
            "http://127.9.9.9",
            "http://LOCALHOST:1",
        ] {
            assert!(is_loopback_url(url), "{url}");
        }
        for url in [
            "http://auth.example",
            "http://127.0.0.1.evil.example",
            "http://0.0.0.0:8081",
            "http://localhost.evil.example",
            "http://127.0.0.1@evil.example",
            "http://10.0.0.1",
            "127.0.0.1",
        ] {
            assert!(!is_loopback_url(url), "{url}");
        }
    }

    #[test]
    fn plain_http_outside_loopback_is_refused_naming_the_variable() {
        assert!(require_https_outside_loopback("issuer", "https://auth.example").is_ok());
        assert!(require_https_outside_loopback("issuer", "http://127.0.0.1:8081").is_ok());
        for url in [
            "http://auth.example",
            "HTTP://auth.example",
            "http://0.0.0.0:8081",
        ] {
            let error = require_https_outside_loopback("issuer", url)
                .unwrap_err()
                .to_string();
            assert!(error.contains("CHATAIGNE_ISSUER"), "{error}");
            assert!(
                error.contains("CHATAIGNE_ALLOW_INSECURE_DEVELOPMENT"),
                "{error}"
            );
        }
    }

    #[test]
    fn weak_secrets_are_refused_and_random_ones_accepted() {
        let key = "cursor.keys";
        for weak in [
            "short".as_bytes(),
            &[b'a'; 32],
            b"abababababababababababababababab",
            b"passwordpasswordpasswordpassword",
            b"abcdefghijklmnopqrstuvwxyz012345",
            b"0123456789012345678901234567890123",
            b"zyxwvutsrqponmlkjihgfedcbazyxwvu",
            b"aabbaabbccaabbaabbccaabbaabbccab",
        ] {
            let error = check_secret(key, "", weak, 32).unwrap_err().to_string();
            assert!(error.contains("CHATAIGNE_CURSOR__KEYS"), "{error}");
            assert!(
                !error.contains(std::str::from_utf8(weak).unwrap()),
                "the value is never echoed: {error}"
            );
        }
        for strong in [
            "q8J1r0-Zk2VwYh4uN7bT3sXeLm9PaCdF".as_bytes(),
            b"5f0c9a3e7b1d2846c0e9f7a3b5d1e2c4",
            b"chataigne test key-encryption k!",
        ] {
            assert!(check_secret(key, "", strong, 32).is_ok());
        }
    }
}
