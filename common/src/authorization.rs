//! Reading the `Authorization` header (HTTP) or `authorization` metadata
//! (gRPC): the scheme, then the credentials, read the same way by every
//! service. A bearer token is a token68 (RFC 9110 §11.2, RFC 6750 §2.1).

/// The name of the header and of the gRPC metadata entry (lower case, as
/// gRPC requires).
pub const AUTHORIZATION: &str = "authorization";

/// The credentials of `value` when its scheme is `scheme`: the scheme is
/// compared case-insensitively (RFC 9110 §11.1) and separated from the
/// credentials by one or more spaces; the value is read trimmed. `None`
/// for another scheme or a value without a space after the scheme.
pub fn credentials<'a>(value: &'a str, scheme: &str) -> Option<&'a str> {
    let (name, rest) = value.trim().split_once(' ')?;
    name.eq_ignore_ascii_case(scheme)
        .then(|| rest.trim_start_matches(' '))
}

/// The token of `Bearer <token68>`; anything else (another scheme, no
/// token, a token with spaces, quotes, commas or misplaced `=`) is `None`.
pub fn bearer_token(value: &str) -> Option<&str> {
    credentials(value, "bearer").filter(|token| is_token68(token))
}

/// Whether `value` is a token68: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~"
/// / "+" / "/" ) *"="`.
pub fn is_token68(value: &str) -> bool {
    let body = value.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bearer_token68_counts() {
        for refused in [
            "",
            "Basic abc",
            "Bearer ",
            "Bearer",
            "Bearertok",
            "Bearer\ttok",
            "Bearer tok en",
            "Bearer tok,other",
            "Bearer \"tok\"",
            "Bearer ===",
            "Token tok",
            "Bearer tok=a",
        ] {
            assert_eq!(bearer_token(refused), None, "{refused:?}");
        }
        for (accepted, token) in [
            ("bearer  tok", "tok"),
            ("Bearer tok", "tok"),
            ("BEARER tok", "tok"),
            (" Bearer tok ", "tok"),
            ("bEaReR eyJ.a-b_c~d+e/f==", "eyJ.a-b_c~d+e/f=="),
        ] {
            assert_eq!(bearer_token(accepted), Some(token), "{accepted:?}");
        }
    }

    #[test]
    fn credentials_of_another_scheme_are_left_to_its_reader() {
        assert_eq!(credentials("Basic YTpi", "basic"), Some("YTpi"));
        assert_eq!(credentials("basic  YTpi", "Basic"), Some("YTpi"));
        assert_eq!(credentials("Bearer tok", "basic"), None);
        assert_eq!(credentials("Basic", "basic"), None);
        assert_eq!(credentials("Basic ", "basic"), None);
    }
}
