//! Sign-in for the consent page: password check (Argon2id, on a blocking
//! thread, equal time for unknown accounts), browser sessions stored as
//! hashes, and the CSRF token bound to the browser's CSRF cookie, its
//! sign-in session and the authorization request.

use aws_lc_rs::digest::{SHA256, digest};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::AuthError;
use crate::model::{UserStatus, now_ms};

use super::{AuthorizationRequest, OAuthServer, password, secrets};

/// Longest email or password accepted by the form.
const MAX_CREDENTIAL_LEN: usize = 512;

impl OAuthServer {
    /// Checks email and password; on success opens a browser session and
    /// returns its secret (the cookie value). `None` for any failure: wrong
    /// password, unknown or inactive account are not told apart.
    pub async fn sign_in(&self, email: &str, password: &str) -> Result<Option<String>, AuthError> {
        if email.len() > MAX_CREDENTIAL_LEN || password.len() > MAX_CREDENTIAL_LEN {
            return Ok(None);
        }
        let store = self.core.store();
        let login = store.user_login(email.trim()).await?;
        let stored = login
            .as_ref()
            .and_then(|login| login.password_hash.clone())
            .unwrap_or_else(|| password::dummy_hash().to_owned());
        let candidate = password.to_owned();
        let matches = tokio::task::spawn_blocking(move || password::verify(&candidate, &stored))
            .await
            .map_err(|_| AuthError::Internal("password check task failed".into()))?;
        let Some(login) = login.filter(|login| {
            matches
                && login.password_hash.is_some()
                && UserStatus::parse(&login.status) == Some(UserStatus::Active)
        }) else {
            return Ok(None);
        };
        let secret = secrets::generate()?;
        let now = now_ms();
        let ttl_ms = i64::try_from(self.config.browser_session_ttl_secs)
            .unwrap_or(3600)
            .saturating_mul(1000);
        store
            .create_browser_session(
                &secrets::hash(&secret),
                &login.user_id,
                now,
                now.saturating_add(ttl_ms),
            )
            .await?;
        Ok(Some(secret))
    }

    /// The active user of a browser session cookie, if still valid.
    pub async fn signed_in_user(&self, cookie: &str) -> Result<Option<String>, AuthError> {
        if cookie.is_empty() || cookie.len() > 128 {
            return Ok(None);
        }
        Ok(self
            .core
            .store()
            .browser_session_user(&secrets::hash(cookie), now_ms())
            .await?)
    }

    /// The test-only user approved without a page, when configured.
    pub fn auto_approve_user(&self) -> Option<&str> {
        Some(self.config.auto_approve_user_for_tests.as_str()).filter(|u| !u.is_empty())
    }
}

/// The CSRF token of a form. It is bound to the browser's CSRF cookie, to
/// its sign-in session (the consent form; `None` for the sign-in form, shown
/// before there is one) and to the authorization request the form carries:
/// a token taken from another browser, another session or another request
/// does not verify, and a page on another origin can read none of the inputs.
pub fn csrf_token(
    csrf_cookie: &str,
    session_cookie: Option<&str>,
    request: &AuthorizationRequest,
) -> String {
    let mut material = Vec::new();
    let mut push = |part: Option<&str>| match part {
        Some(part) => {
            material.push(1);
            material.extend_from_slice(&(part.len() as u64).to_be_bytes());
            material.extend_from_slice(part.as_bytes());
        }
        None => material.push(0),
    };
    push(Some("chataigne/csrf/v1"));
    push(Some(csrf_cookie));
    push(session_cookie);
    for field in request.fields() {
        push(field);
    }
    URL_SAFE_NO_PAD.encode(digest(&SHA256, &material))
}

/// Whether the form's token matches the cookies and the request (constant time).
pub fn csrf_valid(
    csrf_cookie: Option<&str>,
    session_cookie: Option<&str>,
    request: &AuthorizationRequest,
    form_token: &str,
) -> bool {
    match csrf_cookie {
        Some(cookie) if !cookie.is_empty() => {
            secrets::equal(&csrf_token(cookie, session_cookie, request), form_token)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(scope: &str) -> AuthorizationRequest {
        AuthorizationRequest {
            client_id: Some("client".into()),
            scope: Some(scope.into()),
            ..AuthorizationRequest::default()
        }
    }

    #[test]
    fn the_csrf_token_is_bound_to_the_cookie_the_session_and_the_request() {
        let read = request("orders.read");
        let token = csrf_token("cookie-a", Some("session-a"), &read);
        assert!(csrf_valid(
            Some("cookie-a"),
            Some("session-a"),
            &read,
            &token
        ));
        assert!(!csrf_valid(
            Some("cookie-b"),
            Some("session-a"),
            &read,
            &token
        ));
        assert!(!csrf_valid(
            Some("cookie-a"),
            Some("session-b"),
            &read,
            &token
        ));
        assert!(!csrf_valid(Some("cookie-a"), None, &read, &token));
        let write = request("orders.read orders.write");
        assert!(!csrf_valid(
            Some("cookie-a"),
            Some("session-a"),
            &write,
            &token
        ));
        assert!(!csrf_valid(None, Some("session-a"), &read, &token));
        let empty = AuthorizationRequest::default();
        assert!(!csrf_valid(
            Some(""),
            None,
            &empty,
            &csrf_token("", None, &empty)
        ));
        // A field moved to another name is another request.
        let moved = AuthorizationRequest {
            state: Some("client".into()),
            scope: Some("orders.read".into()),
            ..AuthorizationRequest::default()
        };
        assert_ne!(csrf_token("c", None, &read), csrf_token("c", None, &moved));
    }
}
