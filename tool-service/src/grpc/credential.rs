//! Extracts the caller's credential (`authorization: Bearer …`) from gRPC
//! metadata. The tool-service never trusts claims it cannot have the
//! auth-service verify: the credential is passed to it on every check.

use tonic::{Request, Status};

use crate::access::Credential;

pub fn credential<T>(request: &Request<T>) -> Result<Credential, Status> {
    let value = request
        .metadata()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| chataigne_common::ErrorCode::Unauthenticated.status())?;
    let token = value
        .strip_prefix("Bearer ")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| chataigne_common::ErrorCode::Unauthenticated.status())?;
    Ok(Credential(token.to_owned()))
}
