//! Authenticate: token verification (signature, expiry, audience, kind) and
//! the live checks, each revocation refused at the very next call.

use chataigne_auth::INTERNAL_AUDIENCE;
use chataigne_common::ErrorCode;
use chataigne_common::demo::{DEMO_CLIENT_ID, ORG_BISTRO, USER_MANAGER, USER_REVOKED};

use crate::support::{
    GATEWAY_CREDENTIAL, Harness, RESOURCE, assert_code, assert_unauthenticated,
    authenticate_request, forge, now, parts,
};

const SCOPES: &[&str] = &["openid", "orders.read", "orders.write", "catalog.read"];

async fn a_valid_token_returns_the_principal_and_an_assertion(h: &Harness) {
    let issued = h.token(USER_MANAGER, SCOPES).await;
    let response = h
        .authenticate(&issued.access_token, RESOURCE)
        .await
        .unwrap();
    let principal = response.principal.unwrap();
    assert_eq!(principal.user_id, USER_MANAGER);
    assert_eq!(principal.client_id, DEMO_CLIENT_ID);
    assert_eq!(principal.session_id, issued.session_id);
    assert_eq!(principal.scopes, SCOPES);
    assert_eq!(principal.display_name, "Camille Martin");
    assert!(!principal.platform_admin);

    let (header, claims) = parts(&response.assertion);
    assert_eq!(header["typ"], "principal+jwt");
    assert_eq!(header["alg"], "ES256");
    assert_eq!(claims["aud"], INTERNAL_AUDIENCE);
    assert_eq!(claims["iss"], h.app.issuer());
    assert_eq!(claims["sub"], USER_MANAGER);
    assert_eq!(claims["sid"], issued.session_id);
    assert_eq!(claims["scope"], SCOPES.join(" "));
    assert_eq!(claims["exp"].as_i64(), Some(response.assertion_expires_at));
    assert_eq!(claims["jti"].as_str().map(str::len), Some(32));
    let ttl = response.assertion_expires_at - now();
    assert!((100..=121).contains(&ttl), "assertion ttl {ttl}");

    let (header, claims) = parts(&issued.access_token);
    assert_eq!(header["typ"], "at+jwt");
    assert_eq!(claims["aud"], RESOURCE);
    assert_eq!(claims["client_id"], DEMO_CLIENT_ID);
    for claim in [
        "iss",
        "sub",
        "aud",
        "client_id",
        "scope",
        "sid",
        "exp",
        "iat",
        "jti",
    ] {
        assert!(claims.get(claim).is_some(), "claim {claim}");
    }
}

async fn an_expired_token_is_refused(h: &Harness) {
    let issued = h.token(USER_MANAGER, SCOPES).await;
    let (header, mut claims) = parts(&issued.access_token);
    let (kid, pkcs8) = h.signing_key().await;
    assert_eq!(header["kid"], kid.as_str());
    // Re-signed with the real key: only the expiry differs.
    claims["iat"] = (now() - 3600).into();
    claims["exp"] = (now() - 60).into();
    let expired = forge(&claims, "at+jwt", &kid, &pkcs8);
    assert_unauthenticated(h.authenticate(&expired, RESOURCE).await, "token_expired");
    // The same forge with a valid expiry is accepted: the harness is sound.
    claims["exp"] = (now() + 60).into();
    let fresh = forge(&claims, "at+jwt", &kid, &pkcs8);
    assert!(h.authenticate(&fresh, RESOURCE).await.is_ok());
}

async fn a_token_for_another_audience_is_refused(h: &Harness) {
    let issued = h
        .token_for(USER_MANAGER, SCOPES, "https://other.example/mcp/v1")
        .await;
    assert_unauthenticated(
        h.authenticate(&issued.access_token, RESOURCE).await,
        "audience_mismatch",
    );
}

