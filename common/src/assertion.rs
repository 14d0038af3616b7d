//! The contract of principal assertions, the short-lived tokens the
//! auth-service signs for internal callers: one definition of their audience,
//! `typ` and clock leeway, read by the signer and by every verifier, and the
//! metadata in which the gateway, their only requester, presents its
//! credential to `Authenticate`.
//!
//! An assertion is for one call of the tool-service: its audience is the
//! tool-service, it expires no later than the deadline of that call (the
//! gateway passes it), and its unique `jti` is accepted once by the
//! tool-service replica it is sent to.

/// What every principal assertion is and how its times are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssertionContract;

impl AssertionContract {
    /// The `aud` of every principal assertion: the tool-service.
    pub const AUDIENCE: &'static str = "chataigne-tool-service";
    /// The gRPC metadata carrying the gateway's credential on `Authenticate`.
    pub const CALLER_METADATA: &'static str = "x-chataigne-gateway-credential";
    /// Least length of the gateway's credential (bytes).
    pub const CALLER_CREDENTIAL_MIN_LEN: usize = 32;
    /// The JOSE `typ` of every principal assertion.
    pub const TYP: &'static str = "principal+jwt";
    /// Clock skew tolerated on `exp`, `nbf` and `iat` (seconds), for
    /// assertions and access tokens alike: a token is refused from this long
    /// after its `exp`, and until this long before its `nbf`.
    pub const LEEWAY_SECS: i64 = 5;

    /// Whether a JOSE `typ` names a principal assertion (case-insensitive,
    /// with or without the `application/` prefix, RFC 7515 §4.1.9).
    pub fn accepts_typ(typ: &str) -> bool {
        typ_matches(typ, Self::TYP)
    }

    /// Whether a token with these times is usable at `now_secs`: not expired
    /// beyond the leeway, not used before its `nbf` or `iat` beyond it.
    pub fn times_hold(exp: i64, nbf: Option<i64>, iat: i64, now_secs: i64) -> TimeCheck {
        let leeway = Self::LEEWAY_SECS;
        if exp < now_secs - leeway {
            TimeCheck::Expired
        } else if nbf.is_some_and(|nbf| nbf > now_secs + leeway) || iat > now_secs + leeway {
            TimeCheck::NotYetValid
        } else {
            TimeCheck::Valid
        }
    }
}

/// The outcome of [`AssertionContract::times_hold`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeCheck {
    Valid,
    Expired,
    NotYetValid,
}

/// Whether `typ` equals `expected`, case-insensitively, with or without the
/// `application/` media-type prefix.
pub fn typ_matches(typ: &str, expected: &str) -> bool {
    typ.strip_prefix("application/")
        .unwrap_or(typ)
        .eq_ignore_ascii_case(expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_typ_is_matched_with_or_without_the_media_type_prefix() {
        assert!(AssertionContract::accepts_typ("principal+jwt"));
        assert!(AssertionContract::accepts_typ("application/Principal+JWT"));
        assert!(!AssertionContract::accepts_typ("at+jwt"));
        assert!(!AssertionContract::accepts_typ("JWT"));
    }

    #[test]
    fn times_are_checked_with_the_leeway() {
        let check = AssertionContract::times_hold;
        assert_eq!(check(100, None, 90, 105), TimeCheck::Valid);
        assert_eq!(check(100, None, 90, 106), TimeCheck::Expired);
        assert_eq!(check(200, Some(105), 90, 100), TimeCheck::Valid);
        assert_eq!(check(200, Some(106), 90, 100), TimeCheck::NotYetValid);
        assert_eq!(check(200, None, 106, 100), TimeCheck::NotYetValid);
    }
}
