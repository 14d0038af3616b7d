//! `chataigne_location_create` ↔ `Provisioning/CreateLocation`: a new
//! location in an existing organization, at most once per key. The parent
//! organization is the owner; only live platform admins holding the scope
//! may create (checked like organization creation). For them every owner is
//! authorized, so an unknown parent is `NotFound`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::idempotency::{Once, Written, check_key};
use super::organization_create::check_name;
use super::{
    CallContext, DeadlineClass, Tool, ToolFacts, ToolId, ToolKind, ToolOutput, ToolSpec, Tools,
    WriteEffect,
};
use crate::access::Access;
use crate::domain::{DomainError, Locale};
use crate::store::Store;
use crate::store::writes::{Effect, NewLocation};

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_location_create",
    title: "Create a location",
    description: "Creates a location (one restaurant) in an existing organization, with its \
postal address, IANA timezone and ISO 4217 currency; reserved to Chataigne platform \
administrators. `idempotency_key` (8 to 255 characters) is new per intended location; a retry \
with the same key and arguments returns the first result with `meta.replayed: true` and \
creates nothing twice. Returns the new location's `id` (the `location_id` other tools take), \
its organization, timezone, currency and creation time (ISO 8601, location's UTC offset). New \
locations accept orders.",
    scope: "admin.locations.create",
    kind: ToolKind::Write,
    deadline: DeadlineClass::Write,
    idempotency_key_required: true,
    open_world: false,
    rpc: "chataigne.tools.v1.Provisioning/CreateLocation",
    facts: ToolFacts {
        effect: Some(WriteEffect::read_with(ToolId::LocationsList)),
        ..ToolFacts::NONE
    },
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
    /// IANA time zone name, case-sensitive, e.g. "Europe/Paris".
    #[schemars(length(min = 1, max = 64))]
    pub timezone: String,
    /// ISO 4217 code of a currency in use, e.g. "EUR".
    #[schemars(regex(pattern = r"^[A-Z]{3}$"))]
    pub currency: String,
    /// New random string per intended creation; the same only to retry it.
    #[schemars(length(min = 8, max = 255))]
    pub idempotency_key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CreatedLocation {
    /// Location ID, e.g. "loc_01a24f4422b177399ccc5c8d95a1351f".
    /// Results recorded before the one id convention replay as they were.
    #[serde(alias = "location_id")]
    pub id: String,
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

/// Longest name, street line, city and postal code, in characters.
pub const NAME_MAX_CHARS: usize = super::organization_create::NAME_MAX_CHARS;
pub const LINE1_MAX_CHARS: usize = 200;
pub const CITY_MAX_CHARS: usize = 100;
pub const POSTAL_CODE_MAX_CHARS: usize = 20;

fn check(input: &LocationCreateInput) -> Result<(), DomainError> {
    check_name("name", &input.name, NAME_MAX_CHARS)?;
    check_name("line1", &input.line1, LINE1_MAX_CHARS)?;
    check_name("city", &input.city, CITY_MAX_CHARS)?;
    check_name("postal_code", &input.postal_code, POSTAL_CODE_MAX_CHARS)?;
    let upper = |v: &str, n: usize| v.len() == n && v.bytes().all(|b| b.is_ascii_uppercase());
    if !upper(&input.country, 2) {
        return Err(DomainError::invalid(
            "country",
            "must be an ISO 3166-1 alpha-2 code",
        ));
    }
    check_currency(&input.currency)?;
    check_timezone(&input.timezone)?;
    check_key(&input.idempotency_key)
}

/// An ISO 4217 currency in use (per the ISO 4217 tables of `iso_currency`):
/// not a fund, precious metal, test or "no currency" code, not superseded.
pub(crate) fn check_currency(code: &str) -> Result<(), DomainError> {
    let accepted = iso_currency::Currency::from_code(code).is_some_and(|currency| {
        !currency.is_special() && !currency.is_fund() && currency.is_superseded().is_none()
    });
    if accepted {
        Ok(())
    } else {
        Err(DomainError::invalid(
            "currency",
            "must be the ISO 4217 code of a currency in use, three capital letters such as \
             EUR, USD, GBP, CHF, CAD or JPY (funds, metals, test codes and replaced currencies \
             are refused)",
        ))
    }
}

/// A zone of the IANA time zone database (as compiled into `chrono-tz`);
/// names are case-sensitive, and a name that differs only by case is
/// suggested with its right spelling.
pub(crate) fn check_timezone(name: &str) -> Result<(), DomainError> {
    if name.parse::<chrono_tz::Tz>().is_ok() {
        return Ok(());
    }
    let suggestion = chrono_tz::TZ_VARIANTS
        .iter()
        .map(|tz| tz.name())
        .find(|known| known.eq_ignore_ascii_case(name.trim()));
    Err(DomainError::invalid(
        "timezone",
        match suggestion {
            Some(known) => {
                format!("must be an IANA time zone name, spelled with its capitals: {known}")
            }
            None => "must be an IANA time zone name (Area/City), e.g. Europe/Paris, \
                     America/New_York or Asia/Tokyo"
                .to_owned(),
        },
    ))
}

/// `chataigne_location_create`, declared by [`SPEC`].
pub struct LocationCreate;

impl Tool for LocationCreate {
    type Input = LocationCreateInput;
    type Output = LocationCreateOutput;
    type Reply = Written<LocationCreateOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: LocationCreateInput,
        ctx: &CallContext,
    ) -> Result<Written<LocationCreateOutput>, DomainError> {
        check(&input)?;
        let principal = tools.platform_admin(ctx, SPEC.scope).await?;
        tools
            .store
            .get_organization(&input.organization_id)
            .await?
            .ok_or(DomainError::NotFound)?;
        let id = format!("loc_{}", uuid::Uuid::now_v7().simple());
        let name = input.name.trim().to_owned();
        let location = CreatedLocation {
            id: id.clone(),
            organization_id: input.organization_id.clone(),
            name: name.clone(),
            timezone: input.timezone.clone(),
            currency: input.currency.clone(),
            created_at: crate::present::timestamp(ctx.now_ms, &input.timezone),
        };
        let text = if ctx.locale == Locale::Fr {
            format!(
                "Établissement « {name} » créé ({id}) dans l'organisation {} · fuseau {} · \
                 devise {} · le {}.",
                location.organization_id, location.timezone, location.currency, location.created_at
            )
        } else {
            format!(
                "Location \"{name}\" created ({id}) in organization {} · timezone {} · \
                 currency {} · at {}.",
                location.organization_id, location.timezone, location.currency, location.created_at
            )
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
        tools.write_once(once, output, ctx).await
    }
}
