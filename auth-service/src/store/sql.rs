//! The SQL shared by both backends (SQLite accepts `$N` placeholders, times are
//! BIGINT Unix milliseconds everywhere) and the rows it decodes into.

use crate::model::{Grant, LiveState};

/// Columns of the live check: session ⋈ user ⋈ client ⟕ consent.
macro_rules! live_select {
    () => {
        "SELECT s.user_id, s.client_id, s.expires_at AS session_expires_at, \
                s.revoked_at AS session_revoked_at, u.status AS user_status, \
                u.platform_admin, u.display_name, c.enabled AS client_enabled, c.kind AS client_kind, \
                k.scopes AS consent_scopes, k.revoked_at AS consent_revoked_at"
    };
}

macro_rules! live_tables {
    () => {
        " FROM sessions s \
          JOIN users u ON u.id = s.user_id \
          JOIN oauth_clients c ON c.client_id = s.client_id \
          LEFT JOIN consents k ON k.user_id = s.user_id AND k.client_id = s.client_id"
    };
}

macro_rules! live_from {
    () => {
        concat!(live_tables!(), " WHERE s.id = $1")
    };
}

/// Whether the signing key of the presented token (`$token`) and the key this
/// replica signs with (`$signing`) are still active: stored and not retired.
/// Read in the same pass as the rest of the live state, so that a retired or
/// deleted key stops verifying at the next request on every replica.
macro_rules! key_columns {
    ($token:literal, $signing:literal) => {
        concat!(
            ", (SELECT COUNT(*) FROM signing_keys WHERE kid = ",
            $token,
            " AND retired_at IS NULL) AS token_key_count",
            ", (SELECT COUNT(*) FROM signing_keys WHERE kid = ",
            $signing,
            " AND retired_at IS NULL) AS signing_key_count"
        )
    };
}

/// `$1` session, `$2` the token's kid (NULL: no token), `$3` the signing kid.
pub(super) const LIVE_STATE: &str = concat!(live_select!(), key_columns!("$2", "$3"), live_from!());

/// `$2` permission, `$3` organization, `$4` location (NULL: organization-level
/// only), `$5` the token's kid, `$6` the signing kid.
pub(super) const LIVE_STATE_WITH_GRANT: &str = concat!(
    live_select!(),
    key_columns!("$5", "$6"),
    ", (SELECT COUNT(*) FROM memberships m \
        JOIN role_permissions rp ON rp.role = m.role AND rp.permission = $2 \
        WHERE m.user_id = s.user_id AND m.organization_id = $3 \
          AND (m.location_id IS NULL OR m.location_id = $4)) AS grant_count",
    live_from!()
);

/// [`LIVE_STATE`] and, on the same rows, every current membership of the
/// session's user with each permission its role grants: one row per
/// (membership, permission), ordered by organization, location and
/// permission, or one row of NULL membership columns when there is none.
/// `$1` session, `$2` the token's kid, `$3` the signing kid.
pub(super) const LIVE_STATE_WITH_MEMBERSHIPS: &str = concat!(
    live_select!(),
    key_columns!("$2", "$3"),
    ", m.organization_id AS membership_organization_id, \
       m.location_id AS membership_location_id, rp.permission AS membership_permission",
    live_tables!(),
    " LEFT JOIN memberships m ON m.user_id = s.user_id \
      LEFT JOIN role_permissions rp ON rp.role = m.role \
      WHERE s.id = $1 \
      ORDER BY m.organization_id, m.location_id, rp.permission"
);

pub(super) const GRANTS: &str = "SELECT m.organization_id, m.location_id FROM memberships m \
     JOIN role_permissions rp ON rp.role = m.role AND rp.permission = $2 \
     WHERE m.user_id = $1 ORDER BY m.organization_id, m.location_id";

pub(super) const ACTIVE_SIGNING_KEYS: &str = "SELECT kid, pkcs8, created_at FROM signing_keys \
     WHERE retired_at IS NULL ORDER BY created_at, kid";
pub(super) const ALL_SIGNING_KEYS: &str =
    "SELECT kid, pkcs8, created_at FROM signing_keys ORDER BY created_at, kid";
