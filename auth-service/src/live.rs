//! The live checks applied on every call: the key that signed the token is
//! still active, and the session, user, client and consent behind it must
//! still allow it; the effective scopes are the token's scopes still covered
//! by the consent.

use crate::error::AuthFailure;
use crate::model::{LiveState, Principal, UserStatus, split_scopes};
use crate::tokens::Claims;

/// Checks `state` (read just now for `claims.sid`) and builds the principal.
pub fn evaluate(
    state: Option<&LiveState>,
    claims: &Claims,
    now_ms: i64,
) -> Result<Principal, AuthFailure> {
    let state = state.ok_or(AuthFailure::SessionRevoked)?;
    if !state.token_key_active || state.user_id != claims.sub || state.client_id != claims.client_id
    {
        return Err(AuthFailure::TokenInvalid);
    }
    if state.session_revoked || state.session_expires_at_ms <= now_ms {
        return Err(AuthFailure::SessionRevoked);
    }
    if UserStatus::parse(&state.user_status) != Some(UserStatus::Active) {
        return Err(AuthFailure::UserInactive);
    }
    if !state.client_enabled {
        return Err(AuthFailure::ClientDisabled);
    }
    let consented = match (&state.consent_scopes, state.consent_revoked) {
        (Some(scopes), false) => scopes,
        _ => return Err(AuthFailure::ConsentRevoked),
    };
    let mut scopes: Vec<String> = Vec::new();
    for scope in split_scopes(&claims.scope) {
        if split_scopes(consented).any(|c| c == scope) && !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_owned());
        }
    }
    Ok(Principal {
        user_id: state.user_id.clone(),
        client_id: state.client_id.clone(),
        session_id: claims.sid.clone(),
        scopes,
        platform_admin: state.platform_admin,
        display_name: state.display_name.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> LiveState {
        LiveState {
            user_id: "u".into(),
            client_id: "c".into(),
            session_expires_at_ms: 2_000,
            session_revoked: false,
            user_status: "active".into(),
            platform_admin: false,
            display_name: "U".into(),
            client_enabled: true,
            client_kind: "public".into(),
            consent_scopes: Some("orders.read catalog.read".into()),
            consent_revoked: false,
            token_key_active: true,
            signing_key_active: true,
        }
    }

    fn claims() -> Claims {
        Claims {
            iss: "i".into(),
            sub: "u".into(),
            aud: "a".into(),
            client_id: "c".into(),
            scope: "openid orders.read orders.write orders.read".into(),
            sid: "s".into(),
            exp: 0,
            iat: 0,
            jti: "j".into(),
            grants: None,
        }
    }

    #[test]
    fn effective_scopes_are_the_consented_part_of_the_token() {
        let principal = evaluate(Some(&state()), &claims(), 1_000).unwrap();
        assert_eq!(principal.scopes, vec!["orders.read".to_owned()]);
    }

    #[test]
    fn each_live_condition_has_its_reason() {
        let check = |mutate: &dyn Fn(&mut LiveState)| {
            let mut s = state();
            mutate(&mut s);
            evaluate(Some(&s), &claims(), 1_000).err()
        };
        assert_eq!(
            evaluate(None, &claims(), 1_000).err(),
            Some(AuthFailure::SessionRevoked)
        );
        assert_eq!(
            check(&|s| s.session_revoked = true),
            Some(AuthFailure::SessionRevoked)
        );
        assert_eq!(
            check(&|s| s.session_expires_at_ms = 1_000),
            Some(AuthFailure::SessionRevoked)
        );
        assert_eq!(
            check(&|s| s.user_status = "banned".into()),
            Some(AuthFailure::UserInactive)
        );
        assert_eq!(
            check(&|s| s.user_status = "revoked".into()),
            Some(AuthFailure::UserInactive)
        );
        assert_eq!(
            check(&|s| s.client_enabled = false),
            Some(AuthFailure::ClientDisabled)
        );
        assert_eq!(
            check(&|s| s.consent_revoked = true),
            Some(AuthFailure::ConsentRevoked)
        );
        assert_eq!(
            check(&|s| s.consent_scopes = None),
            Some(AuthFailure::ConsentRevoked)
        );
        assert_eq!(
            check(&|s| s.user_id = "other".into()),
            Some(AuthFailure::TokenInvalid)
        );
        assert_eq!(
            check(&|s| s.token_key_active = false),
            Some(AuthFailure::TokenInvalid)
        );
    }
}
