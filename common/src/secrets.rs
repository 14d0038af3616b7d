//! Serialization of the secrets of a configuration section in clear, for the
//! layered loader, which starts from the serialized defaults (`config check`
//! redacts every key the schema marks `x-secret` before printing).
//! Use as `#[serde(serialize_with = "chataigne_common::secrets::serialize_secret")]`.

use secrecy::{ExposeSecret, SecretString};
use serde::Serializer;

/// A required secret.
pub fn serialize_secret<S: Serializer>(secret: &SecretString, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(secret.expose_secret())
}

/// An optional secret: absent stays absent.
pub fn serialize_optional_secret<S: Serializer>(
    secret: &Option<SecretString>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match secret {
        Some(secret) => s.serialize_some(secret.expose_secret()),
        None => s.serialize_none(),
    }
}

/// A list of secrets (e.g. keys newest first).
pub fn serialize_secrets<S: Serializer>(secrets: &[SecretString], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(secrets.iter().map(|secret| secret.expose_secret()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Section {
        #[serde(serialize_with = "serialize_secret")]
        url: SecretString,
        #[serde(serialize_with = "serialize_optional_secret")]
        key: Option<SecretString>,
        #[serde(serialize_with = "serialize_optional_secret")]
        unset: Option<SecretString>,
        #[serde(serialize_with = "serialize_secrets")]
        keys: Vec<SecretString>,
    }

    #[test]
    fn secrets_serialize_in_clear_and_unset_ones_stay_unset() {
        let section = Section {
            url: SecretString::from("postgres://u:p@db/x"),
            key: Some(SecretString::from("k1")),
            unset: None,
            keys: vec![SecretString::from("a"), SecretString::from("b")],
        };
        assert_eq!(
            serde_json::to_value(&section).unwrap(),
            serde_json::json!({
                "url": "postgres://u:p@db/x",
                "key": "k1",
                "unset": null,
                "keys": ["a", "b"],
            })
        );
    }
}
