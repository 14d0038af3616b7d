//! The gRPC adapter: validates AuthService requests, calls the core, and maps
//! the crate's error to a `tonic::Status` with the shared error codes, in one
//! place. Each RPC is timed, counted and logged in one info line (RPC,
//! outcome, latency, who when known, the caller's request id; never a token).
//! `Authenticate` first admits its caller: only the gateway, by the credential
//! it presents in metadata ([`GatewayCredential`]).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use chataigne_common::ErrorCode;
use chataigne_common::assertion::AssertionContract;
use chataigne_common::codes::{FieldViolation, decode_status};
use chataigne_common::status_details::DetailKey;
use chataigne_proto::auth::v1 as pb;
use chataigne_proto::auth::v1::auth_service_server::{AuthService, AuthServiceServer};
use secrecy::{ExposeSecret, SecretString};
use tonic::{Request, Response, Status};

use crate::core::Core;
use crate::error::{AuthError, AuthFailure};
use crate::metrics::AuthMetrics;
use crate::model::{Access, Authenticated, Principal};

const MAX_TOKEN_LEN: usize = 8 * 1024;
const MAX_RESOURCE_LEN: usize = 2048;
const MAX_ID_LEN: usize = 128;
/// Longest caller request id written to the log.
const MAX_REQUEST_ID_LEN: usize = 64;

/// The credential the gateway, the only caller of `Authenticate`, presents
/// in the metadata [`AssertionContract::CALLER_METADATA`]; none configured
/// admits nobody.
pub struct GatewayCredential(Option<SecretString>);

impl GatewayCredential {
    pub fn new(configured: Option<SecretString>) -> GatewayCredential {
        if configured.is_none() {
            tracing::warn!(
                "gateway_credential is not set: Authenticate refuses every caller (no MCP call can be authenticated)"
            );
        }
        GatewayCredential(configured)
    }

    /// Whether `request` carries the configured credential (compared in
    /// constant time).
    fn admits<T>(&self, request: &Request<T>) -> bool {
        let (Some(expected), Some(presented)) = (
            &self.0,
            request.metadata().get(AssertionContract::CALLER_METADATA),
        ) else {
            return false;
        };
        aws_lc_rs::constant_time::verify_slices_are_equal(
            presented.as_bytes(),
            expected.expose_secret().as_bytes(),
        )
        .is_ok()
    }
}

/// The refusal of a caller that is not the gateway: no detail at all.
fn caller_refused() -> Status {
    Status::permission_denied("permission denied")
}

/// Serves the AuthService, the standard health service and server reflection
/// on `listener`, behind the shared gRPC server stack under `limits`, until
/// `shutdown` resolves.
pub async fn serve(
    core: Arc<Core>,
    gateway: GatewayCredential,
    metrics: Arc<AuthMetrics>,
    limits: &chataigne_common::grpc_server::GrpcServerLimits,
    listener: chataigne_common::grpc_server::GrpcListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    // Plain or TLS; small request/response exchanges never wait on Nagle.
    let incoming = listener.incoming();
    // grpc.health.v1: SERVING while the database answers (a cheap indexed
    // lookup), NOT_SERVING once shutdown starts; `liveness` SERVING throughout.
    let probed = core.clone();
    let probe = move || {
        let core = probed.clone();
        async move {
            let store = core.store();
            let ping = store.user_exists("");
            chataigne_common::grpc_health::probe_pool(ping, || store.pool_stats()).await
        }
    };
    let (health, shutdown) = chataigne_common::grpc_health::serving_while(shutdown, probe).await;
    // Server reflection (v1, v1alpha) of the AuthService, health and itself.
    let (reflection, reflection_v1alpha) = chataigne_common::grpc_reflection::services(
        chataigne_proto::FILE_DESCRIPTOR_SET,
        pb::PACKAGE,
    )
    .context("reflection descriptors")?;
    // The stack every Chataigne gRPC server declares (HTTP/2 limits, the
    // caller's deadline, load shedding past the concurrency limit), then:
    chataigne_common::grpc_server::builder(limits)
        // One span per RPC, child of the caller's W3C trace context.
        .trace_fn(chataigne_common::trace_context::server_span("auth-service"))
        .add_service(health)
        .add_service(reflection)
        .add_service(reflection_v1alpha)
        .add_service(AuthServiceServer::new(AuthGrpc {
            core,
            gateway,
            metrics,
        }))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .context("gRPC server")
}

