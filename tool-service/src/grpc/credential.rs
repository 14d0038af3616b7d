//! Extracts the caller's credential (`authorization: Bearer …`) from gRPC
//! metadata, read by the shared `Authorization` rule, as presented: the
//! runner admits it (`Access::admit`) before any decision.

use chataigne_common::authorization::{AUTHORIZATION, bearer_token};
use tonic::Request;

use crate::access::Credential;
use crate::domain::DomainError;

/// The bearer credential of `request`; `Unauthenticated` when it is missing
/// or not a `Bearer <token68>` value.
pub fn credential<T>(request: &Request<T>) -> Result<Credential, DomainError> {
    let token = request
        .metadata()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token)
        .ok_or(DomainError::Unauthenticated)?;
    Ok(Credential::presented(token.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &'static str) -> Request<()> {
        let mut request = Request::new(());
        request
            .metadata_mut()
            .insert(AUTHORIZATION, value.parse().expect("ascii"));
        request
    }

    #[test]
    fn only_a_bearer_token_is_a_credential() {
        assert!(matches!(
            credential(&Request::new(())),
            Err(DomainError::Unauthenticated)
        ));
        for refused in ["Basic abc", "Bearer ", "Bearer tok en", "Bearer \"tok\""] {
            assert!(
                matches!(
                    credential(&with(refused)),
                    Err(DomainError::Unauthenticated)
                ),
                "{refused:?}"
            );
        }
        for accepted in ["Bearer eyJ.a-b_c", "bearer eyJ.a-b_c"] {
            let Ok(credential) = credential(&with(accepted)) else {
                panic!("{accepted:?} refused");
            };
            assert_eq!(credential.token(), "eyJ.a-b_c");
        }
    }
}
