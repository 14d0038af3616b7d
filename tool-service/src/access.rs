//! Who may act on what: the tool-service asks the auth-service, presenting the
//! caller's principal assertion, after resolving the target's real owner from
//! its own store. `Access` is the port the tools use; `AuthServiceAccess` is its
//! gRPC adapter.

use std::future::Future;
use std::time::Duration;

use chataigne_common::ErrorCode;
use chataigne_common::codes::decode_status;
use chataigne_proto::auth::v1::{
    AuthorizeRequest, ResolveAccessRequest, auth_service_client::AuthServiceClient,
};
use tonic::transport::{Channel, Endpoint};

use crate::domain::{Dependency, DomainError, TenantScope};
use crate::store::Owner;

/// The authenticated caller as the auth-service vouches for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub user_id: String,
    pub client_id: String,
}

/// The caller's credential, as received (never logged).
#[derive(Clone)]
pub struct Credential(pub String);

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credential(..)")
    }
}

pub trait Access: Clone + Send + Sync + 'static {
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

/// [`Access`] backed by the auth-service's gRPC API, over one shared channel.
#[derive(Clone)]
pub struct AuthServiceAccess {
    client: AuthServiceClient<Channel>,
}

impl AuthServiceAccess {
    /// Prepares a lazily connecting channel: the service starts even if the
    /// auth-service is not up yet, and calls fail fast while it is down.
    pub fn connect(url: &str) -> anyhow::Result<AuthServiceAccess> {
        let channel = Endpoint::from_shared(url.to_owned())?
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .connect_lazy();
        Ok(AuthServiceAccess {
            client: AuthServiceClient::new(channel),
        })
    }
}

impl Access for AuthServiceAccess {
    async fn authorize(
        &self,
        credential: &Credential,
        permission: &str,
        owner: &Owner,
    ) -> Result<Principal, DomainError> {
        let mut request = tonic::Request::new(AuthorizeRequest {
            assertion: credential.0.clone(),
            permission: permission.to_owned(),
            organization_id: owner.organization_id.clone(),
            location_id: owner.location_id.clone().unwrap_or_default(),
        });
        chataigne_common::trace_context::inject(request.metadata_mut());
        let response = self
            .client
            .clone()
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
        let response = self
            .client
            .clone()
            .resolve_access(ResolveAccessRequest {
                assertion: credential.0.clone(),
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
                .metadata
                .iter()
                .find(|(k, _)| k == "scope")
                .map(|(_, v)| v.clone())
                .unwrap_or_default(),
        ),
        ErrorCode::ResourceForbidden | ErrorCode::ResourceNotFound => DomainError::Forbidden,
        ErrorCode::Unauthenticated => DomainError::Unauthenticated,
        ErrorCode::DependencyUnavailable | ErrorCode::ToolTimeout | ErrorCode::RateLimited => {
            DomainError::Dependency(Dependency::AuthService, status.code().to_string())
        }
        _ => DomainError::Internal(format!("auth-service: {}", status.code())),
    }
}
