//! `Provisioning`: the typed RPCs of the idempotent tenant creations, for
//! internal callers. Each runs the same tool as the MCP path through the
//! runner (write switch, deadline, required fields) and reports whether it
//! replayed; this file holds the declaration and the conversions. Both also
//! need a live platform-admin role.
//!
//! | RPC (`chataigne.tools.v1.`)       | kind  | scope                      | required fields                                                                               |
//! |-----------------------------------|-------|----------------------------|-----------------------------------------------------------------------------------------------|
//! | `Provisioning/CreateOrganization` | write | admin.organizations.create | name, idempotency_key                                                                         |
//! | `Provisioning/CreateLocation`     | write | admin.locations.create     | organization_id, name, line1, city, postal_code, country, timezone, currency, idempotency_key |

use chataigne_proto::tools::v1 as pb;

use super::fields::typed_service;
use crate::domain::DomainError;
use crate::tools::Answered;
use crate::tools::location_create::{LocationCreateInput, LocationCreateOutput};
use crate::tools::organization_create::{OrganizationCreateInput, OrganizationCreateOutput};

typed_service! {
    /// The `Provisioning` service.
    ProvisioningService serves provisioning_server::Provisioning {
        create_organization: CreateOrganizationRequest => OrganizationCreate
            -> CreateOrganizationResponse { name, idempotency_key };
        create_location: CreateLocationRequest => LocationCreate -> CreateLocationResponse {
            organization_id, name, line1, city, postal_code, country, timezone, currency,
            idempotency_key
        };
    }
}

impl TryFrom<pb::CreateOrganizationRequest> for OrganizationCreateInput {
    type Error = DomainError;
    fn try_from(request: pb::CreateOrganizationRequest) -> Result<Self, DomainError> {
        Ok(OrganizationCreateInput {
            name: request.name,
            idempotency_key: request.idempotency_key,
        })
    }
}

impl From<Answered<OrganizationCreateOutput>> for pb::CreateOrganizationResponse {
    fn from(answer: Answered<OrganizationCreateOutput>) -> Self {
        let org = answer.data.organization;
        pb::CreateOrganizationResponse {
            organization: Some(pb::CreatedOrganization {
                organization_id: org.id,
                name: org.name,
                created_at: org.created_at,
            }),
            replayed: answer.replayed,
        }
    }
}

impl TryFrom<pb::CreateLocationRequest> for LocationCreateInput {
    type Error = DomainError;
    fn try_from(request: pb::CreateLocationRequest) -> Result<Self, DomainError> {
        Ok(LocationCreateInput {
            organization_id: request.organization_id,
            name: request.name,
            line1: request.line1,
            city: request.city,
            postal_code: request.postal_code,
            country: request.country,
            timezone: request.timezone,
            currency: request.currency,
            idempotency_key: request.idempotency_key,
        })
    }
}

impl From<Answered<LocationCreateOutput>> for pb::CreateLocationResponse {
    fn from(answer: Answered<LocationCreateOutput>) -> Self {
        let loc = answer.data.location;
        pb::CreateLocationResponse {
            location: Some(pb::CreatedLocation {
                location_id: loc.id,
                organization_id: loc.organization_id,
                name: loc.name,
                timezone: loc.timezone,
                currency: loc.currency,
                created_at: loc.created_at,
            }),
            replayed: answer.replayed,
        }
    }
}