/// The tonic service over [`Core`].
pub struct AuthGrpc {
    core: Arc<Core>,
    gateway: GatewayCredential,
    metrics: Arc<AuthMetrics>,
}

/// One RPC being served: what its log line and metrics need.
struct Call {
    rpc: &'static str,
    started: Instant,
    /// The caller's `x-request-id`, when it is short and plain.
    request_id: Option<String>,
}

impl Call {
    fn start<T>(rpc: &'static str, request: &Request<T>) -> Call {
        let request_id = request
            .metadata()
            .get("x-request-id")
            .and_then(|value| value.to_str().ok())
            .filter(|id| {
                !id.is_empty()
                    && id.len() <= MAX_REQUEST_ID_LEN
                    && id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            })
            .map(str::to_owned);
        Call {
            rpc,
            started: Instant::now(),
            request_id,
        }
    }
}

impl AuthGrpc {
    /// Records `call`'s outcome (metrics and one log line) and maps an error
    /// to its status.
    fn answer<T>(
        &self,
        call: Call,
        result: Result<T, AuthError>,
        principal: fn(&T) -> &Principal,
    ) -> Result<T, Status> {
        let took = call.started.elapsed();
        let (outcome, who, status) = match &result {
            Ok(value) => ("ok", Some(principal(value)), None),
            Err(error) => {
                let status = to_status(error);
                (decode_status(&status).code.as_str(), None, Some(status))
            }
        };
        self.metrics
            .rpc(call.rpc, outcome, result.as_ref().err(), took);
        tracing::info!(
            rpc = call.rpc,
            outcome,
            latency_ms = took.as_secs_f64() * 1000.0,
            client_id = who.map_or("-", |p| p.client_id.as_str()),
            user_id = who.map_or("-", |p| p.user_id.as_str()),
            request_id = call.request_id.as_deref().unwrap_or("-"),
            "auth rpc"
        );
        match status {
            Some(status) => Err(status),
            None => result.map_err(|error| to_status(&error)),
        }
    }
}

#[tonic::async_trait]
impl AuthService for AuthGrpc {
    async fn authenticate(
        &self,
        request: Request<pb::AuthenticateRequest>,
    ) -> Result<Response<pb::AuthenticateResponse>, Status> {
        let call = Call::start("Authenticate", &request);
        if !self.gateway.admits(&request) {
            self.metrics
                .rpc(call.rpc, "caller_refused", None, call.started.elapsed());
            tracing::info!(
                rpc = call.rpc,
                outcome = "caller_refused",
                request_id = call.request_id.as_deref().unwrap_or("-"),
                "auth rpc"
            );
            return Err(caller_refused());
        }
        let request = request.into_inner();
        let result = async {
            let token = credential(&request.access_token)?;
            if request.resource.is_empty() || request.resource.len() > MAX_RESOURCE_LEN {
                return Err(AuthError::invalid(
                    "resource",
                    "must be the canonical URL of the protected resource",
                ));
            }
            let valid_for = match u64::try_from(request.valid_for_ms) {
                Ok(0) => None,
                Ok(ms) => Some(Duration::from_millis(ms)),
                Err(_) => {
                    return Err(AuthError::invalid(
                        "valid_for_ms",
                        "must be the deadline of the call in milliseconds, or 0",
                    ));
                }
            };
            self.core
                .authenticate(token, &request.resource, valid_for)
                .await
        }
        .await;
        let authenticated = self.answer(call, result, |a: &Authenticated| &a.principal)?;
        Ok(Response::new(pb::AuthenticateResponse {
            principal: Some(principal(authenticated.principal)),
            assertion: authenticated.assertion,
            assertion_expires_at: authenticated.assertion_expires_at,
        }))
    }

