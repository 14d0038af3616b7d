//! The OAuth 2.1 authorization server over HTTP: sign-in and consent pages,
//! PKCE S256 only, exact redirect URIs, RFC 8707 resources, single-use codes,
//! rotating refresh tokens with reuse detection, revocation, service accounts
//! through client credentials, and signing-key rotation.

use chataigne_auth::{ClientKind, NewClientRequest};
use chataigne_common::ErrorCode;
use chataigne_common::demo::{DEMO_CLIENT_ID, LOC_PARIS, ORG_BISTRO, ORG_HARBOR, USER_MANAGER};

use crate::oauth_support::*;
use crate::support::{Harness, RESOURCE, assert_code, assert_unauthenticated, forge, parts};

async fn the_pages_sign_in_consent_and_hand_back_a_code(h: &Harness) {
    let (_, challenge) = pkce();
    let mut b = Browser::new(h);
    let (status, headers, html) = b
        .get(&authorize_query(
            &challenge,
            "orders.read location.read",
            "s",
        ))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        headers["content-security-policy"],
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
    );
    assert!(html.contains("id=\"sign-in\"") && !html.contains("<script"));
    let csrf_cookie = headers["set-cookie"].to_str().unwrap();
    assert!(csrf_cookie.contains("HttpOnly") && csrf_cookie.contains("SameSite=Lax"));
    let back = sign_in_and_approve(
        &mut b,
        &challenge,
        "orders.read location.read",
        "camille.martin@bistro.example",
    )
    .await;
    assert!(back.starts_with(REDIRECT), "{back}");
    assert_eq!(param(&back, "state").as_deref(), Some("st-1"));
    assert_eq!(param(&back, "iss").as_deref(), Some(h.app.issuer()));
    assert!(param(&back, "code").is_some());
}

async fn a_wrong_password_or_a_missing_csrf_token_is_refused(h: &Harness) {
    let (_, challenge) = pkce();
    let mut b = Browser::new(h);
    let (_, _, html) = b
        .get(&authorize_query(&challenge, "orders.read", "s"))
        .await;
    let csrf = field(&html, "csrf");
    let q = query(&format!(
        "http://x{}",
        authorize_query(&challenge, "orders.read", "s")
    ));
    let mut form: Vec<(String, String)> = q.clone();
    form.push(("csrf".into(), csrf.clone()));
    form.push(("email".into(), "camille.martin@bistro.example".into()));
    form.push(("password".into(), "wrong password".into()));
    let (status, _, page) = post_form(&mut b, "/authorize/login", &form).await;
    assert_eq!(status, 401);
    assert!(page.contains("not correct"));
    let mut forged = q;
    forged.push(("csrf".into(), "forged".into()));
    forged.push(("email".into(), "camille.martin@bistro.example".into()));
    forged.push((
        "password".into(),
        chataigne_common::demo::DEMO_PASSWORD.into(),
    ));
    let (status, _, _) = post_form(&mut b, "/authorize/login", &forged).await;
    assert_eq!(status, 403);
    // A revoked user cannot sign in even with the right password.
    let mut revoked: Vec<(String, String)> = query(&format!(
        "http://x{}",
        authorize_query(&challenge, "orders.read", "s")
    ));
    revoked.push(("csrf".into(), csrf));
    revoked.push(("email".into(), "former.employee@bistro.example".into()));
    revoked.push((
        "password".into(),
        chataigne_common::demo::DEMO_PASSWORD.into(),
    ));
    let (status, _, _) = post_form(&mut b, "/authorize/login", &revoked).await;
    assert_eq!(status, 401);
}

