//! `chataigne_customers_list` ↔ `Customers/ListCustomers`: a page of an
//! organization's customers (optionally those of one location), by name,
//! with masked contact details. The name filter is not logged.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::{Summary, paged_input};
use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{
    Customer, CustomerFilter, DomainError, Locale, PageAfter, contains_pattern, fold,
};
use crate::present::customer;
use crate::store::{Owner, Store};

/// Length of a name query, in characters.
pub const NAME_QUERY_CHARS: std::ops::RangeInclusive<usize> = 2..=100;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_customers_list",
    title: "List customers",
    description: "Lists the customers of one organization, or of one of its locations, sorted \
by name, with masked e-mail and phone, number of orders and time of the last order; with \
`location_id`, the order figures count that location only. Suited to finding a customer or \
checking how often someone orders. Returns 20 by default, \
50 at most, with `meta.next_cursor` when more exist.",
    scope: "customers.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Customers/ListCustomers",
    facts: ToolFacts {
        lists_ids: &["customer_id"],
        ..ToolFacts::NONE
    },
};

paged_input! {
    #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct CustomersListInput {
        /// From chataigne_organizations_list, e.g. "org_01bistrochataigne".
        #[schemars(length(min = 1, max = 64))]
        pub organization_id: String,
        /// A location of that organization, from chataigne_locations_list, e.g. "loc_01paris11"; omitted: the whole organization.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(length(min = 1, max = 64))]
        pub location_id: Option<String>,
        /// Part of the customer's name, case and accents ignored, e.g. "martin".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(length(min = 2, max = 100))]
        pub name_query: Option<String>,
    }
    cursor: "`meta.next_cursor` of the previous page, with the same filters."
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CustomersListOutput {
    /// Customers sorted by name, contact details masked.
    pub customers: Vec<Customer>,
}

/// `chataigne_customers_list`, declared by [`SPEC`].
pub struct CustomersList;

impl Tool for CustomersList {
    type Input = CustomersListInput;
    type Output = CustomersListOutput;
    type Reply = ToolOutput<CustomersListOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: CustomersListInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<CustomersListOutput>, DomainError> {
        let owner = match &input.location_id {
            Some(location_id) => {
                let owner = tools
                    .store
                    .location_owner(location_id)
                    .await?
                    .ok_or(DomainError::Forbidden)?;
                if owner.organization_id != input.organization_id {
                    // A location of another organization is answered like an unknown one.
                    return Err(DomainError::Forbidden);
                }
                owner
            }
            None => {
                tools
                    .store
                    .get_organization(&input.organization_id)
                    .await?
                    .ok_or(DomainError::Forbidden)?;
                Owner {
                    organization_id: input.organization_id.clone(),
                    location_id: None,
                }
            }
        };
        let principal = tools
            .access
            .authorize(&ctx.credential, SPEC.scope, &owner)
            .await?;
        if let Some(query) = &input.name_query
            && !NAME_QUERY_CHARS.contains(&query.chars().count())
        {
            return Err(DomainError::invalid(
                "name_query",
                format!(
                    "must be {} to {} characters",
                    NAME_QUERY_CHARS.start(),
                    NAME_QUERY_CHARS.end()
                ),
            ));
        }
        let filter = CustomerFilter {
            organization_id: input.organization_id.clone(),
            location_id: input.location_id.clone(),
            name_pattern: input.name_query.as_deref().map(contains_pattern),
        };
        // The cursor is bound to the folded query.
        let bound_input = CustomersListInput {
            name_query: input.name_query.as_deref().map(fold),
            ..input.clone()
        };
        let (pager, page) = tools.page(SPEC.name, &bound_input, &principal, ctx)?;
        let records = tools.store.list_customers(&filter, &page).await?;
        let (records, next_cursor) = pager.paginate(records, &page, |r| PageAfter {
            key: r.display_name.clone(),
            id: r.id.clone(),
        });
        let customers: Vec<Customer> = records.into_iter().map(customer).collect();
        let of = customers
            .first()
            .map(|c| format!(" · {} ({})", c.organization_name, c.organization_id))
            .unwrap_or_default();
        let head = match (ctx.locale, customers.len()) {
            (Locale::Fr, 0) => "Aucun client ne correspond.".to_owned(),
            (Locale::Fr, n) => format!("{n} client(s), par nom{of} ; coordonnées masquées."),
            (_, 0) => "No customers match.".to_owned(),
            (_, n) => format!("{n} customer(s), by name{of}; contact details masked."),
        };
        let mut summary = Summary::new(ctx.locale, head);
        let none = ctx.locale.pick("aucune", "none");
        for c in &customers {
            let mut line = format!(
                "- {} ({}) · {} {} {} · {} {}",
                c.name,
                c.id,
                c.order_count,
                ctx.locale.pick("commande(s), dernière", "order(s), last"),
                c.last_order_at.as_deref().unwrap_or(none),
                ctx.locale.pick("client depuis", "since"),
                c.created_at,
            );
            if let Some(location) = &c.location_id {
                line.push_str(" · ");
                line.push_str(location);
            }
            summary.line(line);
        }
        summary.narrow(
            "un filtre name_query ou location_id",
            "a name_query or location_id filter",
        );
        Ok(pager.output(CustomersListOutput { customers }, summary, next_cursor))
    }
}
