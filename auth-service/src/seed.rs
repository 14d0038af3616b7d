//! The demo data set (users, memberships, role permissions, the demo OAuth
//! client) written idempotently at start when `seed_demo` is on.

use chataigne_common::demo::{self, DemoTarget};

use crate::model::now_ms;
use crate::store::{NewClient, NewMembership, NewUser, SeedData, Store, StoreError};

/// Redirect URIs of the demo client (loopback, any port per RFC 8252).
pub const DEMO_REDIRECT_URIS: &[&str] = &["http://127.0.0.1/callback", "http://localhost/callback"];

/// The demo set as store rows.
pub fn demo_seed() -> SeedData {
    let mut seed = SeedData::default();
    for user in demo::USERS {
        seed.users.push(NewUser {
            id: user.id.to_owned(),
            email: user.email.to_owned(),
            display_name: user.display_name.to_owned(),
            status: user.status.to_owned(),
            platform_admin: user.platform_admin,
        });
        for membership in user.memberships {
            let (organization_id, location_id) = match &membership.target {
                DemoTarget::Organization(org) => (*org, None),
                DemoTarget::Location {
                    organization_id,
                    location_id,
                } => (*organization_id, Some(*location_id)),
            };
            seed.memberships.push(NewMembership {
                id: format!(
                    "mem_{}_{}_{}",
                    user.id,
                    organization_id,
                    location_id.unwrap_or("org")
                ),
                user_id: user.id.to_owned(),
                organization_id: organization_id.to_owned(),
                location_id: location_id.map(str::to_owned),
                role: membership.role.to_owned(),
            });
        }
    }
    for (role, permissions) in demo::ROLE_PERMISSIONS {
        for permission in *permissions {
            seed.role_permissions
                .push(((*role).to_owned(), (*permission).to_owned()));
        }
    }
    seed.clients.push(NewClient {
        client_id: demo::DEMO_CLIENT_ID.to_owned(),
        name: "Chataigne demo assistant".to_owned(),
        redirect_uris_json: serde_json::json!(DEMO_REDIRECT_URIS).to_string(),
    });
    seed
}

/// The demo password's Argon2id hash, computed once per process: every demo
/// user shares the same public demo password, so one salted hash serves them
/// all (real users always get their own salt through `set_user_password`).
static DEMO_PASSWORD_HASH: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();

/// Gives every demo user without a password the demo password (Argon2id).
pub async fn seed_demo_passwords(store: &dyn Store) -> Result<(), StoreError> {
    let ids: Vec<String> = demo::USERS.iter().map(|u| u.id.to_owned()).collect();
    let missing = store.users_without_password(&ids).await?;
    if missing.is_empty() {
        return Ok(());
    }
    let hash = DEMO_PASSWORD_HASH
        .get_or_try_init(|| async {
            tokio::task::spawn_blocking(|| crate::oauth::password::hash(demo::DEMO_PASSWORD))
                .await
                .map_err(|e| StoreError::Failed(format!("password hashing task: {e}")))?
                .map_err(|e| StoreError::Failed(e.to_string()))
        })
        .await?;
    for user_id in missing {
        store.set_password_hash(&user_id, hash).await?;
    }
    Ok(())
}

/// Writes the demo set, keeping rows that already exist.
pub async fn seed_demo(store: &dyn Store) -> Result<(), StoreError> {
    store.apply_seed(&demo_seed(), now_ms()).await
}