pub(super) const INSERT_SIGNING_KEY: &str =
    "INSERT INTO signing_keys (kid, pkcs8, created_at) VALUES ($1, $2, $3)";
pub(super) const REPLACE_SIGNING_KEY_MATERIAL: &str =
    "UPDATE signing_keys SET pkcs8 = $3 WHERE kid = $1 AND pkcs8 = $2";

pub(super) const USER_EXISTS: &str = "SELECT COUNT(*) FROM users WHERE id = $1";
pub(super) const CLIENT_EXISTS: &str = "SELECT COUNT(*) FROM oauth_clients WHERE client_id = $1";

pub(super) const INSERT_SESSION: &str = "INSERT INTO sessions (id, user_id, client_id, created_at, expires_at) \
     VALUES ($1, $2, $3, $4, $5)";
pub(super) const REVOKE_SESSION: &str =
    "UPDATE sessions SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1";

// Ending a user's sessions (`$1` user, `$2` client or NULL for all, `$3`
// now): the refresh tokens of those sessions, the sessions, and (for all
// clients) the browser sessions of the consent page, in one transaction.
pub(super) const REVOKE_USER_REFRESH_TOKENS: &str = "UPDATE refresh_tokens \
     SET revoked_at = COALESCE(revoked_at, $3) WHERE session_id IN \
     (SELECT id FROM sessions WHERE user_id = $1 AND ($2 IS NULL OR client_id = $2))";
pub(super) const REVOKE_USER_SESSIONS: &str = "UPDATE sessions SET revoked_at = $3 \
     WHERE user_id = $1 AND ($2 IS NULL OR client_id = $2) AND revoked_at IS NULL";
pub(super) const REVOKE_USER_BROWSER_SESSIONS: &str = "UPDATE browser_sessions \
     SET revoked_at = $3 WHERE user_id = $1 AND $2 IS NULL AND revoked_at IS NULL";

pub(super) const USER_CONSENTS: &str = "SELECT client_id, scopes, revoked_at FROM consents \
     WHERE user_id = $1 ORDER BY client_id";

pub(super) const CONSENT: &str =
    "SELECT scopes, revoked_at FROM consents WHERE user_id = $1 AND client_id = $2";
pub(super) const GRANT_CONSENT: &str = "INSERT INTO consents (user_id, client_id, scopes, granted_at) \
     VALUES ($1, $2, $3, $4) \
     ON CONFLICT (user_id, client_id) DO UPDATE \
     SET scopes = excluded.scopes, granted_at = excluded.granted_at, revoked_at = NULL";
pub(super) const REVOKE_CONSENT: &str = "UPDATE consents SET revoked_at = COALESCE(revoked_at, $3) \
     WHERE user_id = $1 AND client_id = $2";
pub(super) const SET_CONSENT_SCOPES: &str =
    "UPDATE consents SET scopes = $3 WHERE user_id = $1 AND client_id = $2";

pub(super) const SET_USER_STATUS: &str = "UPDATE users SET status = $2 WHERE id = $1";
pub(super) const SET_PLATFORM_ADMIN: &str = "UPDATE users SET platform_admin = $2 WHERE id = $1";
pub(super) const SET_CLIENT_ENABLED: &str =
    "UPDATE oauth_clients SET enabled = $2 WHERE client_id = $1";

pub(super) const DELETE_MEMBERSHIP: &str = "DELETE FROM memberships \
     WHERE user_id = $1 AND organization_id = $2 AND COALESCE(location_id, '') = COALESCE($3, '')";
pub(super) const INSERT_MEMBERSHIP: &str = "INSERT INTO memberships \
     (id, user_id, organization_id, location_id, role, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING";

pub(super) const PUT_CLIENT: &str = "INSERT INTO oauth_clients \
     (client_id, name, enabled, redirect_uris, created_at) VALUES ($1, $2, TRUE, $3, $4) \
     ON CONFLICT (client_id) DO UPDATE SET name = excluded.name, redirect_uris = excluded.redirect_uris";
pub(super) const SEED_CLIENT: &str = "INSERT INTO oauth_clients \
     (client_id, name, enabled, redirect_uris, created_at) VALUES ($1, $2, TRUE, $3, $4) \
     ON CONFLICT (client_id) DO NOTHING";