async fn authorization_requests_are_checked(h: &Harness) {
    let (_, challenge) = pkce();
    let mut b = Browser::new(h);
    let base = authorize_query(&challenge, "orders.read", "s9");
    // Shown to the user, never redirected: unknown client, unregistered redirect URI.
    for (from, to) in [
        (
            format!("client_id={DEMO_CLIENT_ID}"),
            "client_id=nobody".to_owned(),
        ),
        ("33418%2Fcallback".to_owned(), "33418%2Fother".to_owned()),
        ("127.0.0.1%3A33418".to_owned(), "evil.example".to_owned()),
        // URIs that merely parse to the registered one: surrounding spaces,
        // `http:/`, another case, another spelling of the address, a port
        // with a leading zero.
        (
            "redirect_uri=http".to_owned(),
            "redirect_uri=%20http".to_owned(),
        ),
        (
            "33418%2Fcallback".to_owned(),
            "33418%2Fcallback%20".to_owned(),
        ),
        ("http%3A%2F%2F127".to_owned(), "http%3A%2F127".to_owned()),
        ("http%3A%2F%2F127".to_owned(), "HTTP%3A%2F%2F127".to_owned()),
        ("127.0.0.1%3A33418".to_owned(), "127.1%3A33418".to_owned()),
        (
            "127.0.0.1%3A33418".to_owned(),
            "127.0.0.1%3A033418".to_owned(),
        ),
    ] {
        let request = base.replace(&from, &to);
        assert_ne!(request, base, "{to}");
        let (status, headers, _) = b.get(&request).await;
        assert_eq!(status, 400, "{to}");
        assert!(headers.get("location").is_none());
    }
    // Redirected back with an error: plain PKCE, no challenge, bad resource, unknown scope.
    for (from, to, error) in [
        (
            "code_challenge_method=S256",
            "code_challenge_method=plain",
            "invalid_request",
        ),
        ("&code_challenge_method=S256", "", "invalid_request"),
        (
            "response_type=code",
            "response_type=token",
            "unsupported_response_type",
        ),
        (
            "resource=https",
            "resource=https%3A%2F%2Fevil.example%2Fmcp&x=https",
            "invalid_target",
        ),
        ("&resource=", "&nothing=", "invalid_target"),
        (
            "scope=orders.read",
            "scope=orders.read+root.everything",
            "invalid_scope",
        ),
    ] {
        let url = base.replace(from, to);
        let (status, headers, body) = b.get(&url).await;
        assert_eq!(status, 303, "{to}: {body}");
        let location = headers["location"].to_str().unwrap();
        assert!(location.starts_with(REDIRECT));
        assert_eq!(param(location, "error").as_deref(), Some(error), "{to}");
        assert_eq!(param(location, "state").as_deref(), Some("s9"));
    }
    let (status, headers, _) = b
        .get(&base.replace(&format!("code_challenge={challenge}&"), ""))
        .await;
    assert_eq!(status, 303);
    assert_eq!(
        param(headers["location"].to_str().unwrap(), "error").as_deref(),
        Some("invalid_request")
    );
}

