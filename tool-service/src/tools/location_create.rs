//! `chataigne_location_create` ↔ `Provisioning/CreateLocation`: a new
//! location in an existing organization, at most once per key. The parent
//! organization is the owner; only live platform admins holding the scope
//! may create (checked like organization creation). For them every owner is
//! authorized, so an unknown parent is `NotFound`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::idempotency::{Once, Written, check_key};
use super::organization_create::check_name;
use super::{CallContext, DeadlineClass, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::DomainError;
use crate::store::Store;
use crate::store::writes::{Effect, NewLocation};

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_location_create",
    title: "Create a location",
    description: "Creates a location (one restaurant) in an existing organization, with its \
postal address, IANA timezone and ISO 4217 currency; reserved to Chataigne platform \
administrators. `idempotency_key` (8 to 255 characters) is new per intended location; a retry \
with the same key and arguments returns the first result with `meta.replayed: true` and \
creates nothing twice. Returns the new `location_id`, its organization, timezone, currency and \
creation time (ISO 8601, location's UTC offset). New locations accept orders.",
    scope: "admin.locations.create",
    kind: ToolKind::Write,
    deadline: DeadlineClass::Write,
    idempotency_key_required: true,
    open_world: false,
    rpc: "chataigne.tools.v1.Provisioning/CreateLocation",
};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocationCreateInput {
    /// Parent organization, from chataigne_organization_create or chataigne_organizations_list, e.g. "org_01bistrochataigne".
    #[schemars(length(min = 1, max = 64))]
    pub organization_id: String,
    /// Display name of the restaurant, 1 to 120 characters.
    #[schemars(length(min = 1, max = 120))]
    pub name: String,
    /// Street address, first line, 1 to 200 characters.
    #[schemars(length(min = 1, max = 200))]
    pub line1: String,
    /// City name, 1 to 100 characters, e.g. "Lyon".
    #[schemars(length(min = 1, max = 100))]
    pub city: String,
    /// Postal code as written locally, 1 to 20 characters, e.g. "69004".
    #[schemars(length(min = 1, max = 20))]
    pub postal_code: String,
    /// ISO 3166-1 alpha-2 country code, e.g. "FR".
    #[schemars(regex(pattern = r"^[A-Z]{2}$"))]
    pub country: String,
    /// IANA timezone, e.g. "Europe/Paris".
    #[schemars(length(min = 1, max = 64))]
    pub timezone: String,
    /// ISO 4217 currency code, e.g. "EUR".
    #[schemars(regex(pattern = r"^[A-Z]{3}$"))]
    pub currency: String,
    /// New random string per intended creation; the same only to retry it.
    #[schemars(length(min = 8, max = 255))]
    pub idempotency_key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CreatedLocation {
    pub location_id: String,
    pub organization_id: String,
    pub name: String,
    pub timezone: String,
    pub currency: String,
    /// ISO 8601 with the location's UTC offset.
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LocationCreateOutput {
    pub location: CreatedLocation,
}

fn check(input: &LocationCreateInput) -> Result<(), DomainError> {
    check_name("name", &input.name, 120)?;
    check_name("line1", &input.line1, 200)?;
    check_name("city", &input.city, 100)?;
    check_name("postal_code", &input.postal_code, 20)?;
    let upper = |v: &str, n: usize| v.len() == n && v.bytes().all(|b| b.is_ascii_uppercase());
    if !upper(&input.country, 2) {
        return Err(DomainError::invalid(
            "country",
            "must be an ISO 3166-1 alpha-2 code",
        ));
    }
    if !upper(&input.currency, 3) {
        return Err(DomainError::invalid("currency", "must be an ISO 4217 code"));
    }
    if input.timezone.parse::<chrono_tz::Tz>().is_err() {
        return Err(DomainError::invalid("timezone", "must be an IANA timezone"));
    }
    check_key(&input.idempotency_key)
}

impl<S: Store, A: Access> Tools<S, A> {
    pub async fn location_create(
        &self,
        input: LocationCreateInput,
        ctx: &CallContext,
    ) -> Result<Written<LocationCreateOutput>, DomainError> {
        check(&input)?;
        let principal = self.platform_admin(ctx, SPEC.scope).await?;
        self.store
            .get_organization(&input.organization_id)
            .await?
            .ok_or(DomainError::NotFound)?;
        let id = format!("loc_{}", uuid::Uuid::now_v7().simple());
        let name = input.name.trim().to_owned();
        let location = CreatedLocation {
            location_id: id.clone(),
            organization_id: input.organization_id.clone(),
            name: name.clone(),
            timezone: input.timezone.clone(),
            currency: input.currency.clone(),
            created_at: crate::present::timestamp(ctx.now_ms, &input.timezone),
        };
        let text = if ctx.locale == "fr" {
            format!("Établissement « {name} » créé ({id}).")
        } else {
            format!("Location \"{name}\" created ({id}).")
        };
        let effect = Effect::Location(NewLocation {
            id,
            organization_id: input.organization_id.clone(),
            name,
            line1: input.line1.trim().to_owned(),
            city: input.city.trim().to_owned(),
            postal_code: input.postal_code.trim().to_owned(),
            country: input.country.clone(),
            timezone: input.timezone.clone(),
            currency: input.currency.clone(),
            created_at_ms: ctx.now_ms,
        });
        let once = Once {
            tool: SPEC.name,
            principal: &principal,
            key: &input.idempotency_key,
            input: &input,
            effect,
        };
        let output = ToolOutput {
            data: LocationCreateOutput { location },
            text,
            next_cursor: None,
        };
        self.write_once(once, output, ctx).await
    }
}