    async fn authorize(
        &self,
        request: Request<pb::AuthorizeRequest>,
    ) -> Result<Response<pb::AuthorizeResponse>, Status> {
        let call = Call::start("Authorize", &request);
        let request = request.into_inner();
        let result = async {
            let assertion = credential(&request.assertion)?;
            let permission = permission(&request.permission)?;
            if request.organization_id.is_empty() || request.organization_id.len() > MAX_ID_LEN {
                return Err(AuthError::invalid(
                    "organization_id",
                    "must be the identifier of the target's organization",
                ));
            }
            if request.location_id.len() > MAX_ID_LEN {
                return Err(AuthError::invalid("location_id", "is too long"));
            }
            let location_id = Some(request.location_id.as_str()).filter(|id| !id.is_empty());
            self.core
                .authorize(assertion, permission, &request.organization_id, location_id)
                .await
        }
        .await;
        let authorized = self.answer(call, result, |p: &Principal| p)?;
        Ok(Response::new(pb::AuthorizeResponse {
            principal: Some(principal(authorized)),
        }))
    }

    async fn resolve_access(
        &self,
        request: Request<pb::ResolveAccessRequest>,
    ) -> Result<Response<pb::ResolveAccessResponse>, Status> {
        let call = Call::start("ResolveAccess", &request);
        let request = request.into_inner();
        let result = async {
            let assertion = credential(&request.assertion)?;
            let permission = permission(&request.permission)?;
            self.core.resolve_access(assertion, permission).await
        }
        .await;
        let access = self.answer(call, result, |a: &Access| &a.principal)?;
        Ok(Response::new(pb::ResolveAccessResponse {
            principal: Some(principal(access.principal)),
            all_tenants: access.all_tenants,
            organization_ids: access.organization_ids,
            location_ids: access.location_ids,
        }))
    }

    async fn assertion_keys(
        &self,
        _request: Request<pb::AssertionKeysRequest>,
    ) -> Result<Response<pb::AssertionKeysResponse>, Status> {
        // Public keys only: no caller credential is needed.
        let tokens = self.core.tokens();
        Ok(Response::new(pb::AssertionKeysResponse {
            issuer: tokens.issuer().to_owned(),
            jwks: tokens.keys().jwks().to_string(),
        }))
    }
}

/// A missing or oversized token is an invalid token, not a malformed request.
fn credential(token: &str) -> Result<&str, AuthError> {
    if token.is_empty() || token.len() > MAX_TOKEN_LEN {
        Err(AuthFailure::TokenInvalid.into())
    } else {
        Ok(token)
    }
}

fn permission(permission: &str) -> Result<&str, AuthError> {
    if chataigne_common::scopes::is_known(permission) {
        Ok(permission)
    } else {
        Err(AuthError::invalid(
            "permission",
            "must be a known permission in scope form, e.g. orders.read",
        ))
    }
}

fn principal(principal: Principal) -> pb::Principal {
    pb::Principal {
        user_id: principal.user_id,
        client_id: principal.client_id,
        session_id: principal.session_id,
        scopes: principal.scopes,
        platform_admin: principal.platform_admin,
        display_name: principal.display_name,
    }
}

