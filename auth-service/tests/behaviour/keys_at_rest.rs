//! Signing keys at rest: the database holds them sealed under the
//! key-encryption key, never as the private key itself; a wrong or missing
//! key-encryption key stops the start with a clear error and leaves the keys
//! alone; rows of older releases (plaintext) and rows under a former KEK are
//! re-sealed at start; rotation still works, and tokens keep verifying
//! across restarts.

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use chataigne_auth::AuthApp;
use chataigne_common::demo::USER_MANAGER;
use secrecy::SecretString;

use crate::support::{Backend, Harness, RESOURCE, TEST_KEK, config, open_sealed_key, parts};

/// Another valid key-encryption key.
const OTHER_KEK: &str = "YW5vdGhlciB0ZXN0IGtleS1lbmNyeXB0aW9uIGtleSE=";

fn config_with_kek(h: &Harness, kek: Option<&str>) -> chataigne_auth::Config {
    let mut config = config(&h.db_url);
    config.keys.encryption_key = kek.map(|k| SecretString::from(k.to_owned()));
    config
}

/// Every stored key is an envelope under `kek`, holding a P-256 PKCS#8
/// document that appears nowhere in the stored bytes.
async fn assert_all_sealed_under(h: &Harness, kek: &str) -> usize {
    let stored = h.stored_signing_keys().await;
    for (kid, material) in &stored {
        assert!(material.starts_with(b"CKEK1"), "{kid} is sealed");
        let pkcs8 = open_sealed_key(kek, kid, material)
            .unwrap_or_else(|| panic!("{kid} opens under the expected key"));
        assert!(EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8).is_ok());
        assert!(
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, material).is_err(),
            "{kid}: the stored bytes are not a usable key"
        );
        assert!(
            !material.windows(pkcs8.len()).any(|w| w == pkcs8.as_slice()),
            "{kid}: the private key is not in the stored bytes"
        );
        // The private scalar (the OCTET STRING after the PKCS#8 header) is not there either.
        assert_eq!(
            pkcs8[34..36],
            [0x04, 0x20],
            "{kid}: P-256 private key layout"
        );
        let scalar = &pkcs8[36..68];
        assert!(!material.windows(32).any(|w| w == scalar), "{kid}");
    }
    stored.len()
}

async fn stored_keys_are_sealed_not_plaintext(h: &Harness) {
    assert_eq!(assert_all_sealed_under(h, TEST_KEK).await, 1);
    // The JWKS publishes that key, and tokens are signed with it.
    let (kid, _) = h.signing_key().await;
    assert_eq!(h.app.jwks()["keys"][0]["kid"], kid.as_str());
    let issued = h.token(USER_MANAGER, &["orders.read"]).await;
    assert_eq!(parts(&issued.access_token).0["kid"], kid.as_str());
}

async fn a_wrong_or_missing_kek_refuses_to_start_and_keeps_the_keys(h: &Harness) {
    let before = h.stored_signing_keys().await;
    let error = AuthApp::build(config_with_kek(h, Some(OTHER_KEK)))
        .await
        .err()
        .expect("a wrong key-encryption key is refused");
    let message = format!("{error:#}");
    assert!(
        message.contains("cannot be decrypted") && message.contains("keys.encryption_key"),
        "{message}"
    );
    assert!(!message.contains(OTHER_KEK) && !message.contains(TEST_KEK));
    let missing = AuthApp::build(config_with_kek(h, None))
        .await
        .err()
        .map(|e| format!("{e:#}"))
        .expect("no key-encryption key is refused");
    match h.backend {
        // Required by the configuration on PostgreSQL.
        Backend::Postgres => assert!(
            missing.contains("keys.encryption_key (CHATAIGNE_KEYS__ENCRYPTION_KEY) is required"),
            "{missing}"
        ),
        // Allowed on SQLite, but these keys are sealed.
        Backend::Sqlite => assert!(
            missing.contains("encrypted at rest") && missing.contains("keys.encryption_key"),
            "{missing}"
        ),
    }
    // Nothing was generated or rewritten.
    assert_eq!(h.stored_signing_keys().await, before);
    // The right key still starts.
    let again = AuthApp::build(config(&h.db_url)).await.unwrap();
    assert_eq!(again.jwks(), h.app.jwks());
}

