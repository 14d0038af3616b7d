//! The gRPC adapter: validates AuthService requests, calls the core, and maps
//! the crate's error to a `tonic::Status` with the shared error codes, in one place.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chataigne_common::ErrorCode;
use chataigne_common::codes::FieldViolation;
use chataigne_proto::auth::v1 as pb;
use chataigne_proto::auth::v1::auth_service_server::{AuthService, AuthServiceServer};
use tokio::net::TcpListener;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

use crate::core::Core;
use crate::error::{AuthError, AuthFailure};
use crate::model::Principal;

const MAX_TOKEN_LEN: usize = 8 * 1024;
const MAX_RESOURCE_LEN: usize = 2048;
const MAX_ID_LEN: usize = 128;

/// Serves the AuthService and the standard health service on `listener`
/// until `shutdown` resolves.
pub async fn serve(
    core: Arc<Core>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let incoming = TcpListenerStream::new(listener).map(|stream| {
        if let Ok(stream) = &stream {
            // Small request/response exchanges: never wait on Nagle.
            let _ = stream.set_nodelay(true);
        }
        stream
    });
    // grpc.health.v1: SERVING from here, NOT_SERVING once shutdown starts.
    let (health, shutdown) = chataigne_common::grpc_health::serving_until(shutdown).await;
    tonic::transport::Server::builder()
        // One span per RPC, child of the caller's W3C trace context.
        .trace_fn(chataigne_common::trace_context::server_span("auth-service"))
        .add_service(health)
        .add_service(AuthServiceServer::new(AuthGrpc { core }))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .context("gRPC server")
}

/// The tonic service over [`Core`].
pub struct AuthGrpc {
    core: Arc<Core>,
}

#[tonic::async_trait]
impl AuthService for AuthGrpc {
    async fn authenticate(
        &self,
        request: Request<pb::AuthenticateRequest>,
    ) -> Result<Response<pb::AuthenticateResponse>, Status> {
        let request = request.into_inner();
        let result = async {
            let token = credential(&request.access_token)?;
            if request.resource.is_empty() || request.resource.len() > MAX_RESOURCE_LEN {
                return Err(AuthError::invalid(
                    "resource",
                    "must be the canonical URL of the protected resource",
                ));
            }
            self.core.authenticate(token, &request.resource).await
        }
        .await;
        let authenticated = result.map_err(|e| to_status(&e))?;
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
        let authorized = result.map_err(|e| to_status(&e))?;
        Ok(Response::new(pb::AuthorizeResponse {
            principal: Some(principal(authorized)),
        }))
    }

    async fn resolve_access(
        &self,
        request: Request<pb::ResolveAccessRequest>,
    ) -> Result<Response<pb::ResolveAccessResponse>, Status> {
        let request = request.into_inner();
        let result = async {
            let assertion = credential(&request.assertion)?;
            let permission = permission(&request.permission)?;
            self.core.resolve_access(assertion, permission).await
        }
        .await;
        let access = result.map_err(|e| to_status(&e))?;
        Ok(Response::new(pb::ResolveAccessResponse {
            principal: Some(principal(access.principal)),
            all_tenants: access.all_tenants,
            organization_ids: access.organization_ids,
            location_ids: access.location_ids,
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
                &[("reason".to_owned(), failure.reason().to_owned())],
            )
        }
        AuthError::ScopeRequired { scope } => {
            let code = ErrorCode::ScopeRequired;
            code.to_status(
                code.default_message(),
                None,
                &[],
                &[("scope".to_owned(), scope.clone())],
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