/// The one mapping of [`AuthError`] to a status. Messages are the shared safe
/// defaults; the failure detail travels only as `ErrorInfo` metadata (or in logs).
pub fn to_status(error: &AuthError) -> Status {
    match error {
        AuthError::Unauthenticated(failure) => {
            tracing::info!(reason = failure.reason(), "authentication refused");
            let code = ErrorCode::Unauthenticated;
            code.to_status(
                code.default_message(),
                None,
                &[],
                &[DetailKey::Reason.pair(failure.reason())],
            )
        }
        AuthError::ScopeRequired { scope } => {
            let code = ErrorCode::ScopeRequired;
            code.to_status(
                code.default_message(),
                None,
                &[],
                &[DetailKey::Scope.pair(scope.clone())],
            )
        }
        AuthError::Forbidden => ErrorCode::ResourceForbidden.status(),
        AuthError::InvalidArgument { field, description } => {
            let code = ErrorCode::InvalidArguments;
            code.to_status(
                format!("The request field {field} is invalid. Correct it and call again."),
                None,
                &[FieldViolation {
                    field: (*field).to_owned(),
                    description: description.clone(),
                }],
                &[],
            )
        }
        AuthError::NotFound { .. } => ErrorCode::ResourceNotFound.status(),
        AuthError::OAuth { code, .. } => {
            let status = ErrorCode::InvalidArguments;
            status.to_status(
                status.default_message(),
                None,
                &[],
                &[("oauth_error".to_owned(), code.as_str().to_owned())],
            )
        }
        AuthError::Unavailable(source) => {
            tracing::warn!(error = %source, "auth storage unavailable");
            let code = ErrorCode::DependencyUnavailable;
            code.to_status(
                code.default_message(),
                Some(Duration::from_secs(1)),
                &[],
                &[],
            )
        }
        AuthError::Internal(detail) => {
            tracing::error!(detail = %detail, "internal error");
            ErrorCode::InternalError.status()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_short_plain_request_id_is_kept_for_the_log() {
        let with_id = |id: &str| {
            let mut request = Request::new(());
            request
                .metadata_mut()
                .insert("x-request-id", id.parse().unwrap());
            Call::start("Authenticate", &request).request_id
        };
        assert_eq!(
            with_id("0192f3c4-7b1e-7c2d-9e8f-0a1b2c3d4e5f").as_deref(),
            Some("0192f3c4-7b1e-7c2d-9e8f-0a1b2c3d4e5f")
        );
        assert_eq!(with_id("a b\"c"), None);
        assert_eq!(with_id(&"x".repeat(65)), None);
        assert_eq!(Call::start("Authorize", &Request::new(())).request_id, None);
    }
    use crate::store::StoreError;
    use chataigne_common::codes::decode_status;

    #[test]
    fn authentication_failures_carry_the_reason_only_in_metadata() {
        for failure in [
            AuthFailure::TokenInvalid,
            AuthFailure::TokenExpired,
            AuthFailure::AudienceMismatch,
            AuthFailure::SessionRevoked,
            AuthFailure::UserInactive,
            AuthFailure::ClientDisabled,
            AuthFailure::ConsentRevoked,
        ] {
            let status = to_status(&AuthError::Unauthenticated(failure));
            assert_eq!(status.code(), tonic::Code::Unauthenticated);
            let decoded = decode_status(&status);
            assert_eq!(decoded.code, ErrorCode::Unauthenticated);
            assert_eq!(
                decoded.metadata,
                vec![("reason".to_owned(), failure.reason().to_owned())]
            );
            assert!(!status.message().contains(failure.reason()));
        }
    }

    #[test]
    fn storage_and_internal_details_never_leak() {
        let status = to_status(&AuthError::Unavailable(StoreError::Unavailable(
            "connection refused 10.1.2.3:5432".into(),
        )));
        let decoded = decode_status(&status);
        assert_eq!(decoded.code, ErrorCode::DependencyUnavailable);
        assert!(decoded.retry_after.is_some());
        assert!(!status.message().contains("10.1.2.3"));

        let status = to_status(&AuthError::Internal("duplicate key users_pkey".into()));
        assert_eq!(decode_status(&status).code, ErrorCode::InternalError);
        assert!(!status.message().contains("users_pkey"));
    }

    #[test]
    fn scope_and_membership_refusals_use_the_authorization_codes() {
        let status = to_status(&AuthError::ScopeRequired {
            scope: "orders.write".into(),
        });
        let decoded = decode_status(&status);
        assert_eq!(decoded.code, ErrorCode::ScopeRequired);
        assert_eq!(
            decoded.metadata,
            vec![("scope".to_owned(), "orders.write".to_owned())]
        );
        assert_eq!(
            decode_status(&to_status(&AuthError::Forbidden)).code,
            ErrorCode::ResourceForbidden
        );
    }
}
