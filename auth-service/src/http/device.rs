//! Device cookies: a browser that has signed in to an account keeps a signed
//! cookie that names the account by a keyed hash (never the e-mail), so its
//! next sign-ins to that account are not counted on the account's budget of
//! guesses (`limits.rs`): an attacker who spends that budget slows guessing
//! without keeping the real user out.
//!
//! A browser holds one device cookie: that of the account it last signed
//! in to. Value: `v1.<id>.<account tag>.<expires (Unix seconds)>.<MAC>`, the id
//! random (its failures are counted, so a stolen cookie is bounded too), the
//! tag and MAC HMAC-SHA256 under a key derived from the key-encryption key
//! (`keys.encryption_key`; every listed key is accepted, the first signs),
//! so every replica recognises the cookies of the others; without one
//! (embedded mode) under a per-process random key.

use aws_lc_rs::hmac;
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::AuthError;

use super::limits::normalised_account;

/// How long a browser stays recognised after its last sign-in.
pub const DEVICE_TTL_SECS: u64 = 180 * 24 * 3600;

/// Length of a device id and of an account tag, in bytes.
const ID_LEN: usize = 16;

/// What the keys are derived for.
const CONTEXT: &[u8] = b"chataigne/device-cookie/v1";

/// The id of a recognised device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceId([u8; ID_LEN]);

impl DeviceId {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Issues and recognises device cookies.
pub struct Devices {
    /// The first signs; all verify.
    keys: Vec<hmac::Key>,
}

impl Devices {
    /// Keys derived from `secrets` (newest first); a random one when none.
    pub fn new(secrets: &[&[u8]]) -> Result<Devices, AuthError> {
        let mut keys: Vec<hmac::Key> = secrets
            .iter()
            .map(|secret| derive(&hmac::Key::new(hmac::HMAC_SHA256, secret)))
            .collect();
        if keys.is_empty() {
            let mut random = [0u8; 32];
            SystemRandom::new()
                .fill(&mut random)
                .map_err(|_| AuthError::Internal("the system random generator failed".into()))?;
            keys.push(hmac::Key::new(hmac::HMAC_SHA256, &random));
        }
        Ok(Devices { keys })
    }

    /// A fresh cookie value for a browser that just signed in to `email`.
    pub fn issue(&self, email: &str, now_secs: u64) -> Result<String, AuthError> {
        let mut id = [0u8; ID_LEN];
        SystemRandom::new()
            .fill(&mut id)
            .map_err(|_| AuthError::Internal("the system random generator failed".into()))?;
        let key = &self.keys[0];
        let payload = format!(
            "v1.{}.{}.{}",
            URL_SAFE_NO_PAD.encode(id),
            URL_SAFE_NO_PAD.encode(account_tag(key, email)),
            now_secs.saturating_add(DEVICE_TTL_SECS)
        );
        let mac = hmac::sign(key, payload.as_bytes());
        Ok(format!(
            "{payload}.{}",
            URL_SAFE_NO_PAD.encode(mac.as_ref())
        ))
    }

    /// The device of `cookie` when it is genuine, unexpired and names `email`.
    pub fn recognise(&self, cookie: &str, email: &str, now_secs: u64) -> Option<DeviceId> {
        if cookie.len() > 256 {
            return None;
        }
        let (payload, mac) = cookie.rsplit_once('.')?;
        let mac = URL_SAFE_NO_PAD.decode(mac).ok()?;
        let key = self
            .keys
            .iter()
            .find(|key| hmac::verify(key, payload.as_bytes(), &mac).is_ok())?;
        let mut fields = payload.split('.');
        let (Some("v1"), Some(id), Some(tag), Some(expires), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return None;
        };
        let expires: u64 = expires.parse().ok()?;
        if expires <= now_secs {
            return None;
        }
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        // Both sides are keyed hashes under the same key: comparing them
        // tells nothing of the e-mail.
        if tag != account_tag(key, email) {
            return None;
        }
        let id: [u8; ID_LEN] = URL_SAFE_NO_PAD.decode(id).ok()?.try_into().ok()?;
        Some(DeviceId(id))
    }
}

/// The device-cookie key derived from a secret's key.
fn derive(secret: &hmac::Key) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA256, hmac::sign(secret, CONTEXT).as_ref())
}

/// The account as the cookie names it: a keyed hash of the normalised e-mail.
fn account_tag(key: &hmac::Key, email: &str) -> [u8; ID_LEN] {
    let mut context = hmac::Context::with_key(key);
    context.update(b"account\0");
    context.update(normalised_account(email).as_bytes());
    let mut tag = [0u8; ID_LEN];
    tag.copy_from_slice(&context.sign().as_ref()[..ID_LEN]);
    tag
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000;

    #[test]
    fn a_device_is_recognised_for_its_account_only_until_it_expires() {
        let devices = Devices::new(&[b"secret one"]).unwrap();
        let cookie = devices.issue("Camille@Example.com", NOW).unwrap();
        assert!(!cookie.to_lowercase().contains("camille"), "{cookie}");
        let id = devices.recognise(&cookie, " camille@example.com ", NOW + 60);
        assert!(id.is_some(), "the same account, normalised");
        assert!(
            devices
                .recognise(&cookie, "louis@example.com", NOW)
                .is_none()
        );
        assert!(
            devices
                .recognise(&cookie, "camille@example.com", NOW + DEVICE_TTL_SECS)
                .is_none(),
            "expired"
        );
        let other = devices.issue("camille@example.com", NOW).unwrap();
        assert_ne!(
            devices.recognise(&other, "camille@example.com", NOW),
            id,
            "each browser is its own device"
        );
    }

    #[test]
    fn a_forged_or_altered_cookie_is_not_recognised() {
        let devices = Devices::new(&[b"secret one"]).unwrap();
        let cookie = devices.issue("camille@example.com", NOW).unwrap();
        let (payload, _) = cookie.rsplit_once('.').unwrap();
        // A later expiry with the old MAC.
        let mut fields: Vec<&str> = payload.split('.').collect();
        let later = (NOW + 10 * DEVICE_TTL_SECS).to_string();
        fields[3] = &later;
        let mac = cookie.rsplit_once('.').unwrap().1;
        let altered = format!("{}.{mac}", fields.join("."));
        assert!(
            devices
                .recognise(&altered, "camille@example.com", NOW)
                .is_none()
        );
        // Signed under another key.
        let stranger = Devices::new(&[b"another secret"]).unwrap();
        let foreign = stranger.issue("camille@example.com", NOW).unwrap();
        assert!(
            devices
                .recognise(&foreign, "camille@example.com", NOW)
                .is_none()
        );
        for junk in ["", "v1", "v1.a.b.c.d.e", "....", &"x".repeat(300)] {
            assert!(
                devices
                    .recognise(junk, "camille@example.com", NOW)
                    .is_none()
            );
        }
    }

    #[test]
    fn cookies_signed_under_an_older_secret_are_still_recognised() {
        let old = Devices::new(&[b"old secret"]).unwrap();
        let cookie = old.issue("camille@example.com", NOW).unwrap();
        let rotated = Devices::new(&[b"new secret", b"old secret"]).unwrap();
        assert!(
            rotated
                .recognise(&cookie, "camille@example.com", NOW)
                .is_some()
        );
        let fresh = rotated.issue("camille@example.com", NOW).unwrap();
        assert!(old.recognise(&fresh, "camille@example.com", NOW).is_none());
    }
}
