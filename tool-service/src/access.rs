//! Who may act on what, once the tool has resolved the target's real owner
//! from its own store. Every call first *admits* its credential, once
//! ([`Access::admit`], from the gRPC adapters): a principal assertion is
//! verified here (the auth-service's public keys, fetched and parsed once;
//! strict JOSE, issuer, audience = the tool-service, times) and its `jti` is
//! accepted once within its lifetime ([`crate::replay`]): an assertion is for
//! one call. When the admitted assertion carries the live grants read by
//! `Authenticate` for this call, the decision is taken locally by the shared
//! rules of `chataigne_common::grants`. Otherwise (service-account tokens,
//! assertions without grants) the auth-service is asked, presenting the
//! credential; while its breaker (probed in the background, see
//! `chataigne_common::breaker`) knows it down or hung, those calls fail at
//! once with a dependency error instead of waiting out their deadline.
//! `Access` is the port the tools use; `AuthServiceAccess` is its adapter.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use chataigne_common::ErrorCode;
use chataigne_common::assertion::{AssertionContract, TimeCheck};
use chataigne_common::balance::{self, Balanced};
use chataigne_common::breaker::{self, Breaker};
use chataigne_common::codes::decode_status;
use chataigne_common::grants::{Grants, Refusal};
use chataigne_common::jws::{self, Es256Verifier};
use chataigne_common::status_details::DetailKey;
use chataigne_proto::auth::v1::{
    AssertionKeysRequest, AuthorizeRequest, ResolveAccessRequest,
    auth_service_client::AuthServiceClient,
};
use jsonwebtoken::{Algorithm, Header};
use serde::Deserialize;
use tonic_health::pb::health_client::HealthClient;

use crate::domain::{Dependency, DomainError, TenantScope};
use crate::replay::{Seen, SeenAssertions};
use crate::store::Owner;

/// The authenticated caller as the auth-service vouches for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub user_id: String,
    pub client_id: String,
}

/// The caller's credential (never logged): as presented, then as admitted
/// by [`Access::admit`].
#[derive(Clone)]
pub struct Credential {
    token: String,
    admission: Admission,
}

/// What admission made of a credential.
#[derive(Clone)]
enum Admission {
    /// Not admitted yet: no decision is taken on it.
    Presented,
    /// A principal assertion verified here, its `jti` accepted once.
    Assertion(Arc<Verified>),
    /// Anything else (service-account tokens): checked by the auth-service
    /// at each decision.
    Forwarded,
}

impl Credential {
    /// The bearer token as presented, before admission.
    pub fn presented(token: String) -> Credential {
        Credential {
            token,
            admission: Admission::Presented,
        }
    }

    /// The token as presented.
    pub fn token(&self) -> &str {
        &self.token
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credential(..)")
    }
}

pub trait Access: Clone + Send + Sync + 'static {
    /// Admits the credential of one call, before anything is decided on it:
    /// refuses what cannot be the caller's credential for this call (a
    /// principal assertion that does not verify here, or whose `jti` was
    /// already admitted).
    fn admit(
        &self,
        credential: Credential,
    ) -> impl Future<Output = Result<Credential, DomainError>> + Send;

    /// Checks `permission` on a target owned by `owner`.
    fn authorize(
        &self,
        credential: &Credential,
        permission: &str,
        owner: &Owner,
    ) -> impl Future<Output = Result<Principal, DomainError>> + Send;

    /// The tenants on which the caller holds `permission`.
    fn resolve(
        &self,
        credential: &Credential,
        permission: &str,
    ) -> impl Future<Output = Result<(Principal, TenantScope), DomainError>> + Send;
}

/// Most admitted assertions remembered at once (each until its `exp` plus
/// the leeway: with lifetimes of at most 35 s, over 7000 calls a second).
const SEEN_CAPACITY: usize = 256 * 1024;
/// Least time between two key fetches triggered by an unknown `kid`.
const KEY_FETCH_INTERVAL: Duration = Duration::from_millis(500);