async fn a_tampered_token_is_refused(h: &Harness) {
    let issued = h.token(USER_MANAGER, &["orders.read"]).await;
    let token = issued.access_token;
    let (head, signature) = token.rsplit_once('.').unwrap();
    let mut bytes = signature.as_bytes().to_vec();
    bytes[10] = if bytes[10] == b'A' { b'B' } else { b'A' };
    let tampered = format!("{head}.{}", String::from_utf8(bytes).unwrap());
    assert_unauthenticated(h.authenticate(&tampered, RESOURCE).await, "token_invalid");

    // A widened scope claim under the original signature.
    let (_, mut claims) = parts(&token);
    claims["scope"] = "orders.read orders.write".into();
    let segments: Vec<&str> = token.split('.').collect();
    let payload = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        serde_json::to_vec(&claims).unwrap(),
    );
    let widened = format!("{}.{payload}.{}", segments[0], segments[2]);
    assert_unauthenticated(h.authenticate(&widened, RESOURCE).await, "token_invalid");

    assert_unauthenticated(
        h.authenticate("not-a-token", RESOURCE).await,
        "token_invalid",
    );
    assert_unauthenticated(h.authenticate("", RESOURCE).await, "token_invalid");
}

async fn a_token_signed_by_another_key_is_refused(h: &Harness) {
    let issued = h.token(USER_MANAGER, SCOPES).await;
    let (header, claims) = parts(&issued.access_token);
    let other = aws_lc_rs::signature::EcdsaKeyPair::generate_pkcs8(
        &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &aws_lc_rs::rand::SystemRandom::new(),
    )
    .unwrap();
    let kid = header["kid"].as_str().unwrap();
    let forged = forge(&claims, "at+jwt", kid, other.as_ref());
    assert_unauthenticated(h.authenticate(&forged, RESOURCE).await, "token_invalid");
    let forged = forge(&claims, "at+jwt", "unknown-kid", other.as_ref());
    assert_unauthenticated(h.authenticate(&forged, RESOURCE).await, "token_invalid");
}

async fn assertions_and_access_tokens_are_not_interchangeable(h: &Harness) {
    let assertion = h.assertion(USER_MANAGER, SCOPES).await;
    // An assertion presented as an access token, even with its own audience.
    assert_unauthenticated(
        h.authenticate(&assertion, INTERNAL_AUDIENCE).await,
        "token_invalid",
    );
    // An access token minted for the internal audience presented as an
    // assertion: checked as a service-account token, whose audience it lacks.
    let access = h.token_for(USER_MANAGER, SCOPES, INTERNAL_AUDIENCE).await;
    assert_unauthenticated(
        h.authorize(&access.access_token, "orders.read", ORG_BISTRO, None)
            .await,
        "audience_mismatch",
    );
    assert_unauthenticated(
        h.resolve(&access.access_token, "orders.read").await,
        "audience_mismatch",
    );
    // And a typ-swapped copy re-signed with the real key is still told apart.
    let (_, claims) = parts(&assertion);
    let (kid, pkcs8) = h.signing_key().await;
    let swapped = forge(&claims, "at+jwt", &kid, &pkcs8);
    assert_unauthenticated(
        h.authenticate(&swapped, RESOURCE).await,
        "audience_mismatch",
    );
    assert!(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, None)
            .await
            .is_ok()
    );
}

/// Authenticate and Authorize both work, then `revoke` runs, then both are
/// refused with `reason` at the very next call.
async fn refused_after(
    h: &Harness,
    reason: &str,
    revoke: impl AsyncFnOnce(&Harness, &chataigne_auth::IssuedToken),
) {
    let issued = h.token(USER_MANAGER, SCOPES).await;
    let assertion = h
        .authenticate(&issued.access_token, RESOURCE)
        .await
        .unwrap()
        .assertion;
    assert!(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, None)
            .await
            .is_ok()
    );
    revoke(h, &issued).await;
    assert_unauthenticated(h.authenticate(&issued.access_token, RESOURCE).await, reason);
    assert_unauthenticated(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, None)
            .await,
        reason,
    );
    assert_unauthenticated(h.resolve(&assertion, "orders.read").await, reason);
}

async fn a_revoked_session_is_refused_at_the_next_call(h: &Harness) {
    refused_after(h, "session_revoked", async |h, issued| {
        h.app.revoke_session(&issued.session_id).await.unwrap();
    })
    .await;
}

async fn a_revoked_user_is_refused_at_the_next_call(h: &Harness) {
    refused_after(h, "user_inactive", async |h, _| {
        h.app
            .set_user_status(USER_MANAGER, "revoked")
            .await
            .unwrap();
    })
    .await;
}