async fn codes_are_single_use_and_bound_to_pkce_and_redirect(h: &Harness) {
    let (verifier, challenge) = pkce();
    let mut b = Browser::new(h);
    let back = sign_in_and_approve(
        &mut b,
        &challenge,
        "orders.read",
        "camille.martin@bistro.example",
    )
    .await;
    let code = param(&back, "code").unwrap();
    let exchange = |verifier: String, redirect: &'static str, code: String| async move {
        token(
            h,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", redirect),
                ("code_verifier", &verifier),
                ("client_id", DEMO_CLIENT_ID),
            ],
        )
        .await
    };
    let (wrong_verifier, _) = pkce();
    let (status, body) = exchange(wrong_verifier, REDIRECT, code.clone()).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    // The failed attempt consumed the code.
    let (status, _) = exchange(verifier.clone(), REDIRECT, code.clone()).await;
    assert_eq!(status, 400);

    let back = sign_in_and_approve(
        &mut b,
        &challenge,
        "orders.read",
        "camille.martin@bistro.example",
    )
    .await;
    let code = param(&back, "code").unwrap();
    let (status, _) = exchange(
        verifier.clone(),
        "http://127.0.0.1:9/callback",
        code.clone(),
    )
    .await;
    assert_eq!(status, 400);

    let back = sign_in_and_approve(
        &mut b,
        &challenge,
        "orders.read",
        "camille.martin@bistro.example",
    )
    .await;
    let code = param(&back, "code").unwrap();
    let (status, body) = exchange(verifier.clone(), REDIRECT, code.clone()).await;
    assert_eq!(status, 200, "{body}");
    let access = body["access_token"].as_str().unwrap().to_owned();
    let (_, claims) = parts(&access);
    assert_eq!(claims["aud"], RESOURCE);
    assert_eq!(claims["sub"], USER_MANAGER);
    assert_eq!(claims["client_id"], DEMO_CLIENT_ID);
    assert_eq!(claims["scope"], "orders.read");
    for claim in ["iss", "sid", "exp", "iat", "jti"] {
        assert!(!claims[claim].is_null(), "{claim}");
    }
    assert!(h.authenticate(&access, RESOURCE).await.is_ok());
    // Replaying the code fails and revokes what it produced.
    let (status, _) = exchange(verifier, REDIRECT, code).await;
    assert_eq!(status, 400);
    assert_unauthenticated(h.authenticate(&access, RESOURCE).await, "session_revoked");
}

async fn refresh_tokens_rotate_and_reuse_revokes_the_family(h: &Harness) {
    let first = full_flow(h, "orders.read location.read").await;
    let refresh1 = first["refresh_token"].as_str().unwrap().to_owned();
    let refresh = |token: String, scope: Option<&'static str>| async move {
        let mut form = vec![
            ("grant_type", "refresh_token"),
            ("client_id", DEMO_CLIENT_ID),
        ];
        form.push(("refresh_token", token.as_str()));
        if let Some(scope) = scope {
            form.push(("scope", scope));
        }
        let form: Vec<(&str, &str)> = form;
        token_owned(h, form).await
    };
    let (status, second) = refresh(refresh1.clone(), None).await;
    assert_eq!(status, 200, "{second}");
    let refresh2 = second["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(refresh1, refresh2);
    let access2 = second["access_token"].as_str().unwrap().to_owned();
    assert!(h.authenticate(&access2, RESOURCE).await.is_ok());
    let (status, body) = refresh(refresh2.clone(), Some("orders.write")).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_scope"))
    );
    // The failed widening left refresh2 as it was; reuse of refresh1 ends everything.
    let (status, body) = refresh(refresh1, None).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    assert_unauthenticated(h.authenticate(&access2, RESOURCE).await, "session_revoked");
    let (status, _) = refresh(refresh2, None).await;
    assert_eq!(status, 400);
}

async fn token_owned(h: &Harness, form: Vec<(&str, &str)>) -> (u16, serde_json::Value) {
    token(h, &form).await
}

