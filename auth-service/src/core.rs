//! The three operations of the AuthService, independent of any transport:
//! authenticate an access token, authorize one permission on one target, and
//! resolve the tenants where a permission is held. Every call reads live
//! state, the state of the signing keys included: a token whose key was
//! retired or deleted (by any replica or the admin command) is refused at
//! the next request, and a replica whose own signing key was retired
//! reloads its keys before it signs anything.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chataigne_common::grants::{self, Grants, Membership, Refusal, TenantAccess};

use crate::assertions::{Assertions, Content};
use crate::error::{AuthError, AuthFailure};
use crate::key_encryption::KeyProtection;
use crate::model::{Access, Authenticated, Grant, LiveState, Principal, now_ms};
use crate::store::oauth::ClientKind;
use crate::store::{KeyCheck, LiveMemberships, Store};
use crate::tokens::{INTERNAL_AUDIENCE, TokenKind, Tokens, Verified};
use crate::{keys, live};

/// Least time between two key reloads triggered by an unknown `kid`.
const UNKNOWN_KID_RELOAD_INTERVAL: Duration = Duration::from_millis(500);

/// Verification and live authorization over a store and a key ring.
pub struct Core {
    store: Arc<dyn Store>,
    tokens: Tokens,
    /// How signing keys are sealed at rest (read at every key reload).
    key_protection: KeyProtection,
    /// Principal assertions, one per call.
    assertions: Assertions,
    service_audience: String,
    last_reload: Mutex<Option<Instant>>,
}

impl Core {
    pub fn new(
        store: Arc<dyn Store>,
        tokens: Tokens,
        key_protection: KeyProtection,
        assertion_ttl_secs: u64,
        service_audience: String,
    ) -> Core {
        Core {
            store,
            tokens,
            key_protection,
            assertions: Assertions::new(i64::try_from(assertion_ttl_secs).unwrap_or(120)),
            service_audience,
            last_reload: Mutex::new(None),
        }
    }

    pub fn service_audience(&self) -> &str {
        &self.service_audience
    }

    /// Re-reads the signing keys from the store.
    pub async fn reload_keys(&self) -> anyhow::Result<()> {
        let ring = keys::reload(self.store(), &self.key_protection).await?;
        self.tokens.replace_keys(ring);
        if let Ok(mut last) = self.last_reload.lock() {
            *last = Some(Instant::now());
        }
        Ok(())
    }

    /// Verifies a token, first reloading the keys (at most every
    /// [`UNKNOWN_KID_RELOAD_INTERVAL`]) when its `kid` is unknown here: another
    /// replica or the admin command may have rotated the key.
    pub async fn verify(
        &self,
        kind: TokenKind,
        token: &str,
        audience: &str,
        now_ms: i64,
    ) -> Result<Verified, AuthError> {
        if !self.tokens.knows_kid_of(token) && self.reload_due() {
            self.reload_or_warn().await;
        }
        Ok(self.tokens.verify(kind, token, audience, now_ms / 1000)?)
    }

    async fn reload_or_warn(&self) {
        if let Err(error) = self.reload_keys().await {
            tracing::warn!(%error, "reloading signing keys failed");
        }
    }

    /// The live state behind `session_id`, with the state of the key that
    /// signed the presented token (`token_kid`) and of this replica's signing
    /// key. A signing key retired elsewhere is replaced (keys reloaded) before
    /// the caller signs anything; a token whose key is retired or deleted is
    /// refused by [`live::evaluate`], and the keys are reloaded (throttled) so
    /// that this replica stops knowing that key.
    pub async fn live_state(
        &self,
        session_id: &str,
        token_kid: Option<&str>,
    ) -> Result<Option<LiveState>, AuthError> {
        let signing = self.tokens.keys();
        let keys = KeyCheck {
            token_kid,
            signing_kid: signing.signing_kid(),
        };
        let state = self.store.live_state(session_id, keys).await?;
        self.settle_keys(state.as_ref()).await;
        Ok(state)
    }

