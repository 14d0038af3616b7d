//! Sign-in for the consent page: password check (Argon2id, on a blocking
//! thread, equal time for unknown accounts), browser sessions stored as
//! hashes, and the CSRF token bound to the browser's CSRF cookie.

use crate::error::AuthError;
use crate::model::{UserStatus, now_ms};

use super::{OAuthServer, password, secrets};

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

/// The CSRF token of the forms, derived from the browser's CSRF cookie: a
/// page on another origin can neither read the cookie nor compute the token.
pub fn csrf_token(csrf_cookie: &str) -> String {
    secrets::hash(&format!("csrf:{csrf_cookie}"))
}

/// Whether the form's token matches the cookie (constant time).
pub fn csrf_valid(csrf_cookie: Option<&str>, form_token: &str) -> bool {
    match csrf_cookie {
        Some(cookie) if !cookie.is_empty() => secrets::equal(&csrf_token(cookie), form_token),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_csrf_token_is_bound_to_the_cookie() {
        let token = csrf_token("cookie-a");
        assert!(csrf_valid(Some("cookie-a"), &token));
        assert!(!csrf_valid(Some("cookie-b"), &token));
        assert!(!csrf_valid(None, &token));
        assert!(!csrf_valid(Some(""), &csrf_token("")));
    }
}