async fn a_banned_user_is_refused_at_the_next_call(h: &Harness) {
    refused_after(h, "user_inactive", async |h, _| {
        h.app.set_user_status(USER_MANAGER, "banned").await.unwrap();
    })
    .await;
}

async fn a_disabled_client_is_refused_at_the_next_call(h: &Harness) {
    refused_after(h, "client_disabled", async |h, _| {
        h.app
            .set_client_enabled(DEMO_CLIENT_ID, false)
            .await
            .unwrap();
    })
    .await;
}

async fn a_revoked_consent_is_refused_at_the_next_call(h: &Harness) {
    refused_after(h, "consent_revoked", async |h, _| {
        h.app
            .revoke_consent(USER_MANAGER, DEMO_CLIENT_ID)
            .await
            .unwrap();
    })
    .await;
}

async fn a_reactivated_user_is_accepted_again(h: &Harness) {
    let issued = h.token(USER_MANAGER, SCOPES).await;
    h.app.set_user_status(USER_MANAGER, "banned").await.unwrap();
    assert!(
        h.authenticate(&issued.access_token, RESOURCE)
            .await
            .is_err()
    );
    h.app.set_user_status(USER_MANAGER, "active").await.unwrap();
    assert!(h.authenticate(&issued.access_token, RESOURCE).await.is_ok());
}

async fn a_seeded_revoked_user_is_refused(h: &Harness) {
    let issued = h.token(USER_REVOKED, SCOPES).await;
    assert_unauthenticated(
        h.authenticate(&issued.access_token, RESOURCE).await,
        "user_inactive",
    );
}

async fn a_narrowed_consent_narrows_the_effective_scopes(h: &Harness) {
    let issued = h.token(USER_MANAGER, SCOPES).await;
    let before = h
        .authenticate(&issued.access_token, RESOURCE)
        .await
        .unwrap();
    h.app
        .set_consent_scopes(USER_MANAGER, DEMO_CLIENT_ID, &["openid", "orders.read"])
        .await
        .unwrap();
    let after = h
        .authenticate(&issued.access_token, RESOURCE)
        .await
        .unwrap();
    assert_eq!(after.principal.unwrap().scopes, ["openid", "orders.read"]);
    let (_, claims) = parts(&after.assertion);
    assert_eq!(claims["scope"], "openid orders.read");
    // An assertion minted before the change is narrowed live too.
    let decoded = assert_code(
        h.authorize(&before.assertion, "orders.write", ORG_BISTRO, None)
            .await,
        ErrorCode::ScopeRequired,
    );
    assert_eq!(
        decoded.metadata,
        vec![("scope".to_owned(), "orders.write".to_owned())]
    );
    assert!(
        h.authorize(&before.assertion, "orders.read", ORG_BISTRO, None)
            .await
            .is_ok()
    );

    // Consent covering none of the token's business scopes: still
    // authenticated, with only the intersection.
    h.app
        .set_consent_scopes(USER_MANAGER, DEMO_CLIENT_ID, &["analytics.read"])
        .await
        .unwrap();
    let none = h
        .authenticate(&issued.access_token, RESOURCE)
        .await
        .unwrap();
    assert!(none.principal.unwrap().scopes.is_empty());
}

async fn only_the_gateway_credential_is_served(h: &Harness) {
    let issued = h.token(USER_MANAGER, SCOPES).await;
    let token = issued.access_token.as_str();
    let mut refused = vec![
        ("no credential", authenticate_request(token, RESOURCE, None)),
        (
            "another credential",
            authenticate_request(token, RESOURCE, Some("not the gateway's credential at all")),
        ),
        (
            "a prefix of it",
            authenticate_request(token, RESOURCE, Some(&GATEWAY_CREDENTIAL[..32])),
        ),
    ];
    // The credential under another metadata name is no credential.
    let mut elsewhere = authenticate_request(token, RESOURCE, None);
    elsewhere
        .metadata_mut()
        .insert("authorization", GATEWAY_CREDENTIAL.parse().unwrap());
    refused.push(("in authorization", elsewhere));
    for (what, request) in refused {
        let status = h
            .client
            .clone()
            .authenticate(request)
            .await
            .expect_err(what);
        assert_eq!(status.code(), tonic::Code::PermissionDenied, "{what}");
        assert!(status.details().is_empty(), "{what}: no detail");
        assert!(
            status.metadata().get("grpc-status-details-bin").is_none(),
            "{what}: no ErrorInfo"
        );
        assert_eq!(status.message(), "permission denied", "{what}");
    }
    let served = h
        .client
        .clone()
        .authenticate(authenticate_request(
            token,
            RESOURCE,
            Some(GATEWAY_CREDENTIAL),
        ))
        .await
        .expect("the gateway's credential is served")
        .into_inner();
    assert_eq!(served.principal.unwrap().user_id, USER_MANAGER);
}