/// [`Access`] backed by the auth-service: local decisions on assertions
/// carrying grants, its gRPC API otherwise, over one shared channel.
#[derive(Clone)]
pub struct AuthServiceAccess {
    client: AuthServiceClient<Balanced>,
    /// `grpc.health.v1` over the same channel: the breaker's probe.
    health: HealthClient<Balanced>,
    /// Open while the auth-service (or its database) is known down or hung.
    breaker: Arc<Breaker>,
    keys: Arc<AssertionKeys>,
}

/// The auth-service's assertion verification keys, fetched on first use and
/// again (throttled) when an assertion names an unknown `kid`, and the
/// assertions admitted so far.
struct AssertionKeys {
    ring: RwLock<Option<Arc<KeyRing>>>,
    last_fetch: Mutex<Option<Instant>>,
    /// Held while the key set is fetched.
    fetching: tokio::sync::Mutex<()>,
    seen: SeenAssertions,
}

impl Default for AssertionKeys {
    fn default() -> AssertionKeys {
        AssertionKeys {
            ring: RwLock::default(),
            last_fetch: Mutex::default(),
            fetching: tokio::sync::Mutex::default(),
            seen: SeenAssertions::new(SEEN_CAPACITY),
        }
    }
}

/// One fetched key set, each key parsed once.
struct KeyRing {
    issuer: String,
    keys: HashMap<String, Es256Verifier>,
}

/// The parts of a JWK Set this service reads.
#[derive(Deserialize)]
struct JwkSet {
    keys: Vec<Jwk>,
}

#[derive(Deserialize)]
struct Jwk {
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    kty: String,
    #[serde(default)]
    crv: String,
    #[serde(default)]
    x: String,
    #[serde(default)]
    y: String,
}

impl KeyRing {
    /// Parses the issuer and JWK Set answered by `AssertionKeys`; keys other
    /// than P-256 EC keys with a `kid` are skipped.
    fn parse(issuer: &str, jwks: &str) -> Result<KeyRing, String> {
        let set: JwkSet =
            serde_json::from_str(jwks).map_err(|e| format!("unreadable key set: {e}"))?;
        let mut keys = HashMap::new();
        for jwk in set.keys {
            if let Some(kid) = jwk.kid
                && jwk.kty == "EC"
                && jwk.crv == "P-256"
                && let Ok(key) = Es256Verifier::from_coordinates(&jwk.x, &jwk.y)
            {
                keys.insert(kid, key);
            }
        }
        Ok(KeyRing {
            issuer: issuer.to_owned(),
            keys,
        })
    }

    /// Verifies a principal assertion (strict JOSE header, typ, algorithm,
    /// key, signature, `iss`, `aud`, `exp`, `nbf`, `iat`, a `jti`) and
    /// returns what it vouches for, or `None` when it does not verify.
    fn verify(&self, token: &str, now_secs: i64) -> Option<Checked> {
        let header = jws::header::<Header>(token).ok()?;
        if header.alg != Algorithm::ES256
            || !header
                .typ
                .as_deref()
                .is_some_and(AssertionContract::accepts_typ)
        {
            return None;
        }
        let kid = header.kid?;
        let payload = self.keys.get(&kid)?.verify(token).ok()?;
        let claims: AssertionClaims = serde_json::from_slice(&payload).ok()?;
        if claims.iss != self.issuer
            || claims.aud != AssertionContract::AUDIENCE
            || claims.sid.is_empty()
            || claims.client_id.is_empty()
            || claims.jti.is_empty()
        {
            return None;
        }
        let checked = Checked {
            exp: claims.exp,
            nbf: claims.nbf,
            iat: claims.iat,
            jti: claims.jti,
            verified: Verified {
                principal: Principal {
                    user_id: claims.sub,
                    client_id: claims.client_id,
                },
                scopes: claims.scope,
                grants: claims.grants,
            },
        };
        checked.times_hold(now_secs).then_some(checked)
    }
}

/// The claims of a principal assertion that a local decision reads.
#[derive(Deserialize)]
struct AssertionClaims {
    iss: String,
    aud: String,
    sub: String,
    client_id: String,
    /// Effective scopes, space-separated.
    scope: String,
    sid: String,
    exp: i64,
    iat: i64,
    #[serde(default)]
    nbf: Option<i64>,
    #[serde(default)]
    jti: String,
    #[serde(default)]
    grants: Option<Grants>,
}

