//! Authentication at the edge: the bearer token of each POST is exchanged with
//! the auth-service for a principal and a principal assertion for this
//! request's one tool call (valid no longer than the longest tool deadline,
//! accepted once by the tool-service). The gateway proves itself with its
//! credential in metadata; a refusal of that credential is a misconfiguration
//! (the dependency error, logged), never the caller's 401. The user's token goes nowhere else;
//! backends only ever see the assertion.
//!
//! Credentials are read strictly: exactly one `Authorization` header (two
//! are refused with 400 before either is read), the `Bearer` scheme only
//! (case-insensitive, RFC 9110 §11.1), separated by spaces from a token68
//! value (RFC 9110 §11.2; RFC 6750 §2.1). Anything else counts as no token.

use std::sync::Arc;
use std::time::Duration;

use chataigne_common::assertion::AssertionContract;
use chataigne_common::balance::Balanced;
use chataigne_common::codes::decode_status;
use chataigne_common::status_details::DetailKey;
use chataigne_common::{Category, ErrorCode};
use chataigne_proto::auth::v1::AuthenticateRequest;
use chataigne_proto::auth::v1::auth_service_client::AuthServiceClient;
use http::{HeaderMap, header};
use secrecy::SecretString;

use crate::endpoints::Endpoint;
use crate::error::GatewayError;
use crate::ops::breaker::Breaker;
use crate::ops::counters::{Dependency, Metrics};

/// What authenticating a request needs: the auth-service's client and its
/// breaker, this gateway's credential, the metrics.
pub struct Authenticator {
    pub client: AuthServiceClient<Balanced>,
    /// Open while the auth-service is known down or hung.
    pub breaker: Arc<Breaker>,
    /// `gateway_credential`, presented on every `Authenticate`.
    pub credential: Option<SecretString>,
    pub metrics: Arc<Metrics>,
}

/// Who is calling, as the auth-service vouches for it.
#[derive(Clone)]
pub struct Principal {
    pub user_id: String,
    pub client_id: String,
    /// Granted scopes still covered by the live consent.
    pub scopes: Vec<String>,
    /// Signed assertion presented to the tool-service.
    pub assertion: String,
}

impl std::fmt::Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Principal")
            .field("user_id", &self.user_id)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Principal {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Refuses a request carrying more than one `Authorization` header, before
/// any of them is read (which one a proxy or a library would pick differs).
pub fn single_authorization(headers: &HeaderMap) -> Result<(), GatewayError> {
    if headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .nth(1)
        .is_some()
    {
        tracing::info!(
            reason = "ambiguous_credentials",
            "request refused: more than one Authorization header"
        );
        return Err(GatewayError::AmbiguousCredentials);
    }
    Ok(())
}

/// The token of the one `Authorization: Bearer <token68>` header, if any
/// (the shared rule of [`chataigne_common::authorization::bearer_token`]).
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    chataigne_common::authorization::bearer_token(value)
}

/// The reason counted for a refused token: the auth-service's `reason`
/// metadata, else the refusal's code.
fn refusal_reason(decoded: &chataigne_common::codes::DecodedStatus) -> &str {
    decoded
        .detail(DetailKey::Reason)
        .unwrap_or(decoded.code.as_str())
}