async fn rotation_seals_new_keys_and_tokens_verify_after_restart(h: &Harness) {
    let before = h.token(USER_MANAGER, &["orders.read"]).await;
    let new_kid = h.app.rotate_signing_key().await.unwrap();
    assert_eq!(assert_all_sealed_under(h, TEST_KEK).await, 2);
    let after = h.token(USER_MANAGER, &["orders.read"]).await;
    assert_eq!(parts(&after.access_token).0["kid"], new_kid.as_str());
    // A restart (or another replica) opens both keys: both tokens verify.
    let restarted = AuthApp::build(config(&h.db_url)).await.unwrap();
    assert_eq!(restarted.jwks(), h.app.jwks());
    for token in [&before.access_token, &after.access_token] {
        let authenticated = restarted.authenticate(token, RESOURCE).await.unwrap();
        assert_eq!(authenticated.principal.user_id, USER_MANAGER);
    }
    // Retirement still works on sealed keys.
    let old_kid = parts(&before.access_token).0["kid"]
        .as_str()
        .unwrap()
        .to_owned();
    restarted.retire_signing_key(&old_kid).await.unwrap();
    assert!(
        restarted
            .authenticate(&before.access_token, RESOURCE)
            .await
            .is_err()
    );
    assert!(
        restarted
            .authenticate(&after.access_token, RESOURCE)
            .await
            .is_ok()
    );
}

async fn plaintext_keys_of_older_releases_are_sealed_at_start(h: &Harness) {
    let issued = h.token(USER_MANAGER, &["orders.read"]).await;
    // The row as a release without encryption wrote it: the PKCS#8 itself.
    let (kid, pkcs8) = h.signing_key().await;
    h.write_signing_key_material(&kid, &pkcs8).await;
    let restarted = AuthApp::build(config(&h.db_url)).await.unwrap();
    // Sealed in place, same key: same JWKS, old tokens verify.
    assert_eq!(assert_all_sealed_under(h, TEST_KEK).await, 1);
    assert_eq!(h.signing_key().await, (kid, pkcs8));
    assert_eq!(restarted.jwks(), h.app.jwks());
    assert!(
        restarted
            .authenticate(&issued.access_token, RESOURCE)
            .await
            .is_ok()
    );
}

async fn keys_move_to_a_new_kek_listed_first(h: &Harness) {
    let issued = h.token(USER_MANAGER, &["orders.read"]).await;
    // New key first, former one after it: the rows are re-sealed under the new one.
    let both = format!("{OTHER_KEK},{TEST_KEK}");
    let moved = AuthApp::build(config_with_kek(h, Some(&both)))
        .await
        .unwrap();
    assert_eq!(assert_all_sealed_under(h, OTHER_KEK).await, 1);
    assert!(
        moved
            .authenticate(&issued.access_token, RESOURCE)
            .await
            .is_ok()
    );
    // From now on the new key alone suffices, and the former one alone is refused.
    let alone = AuthApp::build(config_with_kek(h, Some(OTHER_KEK)))
        .await
        .unwrap();
    assert!(
        alone
            .authenticate(&issued.access_token, RESOURCE)
            .await
            .is_ok()
    );
    let former = AuthApp::build(config_with_kek(h, Some(TEST_KEK))).await;
    assert!(
        former
            .err()
            .is_some_and(|e| format!("{e:#}").contains("cannot be decrypted"))
    );
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
        stored_keys_are_sealed_not_plaintext,
        a_wrong_or_missing_kek_refuses_to_start_and_keeps_the_keys,
        rotation_seals_new_keys_and_tokens_verify_after_restart,
        plaintext_keys_of_older_releases_are_sealed_at_start,
        keys_move_to_a_new_kek_listed_first,
    ],
}

/// SQLite without a key-encryption key (allowed there) stores plaintext;
/// configuring one later seals the keys at the next start.
#[tokio::test]
async fn a_sqlite_database_started_without_a_kek_is_sealed_once_one_is_set() {
    let url = crate::support::database_url(Backend::Sqlite).await.unwrap();
    let mut plain = config(&url);
    plain.keys.encryption_key = None;
    let app = AuthApp::build(plain).await.unwrap();
    let jwks = app.jwks();
    let harness = Harness::serve(app, Backend::Sqlite, url.clone()).await;
    let stored = harness.stored_signing_keys().await;
    assert_eq!(stored.len(), 1);
    assert!(
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &stored[0].1).is_ok(),
        "plaintext without a key-encryption key"
    );
    let sealed = AuthApp::build(config(&url)).await.unwrap();
    assert_eq!(sealed.jwks(), jwks);
    assert_eq!(assert_all_sealed_under(&harness, TEST_KEK).await, 1);
}