async fn revocation_ends_the_session(h: &Harness) {
    let body = full_flow(h, "orders.read").await;
    let access = body["access_token"].as_str().unwrap().to_owned();
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();
    let response = reqwest::Client::new()
        .post(format!("{}/revoke", h.http_url))
        .form(&[("token", refresh.as_str()), ("client_id", DEMO_CLIENT_ID)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_unauthenticated(h.authenticate(&access, RESOURCE).await, "session_revoked");
    let unknown = reqwest::Client::new()
        .post(format!("{}/revoke", h.http_url))
        .form(&[("token", "nothing"), ("client_id", DEMO_CLIENT_ID)])
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 200);
}

async fn service_accounts_use_client_credentials_and_their_own_memberships(h: &Harness) {
    let registered = h
        .app
        .add_client(NewClientRequest {
            client_id: "reporting".into(),
            name: "Reporting".into(),
            kind: ClientKind::Service,
            redirect_uris: vec![],
            allowed_scopes: vec!["orders.read location.read".into()],
        })
        .await
        .unwrap();
    let secret = registered.secret.clone().unwrap();
    let service_user = registered.service_user_id.clone().unwrap();
    h.app
        .add_membership(&service_user, ORG_BISTRO, None, "analyst")
        .await
        .unwrap();
    let (status, body) = token(
        h,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", "reporting"),
            ("client_secret", "wrong"),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (401, Some("invalid_client"))
    );
    let (status, body) = token(
        h,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", "reporting"),
            ("client_secret", &secret),
            ("scope", "orders.write"),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_scope"))
    );
    let (status, body) = token(
        h,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", "reporting"),
            ("client_secret", &secret),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.get("refresh_token").is_none());
    let service_token = body["access_token"].as_str().unwrap().to_owned();
    let (_, claims) = parts(&service_token);
    assert_eq!(claims["aud"], "urn:chataigne:tool-service");

    let allowed = h
        .authorize(&service_token, "orders.read", ORG_BISTRO, Some(LOC_PARIS))
        .await
        .unwrap();
    assert_eq!(allowed.principal.unwrap().user_id, service_user);
    assert_code(
        h.authorize(&service_token, "orders.read", ORG_HARBOR, None)
            .await,
        ErrorCode::ResourceForbidden,
    );
    assert_code(
        h.authorize(&service_token, "orders.write", ORG_BISTRO, None)
            .await,
        ErrorCode::ScopeRequired,
    );
    // Not an MCP token, and a user's MCP token is not a service token.
    assert_unauthenticated(
        h.authenticate(&service_token, RESOURCE).await,
        "audience_mismatch",
    );
    let user = h.token(USER_MANAGER, &["orders.read"]).await;
    assert_unauthenticated(
        h.authorize(&user.access_token, "orders.read", ORG_BISTRO, None)
            .await,
        "audience_mismatch",
    );
    // Self-signed: refused.
    let (kid, _) = h.signing_key().await;
    let foreign = aws_lc_rs::signature::EcdsaKeyPair::generate_pkcs8(
        &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &aws_lc_rs::rand::SystemRandom::new(),
    )
    .unwrap();
    let forged = forge(&claims, "at+jwt", &kid, foreign.as_ref());
    assert_unauthenticated(
        h.authorize(&forged, "orders.read", ORG_BISTRO, None).await,
        "token_invalid",
    );
    // Disabling the client takes effect at once.
    h.app.set_client_enabled("reporting", false).await.unwrap();
    assert_unauthenticated(
        h.authorize(&service_token, "orders.read", ORG_BISTRO, None)
            .await,
        "client_disabled",
    );
}

async fn rotated_keys_sign_new_tokens_and_old_ones_keep_verifying(h: &Harness) {
    let old = h.token(USER_MANAGER, &["orders.read"]).await;
    let old_kid = parts(&old.access_token).0["kid"]
        .as_str()
        .unwrap()
        .to_owned();
    // Another replica on the same database rotates.
    let replica = chataigne_auth::AuthApp::build(crate::support::config(&h.db_url))
        .await
        .unwrap();
    let new_kid = replica.rotate_signing_key().await.unwrap();
    assert_ne!(new_kid, old_kid);
    let from_replica = replica
        .issue_access_token(chataigne_auth::IssueTokenRequest {
            user_id: USER_MANAGER.into(),
            client_id: DEMO_CLIENT_ID.into(),
            scopes: vec!["orders.read".into()],
            resource: RESOURCE.into(),
            ttl: None,
        })
        .await
        .unwrap();
    assert_eq!(parts(&from_replica.access_token).0["kid"], new_kid.as_str());
    // This instance has never seen the new kid: it reloads and verifies.
    assert!(
        h.authenticate(&from_replica.access_token, RESOURCE)
            .await
            .is_ok()
    );
    assert!(h.authenticate(&old.access_token, RESOURCE).await.is_ok());
    let jwks: serde_json::Value = reqwest::get(format!("{}/.well-known/jwks.json", h.http_url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(jwks["keys"].as_array().unwrap().len(), 2);
    // Retiring the old key ends its tokens; the signing key cannot be retired.
    assert!(replica.retire_signing_key(&new_kid).await.is_err());
    replica.retire_signing_key(&old_kid).await.unwrap();
    h.app.rotate_signing_key().await.unwrap();
    assert_unauthenticated(
        h.authenticate(&old.access_token, RESOURCE).await,
        "token_invalid",
    );
    assert!(
        h.authenticate(&from_replica.access_token, RESOURCE)
            .await
            .is_ok()
    );
}

async fn the_metadata_documents_describe_the_server(h: &Harness) {
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        let doc: serde_json::Value = reqwest::get(format!("{}{path}", h.http_url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let issuer = h.app.issuer();
        assert_eq!(doc["authorization_endpoint"], format!("{issuer}/authorize"));
        assert_eq!(doc["token_endpoint"], format!("{issuer}/token"));
        assert_eq!(doc["revocation_endpoint"], format!("{issuer}/revoke"));
        assert_eq!(
            doc["code_challenge_methods_supported"],
            serde_json::json!(["S256"])
        );
        assert!(
            doc.get("registration_endpoint").is_none(),
            "DCR is off by default"
        );
    }
    let register = reqwest::Client::new()
        .post(format!("{}/register", h.http_url))
        .json(&serde_json::json!({"redirect_uris": ["https://app.example/cb"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(register.status(), 404);
}

/// Serves `document` at `/client.json` on loopback; returns the URL.
async fn serve_document(document: impl Fn(&str) -> String + Send + 'static) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/client.json", listener.local_addr().unwrap());
    let body = document(&url);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buffer = vec![0u8; 4096];
            let _ = stream.read(&mut buffer).await;
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        }
    });
    url
}

async fn client_id_metadata_documents_are_fetched_and_checked(h: &Harness) {
    let good = serve_document(|url| {
        serde_json::json!({"client_id": url, "client_name": "Doc client", "redirect_uris": [REDIRECT]}).to_string()
    })
    .await;
    let (_, challenge) = pkce();
    let mut b = Browser::new(h);
    let query = authorize_query(&challenge, "orders.read", "s").replace(
        &format!("client_id={DEMO_CLIENT_ID}"),
        &format!(
            "client_id={}",
            url::form_urlencoded::byte_serialize(good.as_bytes()).collect::<String>()
        ),
    );
    let (status, _, html) = b.get(&query).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Doc client"));
    // A document naming another client id, and an unreachable one, are refused.
    let liar = serve_document(|_| {
        serde_json::json!({"client_id": "http://127.0.0.1:1/other.json", "redirect_uris": [REDIRECT]}).to_string()
    })
    .await;
    for client_id in [liar.as_str(), "http://127.0.0.1:1/nothing.json"] {
        let query = authorize_query(&challenge, "orders.read", "s").replace(
            &format!("client_id={DEMO_CLIENT_ID}"),
            &format!(
                "client_id={}",
                url::form_urlencoded::byte_serialize(client_id.as_bytes()).collect::<String>()
            ),
        );
        let (status, headers, _) = b.get(&query).await;
        assert_eq!(status, 400, "{client_id}");
        assert!(headers.get("location").is_none());
    }
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
        client_id_metadata_documents_are_fetched_and_checked,
        the_pages_sign_in_consent_and_hand_back_a_code,
        a_wrong_password_or_a_missing_csrf_token_is_refused,
        authorization_requests_are_checked,
        codes_are_single_use_and_bound_to_pkce_and_redirect,
        refresh_tokens_rotate_and_reuse_revokes_the_family,
        revocation_ends_the_session,
        service_accounts_use_client_credentials_and_their_own_memberships,
        rotated_keys_sign_new_tokens_and_old_ones_keep_verifying,
        the_metadata_documents_describe_the_server,
    ],
}