/// Authenticates the request for `endpoint`: 401 when no valid token, 503 (never
/// 401) when the auth-service cannot answer in time. The request id travels as
/// `x-request-id` for the auth-service's log line; the token goes nowhere else.
/// The principal assertion is asked for `valid_for`: the one call it serves.
pub async fn authenticate(
    auth: &Authenticator,
    endpoint: &Endpoint,
    headers: &HeaderMap,
    request_id: &str,
    (deadline, valid_for): (Duration, Duration),
) -> Result<Principal, GatewayError> {
    let metrics = &auth.metrics;
    let refused = |token_presented| GatewayError::Unauthenticated {
        metadata_url: endpoint.metadata_url.clone(),
        token_presented,
    };
    let Some(token) = bearer_token(headers) else {
        metrics.auth_failure("missing_token");
        return Err(refused(false));
    };
    // Known down or hung (its breaker is open): refused at once.
    if auth.breaker.is_open() {
        metrics.dependency_error(Dependency::AuthService);
        return Err(GatewayError::AuthUnavailable);
    }
    let mut request = tonic::Request::new(AuthenticateRequest {
        access_token: token.to_owned(),
        resource: endpoint.resource.clone(),
        valid_for_ms: i64::try_from(valid_for.as_millis()).unwrap_or(i64::MAX),
    });
    if let Some(credential) = &auth.credential
        && let Ok(value) = tonic::metadata::MetadataValue::try_from(
            secrecy::ExposeSecret::expose_secret(credential),
        )
    {
        request
            .metadata_mut()
            .insert(AssertionContract::CALLER_METADATA, value);
    }
    request.set_timeout(deadline);
    chataigne_common::trace_context::inject(request.metadata_mut());
    if let Ok(value) = tonic::metadata::MetadataValue::try_from(request_id) {
        request.metadata_mut().insert("x-request-id", value);
    }
    let mut client = auth.client.clone();
    let unavailable = GatewayError::AuthUnavailable;
    // A check already sent when the auth-service is found unreachable or hung
    // ends then, with the dependency error, not at its deadline.
    let answered = tokio::select! {
        answered = tokio::time::timeout(deadline, client.authenticate(request)) => answered,
        () = auth.breaker.hung() => {
            metrics.dependency_error(Dependency::AuthService);
            tracing::warn!("auth-service found hung: the token check waiting on it ends");
            return Err(unavailable);
        }
    };
    let response = match answered {
        Err(_elapsed) => {
            metrics.dependency_error(Dependency::AuthService);
            tracing::warn!("auth-service did not answer within its deadline");
            return Err(unavailable);
        }
        Ok(Ok(response)) => response.into_inner(),
        Ok(Err(status)) if status.code() == tonic::Code::PermissionDenied => {
            // Only a refused caller credential: this gateway's configuration.
            metrics.dependency_error(Dependency::AuthService);
            tracing::error!(
                "the auth-service refused this gateway's credential: gateway_credential must be set to the auth-service's value"
            );
            return Err(unavailable);
        }
        Ok(Err(status)) => {
            let decoded = decode_status(&status);
            if decoded.code == ErrorCode::Overloaded {
                metrics.dependency_error(Dependency::AuthService);
                tracing::warn!("auth-service overloaded: the token check was shed");
                return Err(GatewayError::AuthOverloaded {
                    retry_after: decoded.retry_after,
                });
            }
            return Err(match decoded.code.category() {
                Category::Authentication
                | Category::Authorization
                | Category::Validation
                | Category::NotFound
                | Category::Conflict => {
                    metrics.auth_failure(refusal_reason(&decoded));
                    refused(true)
                }
                Category::RateLimit => {
                    metrics.auth_failure("rate_limited");
                    GatewayError::AuthRateLimited {
                        retry_after: decoded.retry_after,
                    }
                }
                Category::Timeout | Category::Dependency | Category::Internal => {
                    metrics.dependency_error(Dependency::AuthService);
                    tracing::warn!(
                        grpc_code = ?status.code(),
                        code = decoded.code.as_str(),
                        "auth-service unavailable"
                    );
                    unavailable
                }
            });
        }
    };
    match response.principal {
        Some(principal) if !response.assertion.is_empty() => Ok(Principal {
            user_id: principal.user_id,
            client_id: principal.client_id,
            scopes: principal.scopes,
            assertion: response.assertion,
        }),
        _ => {
            metrics.dependency_error(Dependency::AuthService);
            tracing::error!("auth-service answered without a principal or an assertion");
            Err(unavailable)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn with(values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::AUTHORIZATION, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn only_a_bearer_token68_counts() {
        assert_eq!(bearer_token(&HeaderMap::new()), None);
        for refused in [
            "Basic abc",
            "Bearer ",
            "Bearer",
            "Bearertok",
            "Bearer\ttok",
            "Bearer tok en",
            "Bearer tok,other",
            "Bearer \"tok\"",
            "Bearer ===",
            "Token tok",
            "Bearer tok=a",
        ] {
            assert_eq!(bearer_token(&with(&[refused])), None, "{refused:?}");
        }
        for (accepted, token) in [
            ("bearer  tok", "tok"),
            ("Bearer tok", "tok"),
            ("BEARER tok", "tok"),
            ("bEaReR eyJ.a-b_c~d+e/f==", "eyJ.a-b_c~d+e/f=="),
        ] {
            assert_eq!(
                bearer_token(&with(&[accepted])),
                Some(token),
                "{accepted:?}"
            );
        }
    }

    #[test]
    fn two_authorization_headers_are_refused_before_either_is_read() {
        assert!(single_authorization(&with(&["Bearer good"])).is_ok());
        assert!(single_authorization(&HeaderMap::new()).is_ok());
        assert!(matches!(
            single_authorization(&with(&["Bearer good", "Bearer other"])),
            Err(GatewayError::AmbiguousCredentials)
        ));
        assert!(matches!(
            single_authorization(&with(&["Bearer good", "Basic x"])),
            Err(GatewayError::AmbiguousCredentials)
        ));
    }
}
