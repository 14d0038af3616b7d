//! The HTTP endpoints: the JWK Set verifies issued tokens, and the RFC 8414
//! metadata lists the issuer, JWKS, public scopes and supported flows, and
//! nothing this server does not serve.

use chataigne_auth::{JWKS_PATH, METADATA_PATH};
use chataigne_common::demo::USER_MANAGER;

use crate::support::{Harness, RESOURCE, parts};

async fn get_json(url: &str) -> serde_json::Value {
    let response = reqwest::get(url).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    response.json().await.unwrap()
}

async fn the_jwks_verifies_issued_tokens(h: &Harness) {
    let jwks = get_json(&format!("{}{JWKS_PATH}", h.http_url)).await;
    let keys = jwks["keys"].as_array().unwrap();
    let issued = h.token(USER_MANAGER, &["orders.read"]).await;
    let (header, _) = parts(&issued.access_token);
    let jwk = keys.iter().find(|k| k["kid"] == header["kid"]).unwrap();
    assert_eq!(jwk["kty"], "EC");
    assert_eq!(jwk["crv"], "P-256");
    assert_eq!(jwk["alg"], "ES256");
    assert_eq!(jwk["use"], "sig");
    assert!(jwk.get("d").is_none(), "the private key is never published");

    let key = jsonwebtoken::DecodingKey::from_ec_components(
        jwk["x"].as_str().unwrap(),
        jwk["y"].as_str().unwrap(),
    )
    .unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_audience(&[RESOURCE]);
    validation.set_issuer(&[h.app.issuer()]);
    let data =
        jsonwebtoken::decode::<serde_json::Value>(&issued.access_token, &key, &validation).unwrap();
    assert_eq!(data.claims["sub"], USER_MANAGER);
}

async fn the_metadata_lists_what_exists(h: &Harness) {
    let metadata = get_json(&format!("{}{METADATA_PATH}", h.http_url)).await;
    let issuer = h.app.issuer();
    assert_eq!(metadata["issuer"], issuer);
    assert_eq!(metadata["jwks_uri"], format!("{issuer}{JWKS_PATH}"));
    let scopes: Vec<&str> = metadata["scopes_supported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    // Public scopes only: the platform-admin scopes are documented in the
    // protected admin area alone (seed 002).
    assert_eq!(
        scopes,
        chataigne_common::scopes::public().collect::<Vec<_>>()
    );
    assert!(scopes.iter().all(|s| !s.starts_with("admin.")));
    assert_eq!(
        metadata["code_challenge_methods_supported"],
        serde_json::json!(["S256"])
    );
    assert_eq!(
        metadata["response_types_supported"],
        serde_json::json!(["code"])
    );
    assert_eq!(
        metadata["grant_types_supported"],
        serde_json::json!(["authorization_code", "refresh_token", "client_credentials"])
    );
    let oidc = get_json(&format!("{}/.well-known/openid-configuration", h.http_url)).await;
    for document in [&metadata, &oidc] {
        assert_eq!(document["scopes_supported"], metadata["scopes_supported"]);
        // No ID token nor userinfo is served: none is advertised.
        for absent in [
            "id_token_signing_alg_values_supported",
            "userinfo_endpoint",
            "subject_types_supported",
        ] {
            assert!(document.get(absent).is_none(), "{absent}: {document}");
        }
        assert!(
            document["response_types_supported"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t == "code"),
            "no id_token response type"
        );
    }
    let missing = reqwest::get(format!("{}/.well-known/nothing", h.http_url))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
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
        the_jwks_verifies_issued_tokens,
        the_metadata_lists_what_exists,
    ],
}
