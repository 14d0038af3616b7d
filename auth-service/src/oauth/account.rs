//! The signed-in account as the consent page shows it: who it is (name,
//! e-mail) and which of the product's scopes its roles can use, so that a
//! scope the account cannot use is shown as such and left out of the grant.

use std::collections::BTreeSet;

use chataigne_common::scopes::{Family, Scope};

use crate::error::AuthError;
use crate::model::now_ms;

use super::{OAuthServer, secrets};

/// A signed-in account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub user_id: String,
    pub name: String,
    pub email: String,
    pub platform_admin: bool,
    /// The business permissions its roles grant, on any organization or location.
    pub permissions: BTreeSet<String>,
}

impl Account {
    /// Whether the account's roles can use `scope`: identity scopes always,
    /// a business scope when one of its roles grants it, a platform-admin
    /// scope when it is a platform administrator. Unknown scopes: never.
    pub fn can_use(&self, scope: &str) -> bool {
        match Scope::find(scope).map(|scope| scope.family) {
            Some(Family::Identity) => true,
            Some(Family::Business) => self.permissions.contains(scope),
            Some(Family::Admin) => self.platform_admin,
            None => false,
        }
    }

    /// The scopes of `requested` the account can use, in order.
    pub fn usable(&self, requested: &[String]) -> Vec<String> {
        requested
            .iter()
            .filter(|scope| self.can_use(scope))
            .cloned()
            .collect()
    }
}

impl OAuthServer {
    /// The account `user_id` with the permissions of its roles.
    pub async fn account(&self, user_id: &str) -> Result<Option<Account>, AuthError> {
        let store = self.core.store();
        let Some(user) = store.user_record(user_id).await? else {
            return Ok(None);
        };
        let roles: BTreeSet<String> = store
            .user_memberships(user_id)
            .await?
            .into_iter()
            .map(|membership| membership.role)
            .collect();
        let permissions = store
            .role_permissions()
            .await?
            .into_iter()
            .filter(|(role, _)| roles.contains(role))
            .map(|(_, permission)| permission)
            .collect();
        Ok(Some(Account {
            user_id: user.id,
            name: user.display_name,
            email: user.email,
            platform_admin: user.platform_admin,
            permissions,
        }))
    }

    /// Ends the browser session of `cookie` (switching account).
    pub async fn sign_out(&self, cookie: &str) -> Result<(), AuthError> {
        if cookie.is_empty() || cookie.len() > 128 {
            return Ok(());
        }
        self.core
            .store()
            .revoke_browser_session(&secrets::hash(cookie), now_ms())
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_can_use_identity_scopes_its_roles_permissions_and_admin_only_as_admin() {
        let account = Account {
            user_id: "u".into(),
            name: "Camille".into(),
            email: "camille@example.fr".into(),
            platform_admin: false,
            permissions: ["orders.read".to_owned()].into_iter().collect(),
        };
        assert!(account.can_use("openid") && account.can_use("orders.read"));
        assert!(!account.can_use("orders.write"));
        assert!(!account.can_use("admin.locations.create"));
        assert!(!account.can_use("unknown.scope"));
        let requested: Vec<String> = ["openid", "orders.write", "orders.read"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(account.usable(&requested), ["openid", "orders.read"]);
        let admin = Account {
            platform_admin: true,
            ..account
        };
        assert!(admin.can_use("admin.locations.create"));
    }
}