/// A verified assertion: who, with which scopes, and the grants when it
/// carries them.
#[derive(Clone)]
struct Verified {
    principal: Principal,
    scopes: String,
    grants: Option<Grants>,
}

impl Verified {
    fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scopes.split_ascii_whitespace()
    }
}

/// A verified assertion with its times and `jti`.
struct Checked {
    exp: i64,
    nbf: Option<i64>,
    iat: i64,
    jti: String,
    verified: Verified,
}

impl Checked {
    fn times_hold(&self, now_secs: i64) -> bool {
        AssertionContract::times_hold(self.exp, self.nbf, self.iat, now_secs) == TimeCheck::Valid
    }
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Maps a local refusal onto the domain error, as [`refusal`] maps the
/// auth-service's.
fn refused(refusal: Refusal) -> DomainError {
    match refusal {
        Refusal::ScopeRequired(scope) => DomainError::ScopeRequired(scope),
        Refusal::Forbidden => DomainError::Forbidden,
    }
}

impl AuthServiceAccess {
    /// Prepares a lazily connecting channel: the service starts even if the
    /// auth-service is not up yet, and calls fail fast while it is down.
    pub fn connect(url: &str) -> anyhow::Result<AuthServiceAccess> {
        AuthServiceAccess::connect_with(url, None)
    }

    /// [`AuthServiceAccess::connect`], over TLS when `tls` is given (the
    /// certificates are re-read when their files change).
    pub fn connect_with(
        url: &str,
        tls: Option<&chataigne_common::tls::ClientTls>,
    ) -> anyhow::Result<AuthServiceAccess> {
        let tls = tls.map(|tls| tls.connector_for(url)).transpose()?;
        // Balanced over every auth-service instance the name resolves to.
        let channel = Balanced::dns(
            url,
            balance::Options {
                connect_timeout: Duration::from_secs(2),
                request_timeout: Some(Duration::from_secs(10)),
                tls,
                ..balance::Options::default()
            },
        )?;
        Ok(AuthServiceAccess {
            client: AuthServiceClient::new(channel.clone()),
            health: HealthClient::new(channel),
            breaker: Breaker::new(Dependency::AuthService.as_str()),
            keys: Arc::default(),
        })
    }

    /// Probes the auth-service's health in the background until `stop` turns
    /// true (or its sender is dropped), handing `on_state` whether it is up
    /// now, then at each change of its breaker.
    pub fn watch(
        &self,
        stop: tokio::sync::watch::Receiver<bool>,
        on_state: impl FnMut(bool) + Send + 'static,
    ) {
        let health = self.health.clone();
        breaker::spawn_probe(
            self.breaker.clone(),
            move || breaker::serving(health.clone()),
            stop,
            on_state,
        );
    }

    /// The auth-service's client, unless its breaker is open.
    fn client(&self) -> Result<AuthServiceClient<Balanced>, DomainError> {
        if self.breaker.is_open() {
            return Err(DomainError::Dependency(
                Dependency::AuthService,
                "known down or hung".to_owned(),
            ));
        }
        Ok(self.client.clone())
    }

    /// Admits `credential` (see [`Access::admit`]): a principal assertion
    /// must verify with the auth-service's keys and be new; anything else is
    /// forwarded to the auth-service at each decision.
    async fn admission(&self, credential: &Credential) -> Result<Admission, DomainError> {
        let token = credential.token.as_str();
        // Service-account tokens, and anything that is no principal
        // assertion: the auth-service decides, with its own exact refusal.
        let Some(header) = jws::header::<Header>(token).ok().filter(|header| {
            header
                .typ
                .as_deref()
                .is_some_and(AssertionContract::accepts_typ)
        }) else {
            return Ok(Admission::Forwarded);
        };
        let kid = header.kid.ok_or(DomainError::Unauthenticated)?;
        let ring = match self.ring() {
            Some(ring) if ring.keys.contains_key(&kid) => ring,
            // An unknown key: the set fetched again (or, throttled, the one
            // held, which then refuses it).
            _ => self.fetch_keys(&kid).await.ok_or_else(|| {
                DomainError::Dependency(
                    Dependency::AuthService,
                    "assertion keys unavailable".to_owned(),
                )
            })?,
        };
        let now = now_secs();
        let checked = ring
            .verify(token, now)
            .ok_or(DomainError::Unauthenticated)?;
        let until = checked.exp.saturating_add(AssertionContract::LEEWAY_SECS);
        match self.keys.seen.first_use(&checked.jti, until, now) {
            Seen::First => Ok(Admission::Assertion(Arc::new(checked.verified))),
            Seen::Again => {
                tracing::warn!("a principal assertion was presented again: refused as a replay");
                Err(DomainError::Unauthenticated)
            }
            Seen::Full => Err(DomainError::Dependency(
                Dependency::AuthService,
                "too many assertions in flight".to_owned(),
            )),
        }
    }

