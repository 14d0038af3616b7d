//! What the tools of one location share: resolving and authorizing the
//! location by its real owner.

use super::{CallContext, Tools};
use crate::access::{Access, Principal};
use crate::domain::DomainError;
use crate::store::{Owner, Store};

impl<S: Store, A: Access> Tools<S, A> {
    /// The real owner of `location_id`, after checking `permission` on it.
    /// An unknown location is refused exactly like another tenant's.
    pub(crate) async fn authorize_location(
        &self,
        location_id: &str,
        permission: &str,
        ctx: &CallContext,
    ) -> Result<(Owner, Principal), DomainError> {
        let owner = self
            .store
            .location_owner(location_id)
            .await?
            .ok_or(DomainError::Forbidden)?;
        let principal = self
            .access
            .authorize(&ctx.credential, permission, &owner)
            .await?;
        Ok((owner, principal))
    }
}
