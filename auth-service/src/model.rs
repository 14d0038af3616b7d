//! Domain types of the auth-service: principals, the live state read on every
//! call, user statuses, access grants and the clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// Who is calling, as established by `Authenticate` and re-checked live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub user_id: String,
    pub client_id: String,
    pub session_id: String,
    /// Token scopes still covered by the live consent, in token order.
    pub scopes: Vec<String>,
    pub platform_admin: bool,
    pub display_name: String,
}

impl Principal {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Account status of a user. Only `Active` users may act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserStatus {
    Active,
    Revoked,
    Banned,
}

impl UserStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            UserStatus::Active => "active",
            UserStatus::Revoked => "revoked",
            UserStatus::Banned => "banned",
        }
    }

    pub fn parse(value: &str) -> Option<UserStatus> {
        match value {
            "active" => Some(UserStatus::Active),
            "revoked" => Some(UserStatus::Revoked),
            "banned" => Some(UserStatus::Banned),
            _ => None,
        }
    }
}

/// The session, user, client and consent behind a token, read in one query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveState {
    pub user_id: String,
    pub client_id: String,
    pub session_expires_at_ms: i64,
    pub session_revoked: bool,
    pub user_status: String,
    pub platform_admin: bool,
    pub display_name: String,
    pub client_enabled: bool,
    /// `public`, `confidential` or `service`.
    pub client_kind: String,
    /// Space-separated consented scopes; `None` when there is no consent row.
    pub consent_scopes: Option<String>,
    pub consent_revoked: bool,
    /// The presented token's signing key is stored and not retired (true
    /// when no token was presented).
    pub token_key_active: bool,
    /// The key this replica signs with is stored and not retired.
    pub signing_key_active: bool,
}

/// One membership granting a permission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub organization_id: String,
    /// `None` for an organization-level membership.
    pub location_id: Option<String>,
}

/// The tenants on which a principal holds a permission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub principal: Principal,
    pub all_tenants: bool,
    pub organization_ids: Vec<String>,
    pub location_ids: Vec<String>,
}

/// A principal and the assertion that carries it to internal callers.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub principal: Principal,
    pub assertion: String,
    /// Unix seconds.
    pub assertion_expires_at: i64,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Splits a space-separated scope string.
pub fn split_scopes(scopes: &str) -> impl Iterator<Item = &str> {
    scopes.split(' ').filter(|s| !s.is_empty())
}