    /// The admitted assertion's grants, when it carries them: decided here.
    fn local(credential: &Credential) -> Result<Option<&Verified>, DomainError> {
        match &credential.admission {
            Admission::Assertion(verified) if verified.grants.is_some() => Ok(Some(verified)),
            Admission::Assertion(_) | Admission::Forwarded => Ok(None),
            Admission::Presented => Err(DomainError::Internal(
                "a decision was asked on a credential that was not admitted".to_owned(),
            )),
        }
    }

    fn ring(&self) -> Option<Arc<KeyRing>> {
        match self.keys.ring.read() {
            Ok(ring) => ring.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Fetches the key set again for an assertion signed by `kid`, at most
    /// every [`KEY_FETCH_INTERVAL`] and one fetch at a time: calls that
    /// arrive during a fetch wait for it and use its answer.
    async fn fetch_keys(&self, kid: &str) -> Option<Arc<KeyRing>> {
        let _one_at_a_time = self.keys.fetching.lock().await;
        if let Some(ring) = self.ring()
            && ring.keys.contains_key(kid)
        {
            return Some(ring);
        }
        {
            let mut last = self.keys.last_fetch.lock().ok()?;
            if last.is_some_and(|at| at.elapsed() < KEY_FETCH_INTERVAL) {
                return self.ring();
            }
            *last = Some(Instant::now());
        }
        let mut request = tonic::Request::new(AssertionKeysRequest {});
        chataigne_common::trace_context::inject(request.metadata_mut());
        let answer = match self.client().ok()?.assertion_keys(request).await {
            Ok(answer) => answer.into_inner(),
            Err(status) => {
                tracing::warn!(code = %status.code(), "fetching the assertion keys failed");
                return None;
            }
        };
        match KeyRing::parse(&answer.issuer, &answer.jwks) {
            Ok(ring) => {
                let ring = Arc::new(ring);
                match self.keys.ring.write() {
                    Ok(mut slot) => *slot = Some(ring.clone()),
                    Err(poisoned) => *poisoned.into_inner() = Some(ring.clone()),
                }
                Some(ring)
            }
            Err(error) => {
                tracing::warn!(%error, "the assertion keys are unreadable");
                None
            }
        }
    }
}

impl Access for AuthServiceAccess {
    async fn admit(&self, credential: Credential) -> Result<Credential, DomainError> {
        let admission = self.admission(&credential).await?;
        Ok(Credential {
            token: credential.token,
            admission,
        })
    }

    async fn authorize(
        &self,
        credential: &Credential,
        permission: &str,
        owner: &Owner,
    ) -> Result<Principal, DomainError> {
        if let Some(verified) = Self::local(credential)?
            && let Some(grants) = &verified.grants
        {
            grants
                .authorize(
                    verified.scopes(),
                    permission,
                    &owner.organization_id,
                    owner.location_id.as_deref(),
                )
                .map_err(refused)?;
            return Ok(verified.principal.clone());
        }
        let mut request = tonic::Request::new(AuthorizeRequest {
            assertion: credential.token.clone(),
            permission: permission.to_owned(),
            organization_id: owner.organization_id.clone(),
            location_id: owner.location_id.clone().unwrap_or_default(),
        });
        chataigne_common::trace_context::inject(request.metadata_mut());
        let response = self
            .client()?
            .authorize(request)
            .await
            .map_err(refusal)?
            .into_inner();
        principal(response.principal)
    }

    async fn resolve(
        &self,
        credential: &Credential,
        permission: &str,
    ) -> Result<(Principal, TenantScope), DomainError> {
        if let Some(verified) = Self::local(credential)?
            && let Some(grants) = &verified.grants
        {
            let access = grants
                .resolve(verified.scopes(), permission)
                .map_err(refused)?;
            let scope = TenantScope {
                all_tenants: access.all_tenants,
                organization_ids: access.organization_ids,
                location_ids: access.location_ids,
            };
            return Ok((verified.principal.clone(), scope));
        }
        let response = self
            .client()?
            .resolve_access(ResolveAccessRequest {
                assertion: credential.token.clone(),
                permission: permission.to_owned(),
            })
            .await
            .map_err(refusal)?
            .into_inner();
        let scope = TenantScope {
            all_tenants: response.all_tenants,
            organization_ids: response.organization_ids,
            location_ids: response.location_ids,
        };
        Ok((principal(response.principal)?, scope))
    }
}

fn principal(
    principal: Option<chataigne_proto::auth::v1::Principal>,
) -> Result<Principal, DomainError> {
    let principal = principal
        .ok_or_else(|| DomainError::Internal("auth-service answered without a principal".into()))?;
    Ok(Principal {
        user_id: principal.user_id,
        client_id: principal.client_id,
    })
}

/// Maps the auth-service's refusal onto the domain error.
fn refusal(status: tonic::Status) -> DomainError {
    let decoded = decode_status(&status);
    match decoded.code {
        ErrorCode::ScopeRequired => DomainError::ScopeRequired(
            decoded
                .detail(DetailKey::Scope)
                .unwrap_or_default()
                .to_owned(),
        ),
        ErrorCode::ResourceForbidden | ErrorCode::ResourceNotFound => DomainError::Forbidden,
        ErrorCode::Unauthenticated => DomainError::Unauthenticated,
        ErrorCode::DependencyUnavailable | ErrorCode::ToolTimeout | ErrorCode::RateLimited => {
            DomainError::Dependency(Dependency::AuthService, status.code().to_string())
        }
        _ => DomainError::Internal(format!("auth-service: {}", status.code())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chataigne_common::grants::Membership;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::{Value, json};

    /// A P-256 test key (PKCS#8) and the coordinates of its public key.
    const TEST_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgy9YlekD80Amym3E8
UPSfCv3u6YNxXKGYFkDGrQKoHW+hRANCAASNYAx1aUiRX0dOJMw8gu8hiBgWqrDh
3wE7SwEz6/SFHQLkVIIOOSuSgxHORuMM8K1LprR7WoEd139WlSHL7ImH
-----END PRIVATE KEY-----
";
    const X: &str = "jWAMdWlIkV9HTiTMPILvIYgYFqqw4d8BO0sBM-v0hR0";
    const Y: &str = "AuRUgg45K5KDEc5G4wzwrUumtHtagR3Xf1aVIcvsiYc";
    const ISSUER: &str = "https://auth.example";
    const ASSERTION_AUDIENCE: &str = AssertionContract::AUDIENCE;
    const ASSERTION_TYP: &str = AssertionContract::TYP;

    fn ring() -> KeyRing {
        let jwks = json!({"keys": [{
            "kty": "EC", "crv": "P-256", "x": X, "y": Y,
            "kid": "k1", "alg": "ES256", "use": "sig",
        }]});
        KeyRing::parse(ISSUER, &jwks.to_string()).unwrap()
    }

    fn grants() -> Grants {
        Grants {
            platform_admin: false,
            memberships: vec![Membership {
                organization_id: "org_a".into(),
                location_id: None,
                permissions: vec!["orders.read".into()],
            }],
        }
    }

    fn claims(grants: Option<&Grants>) -> Value {
        let now = now_secs();
        let mut claims = json!({
            "iss": ISSUER, "sub": "usr_1", "aud": ASSERTION_AUDIENCE,
            "client_id": "client", "scope": "orders.read orders.write",
            "sid": "ses_1", "exp": now + 60, "iat": now, "jti": "j",
        });
        if let Some(grants) = grants {
            claims["grants"] = serde_json::to_value(grants).unwrap();
        }
        claims
    }

    fn sign(typ: &str, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some(typ.into());
        header.kid = Some(kid.into());
        let key = EncodingKey::from_ec_pem(TEST_KEY.as_bytes()).unwrap();
        jsonwebtoken::encode(&header, claims, &key).unwrap()
    }

    #[test]
    fn an_assertion_carrying_grants_verifies_here() {
        let token = sign(ASSERTION_TYP, "k1", &claims(Some(&grants())));
        let verified = ring().verify(&token, now_secs()).unwrap().verified;
        assert_eq!(verified.principal.user_id, "usr_1");
        assert_eq!(verified.principal.client_id, "client");
        assert_eq!(verified.grants, Some(grants()));
        assert_eq!(
            verified.scopes().collect::<Vec<_>>(),
            ["orders.read", "orders.write"]
        );
        // Without grants (over the bound) it verifies too, carrying none.
        let token = sign(ASSERTION_TYP, "k1", &claims(None));
        let verified = ring().verify(&token, now_secs()).unwrap().verified;
        assert_eq!(verified.grants, None);
    }

    #[test]
    fn anything_else_does_not_verify_as_an_assertion() {
        let ring = ring();
        let now = now_secs();
        // A service-account (access) token.
        assert!(
            ring.verify(&sign("at+jwt", "k1", &claims(Some(&grants()))), now)
                .is_none()
        );
        // Unknown key.
        assert!(
            ring.verify(&sign(ASSERTION_TYP, "k2", &claims(Some(&grants()))), now)
                .is_none()
        );
        // Other issuer, another audience (the former internal one included),
        // expired, without a jti.
        for (field, value) in [
            ("iss", json!("https://evil.example")),
            ("aud", json!("https://mcp.example")),
            ("aud", json!("chataigne-internal")),
            ("exp", json!(now - 60)),
            ("jti", json!("")),
        ] {
            let mut claims = claims(Some(&grants()));
            claims[field] = value;
            assert!(
                ring.verify(&sign(ASSERTION_TYP, "k1", &claims), now)
                    .is_none(),
                "{field}"
            );
        }
        // Tampered payload (signature no longer matches).
        let token = sign(ASSERTION_TYP, "k1", &claims(Some(&grants())));
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let mut forged = grants();
        forged.platform_admin = true;
        let mut payload = claims(Some(&forged));
        payload["sub"] = json!("usr_1");
        parts[1] = base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            payload.to_string(),
        );
        assert!(ring.verify(&parts.join("."), now).is_none());
    }

    /// The test key as a signer of any header.
    fn signer() -> jws::Es256Signer {
        let body: String = TEST_KEY
            .lines()
            .filter(|line| !line.starts_with("-----"))
            .collect();
        let der = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, body).unwrap();
        jws::Es256Signer::from_pkcs8(&der).unwrap()
    }

    #[test]
    fn a_critical_or_unencoded_header_is_refused_by_this_verifier() {
        let ring = ring();
        let now = now_secs();
        let claims = claims(Some(&grants()));
        let base = json!({"alg": "ES256", "typ": ASSERTION_TYP, "kid": "k1"});
        let with = |extra: Value| {
            let mut header = base.clone();
            header
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            signer().sign(&header, &claims).unwrap()
        };
        assert!(ring.verify(&with(json!({})), now).is_some());
        for extra in [
            json!({"crit": ["exp"]}),
            json!({"crit": ["alg"]}),
            json!({"crit": ["urn:example:unknown"], "urn:example:unknown": 1}),
            json!({"b64": false, "crit": ["b64"]}),
            json!({"b64": false}),
        ] {
            assert!(ring.verify(&with(extra.clone()), now).is_none(), "{extra}");
        }
    }

    fn offline_access() -> AuthServiceAccess {
        // Nothing listens there: any remote call fails as a dependency error.
        let access = AuthServiceAccess::connect("http://127.0.0.1:9").unwrap();
        *access.keys.ring.write().unwrap() = Some(Arc::new(ring()));
        access
    }

    fn owner(organization_id: &str, location_id: Option<&str>) -> Owner {
        Owner {
            organization_id: organization_id.into(),
            location_id: location_id.map(Into::into),
        }
    }

    fn presented(token: String) -> Credential {
        Credential::presented(token)
    }

    #[tokio::test]
    async fn grants_are_decided_locally_without_calling_the_auth_service() {
        let access = offline_access();
        let credential = access
            .admit(presented(sign(
                ASSERTION_TYP,
                "k1",
                &claims(Some(&grants())),
            )))
            .await
            .unwrap();
        let principal = access
            .authorize(&credential, "orders.read", &owner("org_a", Some("loc_a1")))
            .await
            .unwrap();
        assert_eq!(principal.user_id, "usr_1");
        assert!(matches!(
            access
                .authorize(&credential, "orders.read", &owner("org_b", None))
                .await,
            Err(DomainError::Forbidden)
        ));
        assert!(matches!(
            access
                .authorize(&credential, "orders.write", &owner("org_a", None))
                .await,
            Err(DomainError::Forbidden)
        ));
        assert!(matches!(
            access
                .authorize(&credential, "catalog.read", &owner("org_a", None))
                .await,
            Err(DomainError::ScopeRequired(scope)) if scope == "catalog.read"
        ));
        let (_, scope) = access.resolve(&credential, "orders.read").await.unwrap();
        assert_eq!(
            scope,
            TenantScope {
                all_tenants: false,
                organization_ids: vec!["org_a".into()],
                location_ids: Vec::new(),
            }
        );
    }

    #[tokio::test]
    async fn an_assertion_is_admitted_once_and_its_replay_is_refused() {
        let access = offline_access();
        let token = sign(ASSERTION_TYP, "k1", &claims(Some(&grants())));
        assert!(access.admit(presented(token.clone())).await.is_ok());
        assert!(matches!(
            access.admit(presented(token)).await,
            Err(DomainError::Unauthenticated)
        ));
        // Another assertion (another jti) of the same principal is new.
        let mut other = claims(Some(&grants()));
        other["jti"] = json!("j2");
        assert!(
            access
                .admit(presented(sign(ASSERTION_TYP, "k1", &other)))
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn an_assertion_that_does_not_verify_is_refused_at_admission() {
        let access = offline_access();
        let mut expired = claims(Some(&grants()));
        expired["exp"] = json!(now_secs() - 60);
        let mut foreign_audience = claims(Some(&grants()));
        foreign_audience["aud"] = json!("chataigne-internal");
        for claims in [expired, foreign_audience] {
            assert!(matches!(
                access
                    .admit(presented(sign(ASSERTION_TYP, "k1", &claims)))
                    .await,
                Err(DomainError::Unauthenticated)
            ));
        }
        // What is no assertion at all is the auth-service's to refuse.
        let garbage = access.admit(presented("garbage".into())).await.unwrap();
        assert!(matches!(
            access.resolve(&garbage, "orders.read").await,
            Err(DomainError::Dependency(Dependency::AuthService, _))
        ));
    }

    #[tokio::test]
    async fn nothing_is_decided_on_a_credential_that_was_not_admitted() {
        let access = offline_access();
        let credential = presented(sign(ASSERTION_TYP, "k1", &claims(Some(&grants()))));
        assert!(matches!(
            access
                .authorize(&credential, "orders.read", &owner("org_a", None))
                .await,
            Err(DomainError::Internal(_))
        ));
        assert!(matches!(
            access.resolve(&credential, "orders.read").await,
            Err(DomainError::Internal(_))
        ));
    }

    #[tokio::test]
    async fn without_grants_the_auth_service_is_asked() {
        let access = offline_access();
        let credential = access
            .admit(presented(sign(ASSERTION_TYP, "k1", &claims(None))))
            .await
            .unwrap();
        assert!(matches!(
            access
                .authorize(&credential, "orders.read", &owner("org_a", None))
                .await,
            Err(DomainError::Dependency(Dependency::AuthService, _))
        ));
        assert!(matches!(
            access.resolve(&credential, "orders.read").await,
            Err(DomainError::Dependency(Dependency::AuthService, _))
        ));
    }
}