    /// [`Core::live_state`] and the `(membership, permission)` pairs of the
    /// session's user, read in one statement.
    async fn live_state_with_memberships(
        &self,
        session_id: &str,
        token_kid: &str,
    ) -> Result<Option<LiveMemberships>, AuthError> {
        let signing = self.tokens.keys();
        let keys = KeyCheck {
            token_kid: Some(token_kid),
            signing_kid: signing.signing_kid(),
        };
        let found = self
            .store
            .live_state_with_memberships(session_id, keys)
            .await?;
        self.settle_keys(found.as_ref().map(|(state, _)| state))
            .await;
        Ok(found)
    }

    /// Reloads the keys when the live state says a key this replica still
    /// holds was retired: at once for its signing key, throttled for a
    /// presented token's key.
    async fn settle_keys(&self, state: Option<&LiveState>) {
        let Some(state) = state else {
            return;
        };
        if !state.signing_key_active {
            tracing::info!("this replica's signing key was retired; reloading signing keys");
            self.reload_or_warn().await;
        } else if !state.token_key_active && self.reload_due() {
            self.reload_or_warn().await;
        }
    }

    fn reload_due(&self) -> bool {
        match self.last_reload.lock() {
            Ok(mut last) => {
                let due = last.is_none_or(|at| at.elapsed() >= UNKNOWN_KID_RELOAD_INTERVAL);
                if due {
                    *last = Some(Instant::now());
                }
                due
            }
            Err(_) => false,
        }
    }

    pub fn store(&self) -> &dyn Store {
        &*self.store
    }

    pub fn key_protection(&self) -> &KeyProtection {
        &self.key_protection
    }

    pub fn tokens(&self) -> &Tokens {
        &self.tokens
    }

    /// Verifies `access_token` for `resource`, re-checks the live state and
    /// memberships (one statement) and returns a new principal assertion
    /// carrying them for one call lasting at most `valid_for` (expiring no
    /// later than the token either, see `assertions`).
    pub async fn authenticate(
        &self,
        access_token: &str,
        resource: &str,
        valid_for: Option<Duration>,
    ) -> Result<Authenticated, AuthError> {
        let now = now_ms();
        let Verified { claims, kid } = self
            .verify(TokenKind::Access, access_token, resource, now)
            .await?;
        let (state, memberships) = match self.live_state_with_memberships(&claims.sid, &kid).await?
        {
            Some((state, memberships)) => (Some(state), memberships),
            None => (None, Vec::new()),
        };
        require_kind(state.as_ref(), false)?;
        let principal = live::evaluate(state.as_ref(), &claims, now)?;
        let grants = live_grants(&principal, memberships);
        let issued = self.assertions.issue(
            &self.tokens,
            Content {
                sub: principal.user_id.clone(),
                client_id: principal.client_id.clone(),
                scope: principal.scopes.join(" "),
                sid: principal.session_id.clone(),
                grants,
            },
            claims.exp,
            valid_for,
            now / 1000,
        )?;
        Ok(Authenticated {
            principal,
            assertion: issued.token,
            assertion_expires_at: issued.exp,
        })
    }

    /// Allows `permission` on the organization (or its location) when the
    /// principal still holds the scope and is a platform admin or has a
    /// current membership there whose role grants it.
    pub async fn authorize(
        &self,
        assertion: &str,
        permission: &str,
        organization_id: &str,
        location_id: Option<&str>,
    ) -> Result<Principal, AuthError> {
        let now = now_ms();
        let (Verified { claims, kid }, service) = self.verify_internal(assertion, now).await?;
        let signing = self.tokens.keys();
        let keys = KeyCheck {
            token_kid: Some(&kid),
            signing_kid: signing.signing_kid(),
        };
        let found = self
            .store
            .live_state_with_grant(&claims.sid, permission, organization_id, location_id, keys)
            .await?;
        let (state, granted) = match found {
            Some((state, granted)) => (Some(state), granted),
            None => (None, false),
        };
        self.settle_keys(state.as_ref()).await;
        require_kind(state.as_ref(), service)?;
        let principal = live::evaluate(state.as_ref(), &claims, now)?;
        grants::decide(
            principal.has_scope(permission),
            grants::Standing::of(principal.platform_admin, || granted),
            permission,
        )
        .map_err(refused)?;
        Ok(principal)
    }

