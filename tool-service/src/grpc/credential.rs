//! Extracts the caller's credential (`authorization: Bearer …`) from gRPC
//! metadata. The tool-service never trusts claims it cannot have the
//! auth-service verify: the credential is passed to it on every check.

use tonic::Request;

use crate::access::Credential;
use crate::domain::DomainError;

/// The bearer credential of `request`; `Unauthenticated` when it is missing
/// or not of the `Bearer` form.
pub fn credential<T>(request: &Request<T>) -> Result<Credential, DomainError> {
    let value = request
        .metadata()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .ok_or(DomainError::Unauthenticated)?;
    let token = value
        .strip_prefix("Bearer ")
        .filter(|t| !t.is_empty())
        .ok_or(DomainError::Unauthenticated)?;
    Ok(Credential(token.to_owned()))
}
