//! The management API of users, roles, memberships and client removal (admin
//! CLI, tests): create and list users, define roles, list a user's
//! memberships, remove a client.

use crate::app::AuthApp;
use crate::error::AuthError;
use crate::model::now_ms;
use crate::store::NewUser;
use crate::store::admin::{MembershipRecord, UserRecord};

/// Longest e-mail address (RFC 5321's path limit).
const EMAIL_MAX_LEN: usize = 254;
/// Longest display name, in characters.
const DISPLAY_NAME_MAX_CHARS: usize = 200;

/// A user to create.
#[derive(Clone)]
pub struct NewUserRequest {
    pub email: String,
    pub display_name: String,
    /// Set when given (12 to 512 characters); without one the user cannot
    /// sign in until `users set-password`.
    pub password: Option<String>,
}

impl std::fmt::Debug for NewUserRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewUserRequest")
            .field("email", &self.email)
            .field("display_name", &self.display_name)
            .finish_non_exhaustive()
    }
}

fn check_email(email: &str) -> Result<(), AuthError> {
    let well_formed = email.len() <= EMAIL_MAX_LEN
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && email
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.'));
    if well_formed {
        Ok(())
    } else {
        Err(AuthError::invalid(
            "email",
            format!("must be an e-mail address of at most {EMAIL_MAX_LEN} characters"),
        ))
    }
}

impl AuthApp {
    /// Creates an active user (not a platform admin) with a fresh `usr_…` id
    /// and, when given, its password; returns the id. An e-mail address
    /// already in use (in any letter case) is refused.
    pub async fn add_user(&self, request: NewUserRequest) -> Result<String, AuthError> {
        check_email(&request.email)?;
        let display_name = request.display_name.trim();
        if display_name.is_empty()
            || display_name.chars().count() > DISPLAY_NAME_MAX_CHARS
            || display_name.chars().any(char::is_control)
        {
            return Err(AuthError::invalid(
                "display_name",
                format!("must be 1 to {DISPLAY_NAME_MAX_CHARS} printable characters"),
            ));
        }
        if let Some(password) = &request.password {
            crate::admin_oauth::check_password(password)?;
        }
        let store = self.core().store();
        if store.user_login(&request.email).await?.is_some() {
            return Err(AuthError::invalid(
                "email",
                "a user with this e-mail address exists",
            ));
        }
        let user = NewUser {
            id: format!("usr_{}", uuid::Uuid::now_v7().simple()),
            email: request.email,
            display_name: display_name.to_owned(),
            status: "active".to_owned(),
            platform_admin: false,
        };
        store.insert_user(&user, now_ms()).await?;
        if let Some(password) = &request.password {
            self.set_user_password(&user.id, password).await?;
        }
        Ok(user.id)
    }

    /// Every user (service accounts' users included), by id.
    pub async fn users(&self) -> Result<Vec<UserRecord>, AuthError> {
        Ok(self.core().store().users().await?)
    }

    /// The memberships of `user_id` with their roles.
    pub async fn memberships(&self, user_id: &str) -> Result<Vec<MembershipRecord>, AuthError> {
        let store = self.core().store();
        if !store.user_exists(user_id).await? {
            return Err(AuthError::NotFound { what: "user" });
        }
        Ok(store.user_memberships(user_id).await?)
    }

    /// Every role with its permissions, `(role, permission)` by role.
    pub async fn role_permissions(&self) -> Result<Vec<(String, String)>, AuthError> {
        Ok(self.core().store().role_permissions().await?)
    }

    /// Sets the permissions `role` grants (scope names; an empty list makes
    /// it grant nothing); every membership with the role follows at its next
    /// request.
    pub async fn set_role_permissions<S: AsRef<str>>(
        &self,
        role: &str,
        permissions: &[S],
    ) -> Result<(), AuthError> {
        if role.is_empty()
            || role.len() > 64
            || !role
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        {
            return Err(AuthError::invalid(
                "role",
                "must be 1 to 64 letters, digits, '_', '-' or '.'",
            ));
        }
        let mut granted: Vec<String> = Vec::new();
        for permission in permissions
            .iter()
            .flat_map(|p| crate::model::split_scopes(p.as_ref()))
        {
            if !chataigne_common::scopes::is_known(permission) {
                return Err(AuthError::invalid(
                    "permissions",
                    format!("unknown scope {permission:?}"),
                ));
            }
            if !granted.iter().any(|g| g == permission) {
                granted.push(permission.to_owned());
            }
        }
        Ok(self
            .core()
            .store()
            .set_role_permissions(role, &granted)
            .await?)
    }

    /// Removes a client with its consents, sessions and tokens (refused from
    /// the next request) and, for a service account, its service user and
    /// memberships.
    pub async fn remove_client(&self, client_id: &str) -> Result<(), AuthError> {
        if self.core().store().delete_client(client_id).await? {
            Ok(())
        } else {
            Err(AuthError::NotFound { what: "client" })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check_email;

    #[test]
    fn only_plausible_addresses_are_accepted() {
        assert!(check_email("chef@bistro.example").is_ok());
        for bad in [
            "",
            "chef",
            "@bistro.example",
            "chef@localhost",
            "chef @bistro.example",
        ] {
            assert!(check_email(bad).is_err(), "{bad:?}");
        }
        assert!(check_email(&format!("{}@bistro.example", "a".repeat(250))).is_err());
    }
}
