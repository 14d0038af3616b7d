//! `chataigne_organization_create` ↔ `Provisioning/CreateOrganization`: a new
//! organization, at most once per key. Only platform admins may create one:
//! there is no owner yet to hold a membership, so the live check is that the
//! auth-service resolves the caller's access with this scope to every tenant
//! (`ResolveAccess.all_tenants`), which it grants to live platform admins
//! holding the scope and to nobody else.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::idempotency::{Once, Written, check_key};
use super::{
    CallContext, DeadlineClass, Tool, ToolFacts, ToolId, ToolKind, ToolOutput, ToolSpec, Tools,
    WriteEffect,
};
use crate::access::{Access, Principal};
use crate::domain::{DomainError, Locale};
use crate::store::Store;
use crate::store::writes::{Effect, NewOrganization};

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_organization_create",
    title: "Create an organization",
    description: "Creates a restaurant organization (a business that owns locations) with the \
given name; reserved to Chataigne platform administrators. `idempotency_key` (8 to 255 \
characters) is new per intended organization; a retry with the same key and arguments returns \
the first result with `meta.replayed: true` and creates nothing twice. Returns the new \
organization's `id` (the `organization_id` chataigne_location_create takes), its name and creation time (ISO \
8601, UTC).",
    scope: "admin.organizations.create",
    kind: ToolKind::Write,
    deadline: DeadlineClass::Write,
    idempotency_key_required: true,
    open_world: false,
    rpc: "chataigne.tools.v1.Provisioning/CreateOrganization",
    facts: ToolFacts {
        effect: Some(WriteEffect::read_with(ToolId::OrganizationsList)),
        ..ToolFacts::NONE
    },
};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrganizationCreateInput {
    /// Display name of the business, not only spaces, e.g. "Bistro Châtaigne".
    #[schemars(length(min = 1, max = 120))]
    pub name: String,
    /// New random string per intended creation; the same only to retry it.
    #[schemars(length(min = 8, max = 255))]
    pub idempotency_key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CreatedOrganization {
    /// Organization ID, e.g. "org_01a24f4422aa719dbc220863523e1818".
    /// Results recorded before the one id convention replay as they were.
    #[serde(alias = "organization_id")]
    pub id: String,
    pub name: String,
    /// ISO 8601, UTC.
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OrganizationCreateOutput {
    pub organization: CreatedOrganization,
}

/// Longest organization or location name, in characters.
pub const NAME_MAX_CHARS: usize = 120;

/// A name of 1 to `max` characters, not only spaces.
pub(crate) fn check_name(field: &str, value: &str, max: usize) -> Result<(), DomainError> {
    if value.trim().is_empty() || value.chars().count() > max {
        return Err(DomainError::invalid(
            field,
            format!("must be 1 to {max} characters, not only spaces"),
        ));
    }
    Ok(())
}

impl<S: Store, A: Access> Tools<S, A> {
    /// The caller, when a live platform admin holding `scope`.
    pub(crate) async fn platform_admin(
        &self,
        ctx: &CallContext,
        scope: &str,
    ) -> Result<Principal, DomainError> {
        let (principal, tenants) = self.access.resolve(&ctx.credential, scope).await?;
        if tenants.all_tenants {
            Ok(principal)
        } else {
            Err(DomainError::Forbidden)
        }
    }
}

/// `chataigne_organization_create`, declared by [`SPEC`].
pub struct OrganizationCreate;

impl Tool for OrganizationCreate {
    type Input = OrganizationCreateInput;
    type Output = OrganizationCreateOutput;
    type Reply = Written<OrganizationCreateOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: OrganizationCreateInput,
        ctx: &CallContext,
    ) -> Result<Written<OrganizationCreateOutput>, DomainError> {
        check_name("name", &input.name, NAME_MAX_CHARS)?;
        check_key(&input.idempotency_key)?;
        let principal = tools.platform_admin(ctx, SPEC.scope).await?;
        let id = format!("org_{}", uuid::Uuid::now_v7().simple());
        let name = input.name.trim().to_owned();
        let organization = CreatedOrganization {
            id: id.clone(),
            name: name.clone(),
            created_at: crate::present::timestamp(ctx.now_ms, "UTC"),
        };
        let text = if ctx.locale == Locale::Fr {
            format!(
                "Organisation « {name} » créée ({id}) le {}.",
                organization.created_at
            )
        } else {
            format!(
                "Organization \"{name}\" created ({id}) at {}.",
                organization.created_at
            )
        };
        let once = Once {
            tool: SPEC.name,
            principal: &principal,
            key: &input.idempotency_key,
            input: &input,
            effect: Effect::Organization(NewOrganization {
                id,
                name,
                created_at_ms: ctx.now_ms,
            }),
        };
        let output = ToolOutput {
            data: OrganizationCreateOutput { organization },
            text,
            next_cursor: None,
        };
        tools.write_once(once, output, ctx).await
    }
}
