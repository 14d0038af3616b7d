//! Embedded mode keeps the auth-service's key-encryption key in its data
//! directory (owner-only): the signing keys in `auth.db` are sealed under it,
//! a restart on the same directory opens the same keys, and a different key
//! in that file stops the start with a clear error instead of replacing them.

use chataigne::StackConfig;
use chataigne_tests::TempDir;

/// The first bytes of a P-256 PKCS#8 private key document (DER SEQUENCE,
/// version 0, id-ecPublicKey): never written to disk.
const PKCS8_P256_PREFIX: &[u8] = &[
    0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
];

fn config(dir: &TempDir) -> StackConfig {
    let mut config = StackConfig::embedded(&dir.0);
    config.tools.demo_days = 30;
    config
}

/// Everything SQLite wrote for the auth database (main file and WAL).
fn auth_db_bytes(dir: &TempDir) -> Vec<u8> {
    ["auth.db", "auth.db-wal"]
        .iter()
        .filter_map(|name| std::fs::read(dir.0.join(name)).ok())
        .flatten()
        .collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_signing_keys_are_sealed_under_a_key_kept_in_the_data_dir() {
    let dir = TempDir::new("embedded-keys");
    let stack = chataigne::start(config(&dir)).await.expect("first start");
    let token = stack
        .token_for(chataigne_tests::demo::USER_MANAGER, &["orders.read"], None)
        .await
        .expect("token");
    let jwks = stack.auth.jwks();
    stack.shutdown().await.expect("clean shutdown");

    let kek_file = dir.0.join("signing-keys.kek");
    let kek = std::fs::read_to_string(&kek_file).expect("key-encryption key kept");
    assert_eq!(kek.trim().len(), 44, "base64 of 32 bytes");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kek_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "owner-only: {mode:o}");
    }
    let stored = auth_db_bytes(&dir);
    assert!(contains(&stored, b"CKEK1"), "a sealed key is stored");
    assert!(
        !contains(&stored, PKCS8_P256_PREFIX),
        "no plaintext private key on disk"
    );

    // A restart on the same directory opens the same keys: same JWKS, and
    // new tokens carry the same header (algorithm, type and key id) as the
    // first run's. (Tokens themselves name the first run's issuer and
    // endpoint, whose ports change between runs.)
    let again = chataigne::start(config(&dir)).await.expect("restart");
    assert_eq!(again.auth.jwks(), jwks);
    let fresh = again
        .token_for(chataigne_tests::demo::USER_MANAGER, &["orders.read"], None)
        .await
        .expect("token after restart");
    assert_eq!(fresh.split('.').next(), token.split('.').next());
    assert!(
        again
            .auth
            .authenticate(&fresh, &again.mcp_url)
            .await
            .is_ok()
    );
    again.shutdown().await.expect("clean shutdown");

    // Another key in the file: refused, keys untouched.
    let other = chataigne_auth::generate_kek().unwrap();
    std::fs::write(&kek_file, secrecy::ExposeSecret::expose_secret(&other)).unwrap();
    let error = chataigne::start(config(&dir))
        .await
        .err()
        .map(|e| format!("{e:#}"))
        .expect("a wrong key-encryption key is refused");
    assert!(error.contains("cannot be decrypted"), "{error}");
    std::fs::write(&kek_file, kek).unwrap();
    let restored = chataigne::start(config(&dir))
        .await
        .expect("right key again");
    assert_eq!(restored.auth.jwks(), jwks);
    restored.shutdown().await.expect("clean shutdown");
}
