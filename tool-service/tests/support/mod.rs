//! Test support shared by the tool-service's integration tests: an access
//! check that grants everything, for tests about something else than
//! authorization (logs, the write switch).

use chataigne_common::demo;
use chataigne_tools::access::{Access, Credential, Principal};
use chataigne_tools::domain::{DomainError, TenantScope};
use chataigne_tools::store::Owner;

/// Grants every permission on every tenant to the user it holds, through the
/// demo client.
#[derive(Clone)]
pub struct AllowAll(pub &'static str);

impl AllowAll {
    fn principal(&self) -> Principal {
        Principal {
            user_id: self.0.to_owned(),
            client_id: demo::DEMO_CLIENT_ID.to_owned(),
        }
    }
}

impl Access for AllowAll {
    async fn authorize(
        &self,
        _credential: &Credential,
        _permission: &str,
        _owner: &Owner,
    ) -> Result<Principal, DomainError> {
        Ok(self.principal())
    }

    async fn resolve(
        &self,
        _credential: &Credential,
        _permission: &str,
    ) -> Result<(Principal, TenantScope), DomainError> {
        Ok((
            self.principal(),
            TenantScope {
                all_tenants: true,
                ..TenantScope::default()
            },
        ))
    }
}