pub(super) const SEED_USER: &str = "INSERT INTO users \
     (id, email, display_name, status, platform_admin, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
     ON CONFLICT (id) DO NOTHING";
pub(super) const SEED_ROLE_PERMISSION: &str =
    "INSERT INTO role_permissions (role, permission) VALUES ($1, $2) ON CONFLICT DO NOTHING";

/// One row of [`LIVE_STATE`].
#[derive(sqlx::FromRow)]
pub(super) struct LiveRow {
    user_id: String,
    client_id: String,
    session_expires_at: i64,
    session_revoked_at: Option<i64>,
    user_status: String,
    platform_admin: bool,
    display_name: String,
    client_enabled: bool,
    client_kind: String,
    consent_scopes: Option<String>,
    consent_revoked_at: Option<i64>,
    token_key_count: i64,
    signing_key_count: i64,
}

impl LiveRow {
    /// The live state; `keys` is what the query was asked about.
    pub(super) fn into_state(self, keys: &super::KeyCheck<'_>) -> LiveState {
        LiveState {
            token_key_active: keys.token_kid.is_none() || self.token_key_count > 0,
            signing_key_active: self.signing_key_count > 0,
            user_id: self.user_id,
            client_id: self.client_id,
            session_expires_at_ms: self.session_expires_at,
            session_revoked: self.session_revoked_at.is_some(),
            user_status: self.user_status,
            platform_admin: self.platform_admin,
            display_name: self.display_name,
            client_enabled: self.client_enabled,
            client_kind: self.client_kind,
            consent_scopes: self.consent_scopes,
            consent_revoked: self.consent_revoked_at.is_some(),
        }
    }
}

/// One row of [`LIVE_STATE_WITH_GRANT`].
#[derive(sqlx::FromRow)]
pub(super) struct LiveGrantRow {
    #[sqlx(flatten)]
    live: LiveRow,
    grant_count: i64,
}

impl LiveGrantRow {
    pub(super) fn into_parts(self, keys: &super::KeyCheck<'_>) -> (LiveState, bool) {
        (self.live.into_state(keys), self.grant_count > 0)
    }
}

/// The membership columns of one row of [`LIVE_STATE_WITH_MEMBERSHIPS`].
#[derive(sqlx::FromRow)]
pub(super) struct MembershipColumns {
    membership_organization_id: Option<String>,
    membership_location_id: Option<String>,
    membership_permission: Option<String>,
}

impl MembershipColumns {
    /// This row's membership and permission, if it has one.
    fn into_membership(self) -> Option<(Grant, String)> {
        let grant = Grant {
            organization_id: self.membership_organization_id?,
            location_id: self.membership_location_id,
        };
        Some((grant, self.membership_permission?))
    }
}

/// The rows of [`LIVE_STATE_WITH_MEMBERSHIPS`] decoded: the live state from
/// the first row only (it is the same on all; a user has one row per
/// membership and permission) and the `(membership, permission)` pairs of
/// all rows, in row order; `None` without rows (no such session).
pub(super) fn live_memberships<R: sqlx::Row>(
    rows: &[R],
    keys: &super::KeyCheck<'_>,
) -> Result<Option<super::LiveMemberships>, sqlx::Error>
where
    LiveRow: for<'r> sqlx::FromRow<'r, R>,
    MembershipColumns: for<'r> sqlx::FromRow<'r, R>,
{
    use sqlx::FromRow;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let live = LiveRow::from_row(first)?.into_state(keys);
    let mut memberships = Vec::with_capacity(rows.len());
    for row in rows {
        memberships.extend(MembershipColumns::from_row(row)?.into_membership());
    }
    Ok(Some((live, memberships)))
}

/// One row of [`GRANTS`].
#[derive(sqlx::FromRow)]
pub(super) struct GrantRow {
    organization_id: String,
    location_id: Option<String>,
}

impl From<GrantRow> for Grant {
    fn from(row: GrantRow) -> Grant {
        Grant {
            organization_id: row.organization_id,
            location_id: row.location_id,
        }
    }
}