    /// The tenants on which the principal currently holds `permission`.
    pub async fn resolve_access(
        &self,
        assertion: &str,
        permission: &str,
    ) -> Result<Access, AuthError> {
        let now = now_ms();
        let (Verified { claims, kid }, service) = self.verify_internal(assertion, now).await?;
        let state = self.live_state(&claims.sid, Some(&kid)).await?;
        require_kind(state.as_ref(), service)?;
        let principal = live::evaluate(state.as_ref(), &claims, now)?;
        require_scope(&principal, permission)?;
        let found = if principal.platform_admin {
            Vec::new()
        } else {
            self.store.grants(&principal.user_id, permission).await?
        };
        let TenantAccess {
            all_tenants,
            organization_ids,
            location_ids,
        } = TenantAccess::from_memberships(
            principal.platform_admin,
            found
                .iter()
                .map(|g| (g.organization_id.as_str(), g.location_id.as_deref())),
        );
        Ok(Access {
            principal,
            all_tenants,
            organization_ids,
            location_ids,
        })
    }

    /// Verifies the credential an internal caller presents: a principal
    /// assertion, or a service-account access token for the service audience.
    /// Returns the verified token and whether it is a service-account token.
    async fn verify_internal(
        &self,
        credential: &str,
        now_ms: i64,
    ) -> Result<(Verified, bool), AuthError> {
        Ok(match Tokens::claimed_kind(credential) {
            Some(TokenKind::Access) => (
                self.verify(
                    TokenKind::Access,
                    credential,
                    &self.service_audience,
                    now_ms,
                )
                .await?,
                true,
            ),
            _ => (
                self.verify(TokenKind::Assertion, credential, INTERNAL_AUDIENCE, now_ms)
                    .await?,
                false,
            ),
        })
    }
}

/// The principal's current memberships with the permissions each grants
/// (role permissions ∩ effective scopes), from the `(membership, permission)`
/// rows of this request's live read; `None` above [`grants::MAX_MEMBERSHIPS`].
fn live_grants(principal: &Principal, rows: Vec<(Grant, String)>) -> Option<Grants> {
    let mut memberships: Vec<Membership> = Vec::new();
    // Rows come ordered by membership: consecutive rows of one membership
    // are merged.
    for (grant, permission) in rows {
        if !principal.has_scope(&permission) {
            continue;
        }
        match memberships.last_mut() {
            Some(last)
                if last.organization_id == grant.organization_id
                    && last.location_id == grant.location_id =>
            {
                if !last.permissions.contains(&permission) {
                    last.permissions.push(permission);
                }
            }
            _ => memberships.push(Membership {
                organization_id: grant.organization_id,
                location_id: grant.location_id,
                permissions: vec![permission],
            }),
        }
        if memberships.len() > grants::MAX_MEMBERSHIPS {
            return None;
        }
    }
    Grants::bounded(principal.platform_admin, memberships)
}

/// Service-account tokens must come from service clients, and user tokens
/// (and the assertions made from them) from user clients.
fn require_kind(state: Option<&LiveState>, service: bool) -> Result<(), AuthFailure> {
    match state {
        Some(state) if (state.client_kind == ClientKind::Service.as_str()) != service => {
            Err(AuthFailure::TokenInvalid)
        }
        _ => Ok(()),
    }
}

fn require_scope(principal: &Principal, permission: &str) -> Result<(), AuthError> {
    if principal.has_scope(permission) {
        Ok(())
    } else {
        Err(refused(Refusal::ScopeRequired(permission.to_owned())))
    }
}

fn refused(refusal: Refusal) -> AuthError {
    match refusal {
        Refusal::ScopeRequired(scope) => AuthError::ScopeRequired { scope },
        Refusal::Forbidden => AuthError::Forbidden,
    }
}