async fn without_a_configured_credential_nobody_is_served(h: &Harness) {
    let issued = h.token(USER_MANAGER, SCOPES).await;
    let open = Harness::start_with(h.backend, |config| config.gateway_credential = None)
        .await
        .expect("a second harness on the same backend");
    let token = open.token(USER_MANAGER, SCOPES).await;
    for credential in [None, Some(GATEWAY_CREDENTIAL), Some("")] {
        let status = open
            .client
            .clone()
            .authenticate(authenticate_request(
                &token.access_token,
                RESOURCE,
                credential,
            ))
            .await
            .expect_err("no caller admitted");
        assert_eq!(status.code(), tonic::Code::PermissionDenied);
    }
    open.finish().await;
    assert!(h.authenticate(&issued.access_token, RESOURCE).await.is_ok());
}

async fn the_assertion_lasts_no_longer_than_the_calls_deadline(h: &Harness) {
    let issued = h.token(USER_MANAGER, SCOPES).await;
    let with_deadline = |valid_for_ms: i64| {
        let mut request =
            authenticate_request(&issued.access_token, RESOURCE, Some(GATEWAY_CREDENTIAL));
        request.get_mut().valid_for_ms = valid_for_ms;
        let mut client = h.client.clone();
        async move { client.authenticate(request).await }
    };
    let before = now();
    let response = with_deadline(15_000).await.unwrap().into_inner();
    let (_, claims) = parts(&response.assertion);
    let lifetime = claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert_eq!(lifetime, 15, "the call's deadline");
    assert!(response.assertion_expires_at <= now() + 15);
    assert!(response.assertion_expires_at >= before + 15);
    // Beyond the configured bound, the bound.
    let response = with_deadline(3_600_000).await.unwrap().into_inner();
    let (_, claims) = parts(&response.assertion);
    let lifetime = claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert_eq!(lifetime, 120, "assertion_ttl_secs");
    // A negative deadline is a broken request.
    let decoded = assert_code(
        with_deadline(-1).await.map(tonic::Response::into_inner),
        ErrorCode::InvalidArguments,
    );
    assert_eq!(decoded.violations[0].field, "valid_for_ms");
}

async fn a_missing_resource_is_an_invalid_argument(h: &Harness) {
    let issued = h.token(USER_MANAGER, SCOPES).await;
    let decoded = assert_code(
        h.authenticate(&issued.access_token, "").await,
        ErrorCode::InvalidArguments,
    );
    assert_eq!(decoded.violations[0].field, "resource");
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Harness::start(crate::support::Backend::Sqlite)
        .await
        .expect("SQLite is always available"),
    postgres: Harness::start(crate::support::Backend::Postgres).await,
    run: |harness| (&harness),
    finish: harness.finish().await,
    tests: [
        a_valid_token_returns_the_principal_and_an_assertion,
        an_expired_token_is_refused,
        a_token_for_another_audience_is_refused,
        a_tampered_token_is_refused,
        a_token_signed_by_another_key_is_refused,
        assertions_and_access_tokens_are_not_interchangeable,
        a_revoked_session_is_refused_at_the_next_call,
        a_revoked_user_is_refused_at_the_next_call,
        a_banned_user_is_refused_at_the_next_call,
        a_disabled_client_is_refused_at_the_next_call,
        a_revoked_consent_is_refused_at_the_next_call,
        a_reactivated_user_is_accepted_again,
        a_seeded_revoked_user_is_refused,
        a_narrowed_consent_narrows_the_effective_scopes,
        a_missing_resource_is_an_invalid_argument,
        only_the_gateway_credential_is_served,
        without_a_configured_credential_nobody_is_served,
        the_assertion_lasts_no_longer_than_the_calls_deadline,
    ],
}
