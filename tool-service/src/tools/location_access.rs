//! What the tools of one record share: authorizing it by its real owner, and
//! reading the location a call is about.

use super::{CallContext, Tools};
use crate::access::{Access, Principal};
use crate::domain::DomainError;
use crate::store::{LocationRecord, Owner, Store};

impl<S: Store, A: Access> Tools<S, A> {
    /// `owner`, the real owner a store lookup found for a record, after
    /// checking `permission` on it. An unknown record (no owner) is refused
    /// exactly like another tenant's.
    pub(crate) async fn authorize_owner(
        &self,
        owner: Option<Owner>,
        permission: &str,
        ctx: &CallContext,
    ) -> Result<(Owner, Principal), DomainError> {
        let owner = owner.ok_or(DomainError::Forbidden)?;
        let principal = self
            .access
            .authorize(&ctx.credential, permission, &owner)
            .await?;
        Ok((owner, principal))
    }

    /// The real owner of `location_id`, after checking `permission` on it.
    /// An unknown location is refused exactly like another tenant's.
    pub(crate) async fn authorize_location(
        &self,
        location_id: &str,
        permission: &str,
        ctx: &CallContext,
    ) -> Result<(Owner, Principal), DomainError> {
        let owner = self.store.location_owner(location_id).await?;
        self.authorize_owner(owner, permission, ctx).await
    }

    /// The location `location_id`, read after its authorization.
    pub(crate) async fn location(&self, location_id: &str) -> Result<LocationRecord, DomainError> {
        self.store
            .get_location(location_id)
            .await?
            .ok_or(DomainError::NotFound)
    }
}
