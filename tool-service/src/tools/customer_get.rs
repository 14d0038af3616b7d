//! `chataigne_customer_get` ↔ `Customers/GetCustomer`: one customer with
//! masked contact details and a summary of their latest orders.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools, orders_list,
};
use crate::access::Access;
use crate::domain::{Customer, DomainError, Locale, Order};
use crate::present;
use crate::present::customer;
use crate::store::Store;

/// Orders in the summary of a customer.
pub const RECENT_ORDERS: u32 = 5;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_customer_get",
    title: "Get a customer",
    description: "Returns one customer with masked e-mail and phone, number of orders, time of \
the last order and the 5 most recent orders, newest first (number, location, status, total, \
time). Suited to a specific customer's history with the restaurant. An unknown customer is \
refused like an inaccessible one.",
    scope: "customers.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Customers/GetCustomer",
    facts: ToolFacts::NONE,
};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomerGetInput {
    /// From chataigne_customers_list, chataigne_orders_list or chataigne_conversations_list, e.g. "cus_01bistrochataigne_0042".
    #[schemars(length(min = 1, max = 64))]
    pub customer_id: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CustomerGetOutput {
    pub customer: Customer,
    /// The five most recent orders, newest first, without lines.
    pub recent_orders: Vec<Order>,
}

/// `chataigne_customer_get`, declared by [`SPEC`].
pub struct CustomerGet;

impl Tool for CustomerGet {
    type Input = CustomerGetInput;
    type Output = CustomerGetOutput;
    type Reply = ToolOutput<CustomerGetOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: CustomerGetInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<CustomerGetOutput>, DomainError> {
        let owner = tools.store.customer_owner(&input.customer_id).await?;
        tools.authorize_owner(owner, SPEC.scope, ctx).await?;
        let record = tools
            .store
            .get_customer(&input.customer_id)
            .await?
            .ok_or(DomainError::NotFound)?;
        let recent_orders = tools
            .store
            .customer_recent_orders(&input.customer_id, RECENT_ORDERS)
            .await?
            .into_iter()
            .map(|r| present::order(r, Vec::new(), ctx.locale))
            .collect::<Result<Vec<_>, _>>()?;
        let customer = customer(record);
        let text = customer_text(&customer, &recent_orders, ctx.locale);
        Ok(ToolOutput {
            data: CustomerGetOutput {
                customer,
                recent_orders,
            },
            text,
            next_cursor: None,
        })
    }
}

/// The customer's identity, masked contacts, order count and dates, then
/// each recent order on its line.
fn customer_text(customer: &Customer, recent_orders: &[Order], locale: Locale) -> String {
    let c = customer;
    let (name, id, org, org_id) = (&c.name, &c.id, &c.organization_name, &c.organization_id);
    let none = locale.pick("aucun", "none");
    // Contact details stay out of the text, masked or not (in the data only).
    let contacts = match (c.email_masked.is_some(), c.phone_masked.is_some(), locale) {
        (false, false, Locale::Fr) => "ni e-mail ni téléphone enregistré",
        (false, false, _) => "no email or phone on file",
        (true, true, Locale::Fr) => "e-mail et téléphone enregistrés (masqués)",
        (true, true, _) => "email and phone on file (masked)",
        (true, false, Locale::Fr) => "e-mail enregistré (masqué), pas de téléphone",
        (true, false, _) => "email on file (masked), no phone",
        (false, true, Locale::Fr) => "téléphone enregistré (masqué), pas d'e-mail",
        (false, true, _) => "phone on file (masked), no email",
    };
    let count = c.order_count;
    let last = c.last_order_at.as_deref().unwrap_or(none);
    let since = &c.created_at;
    let mut text = if locale == Locale::Fr {
        format!(
            "{name} ({id}) · {org} ({org_id}) · {count} commande(s), dernière le {last} · \
             client depuis {since} · {contacts}."
        )
    } else {
        format!(
            "{name} ({id}) · {org} ({org_id}) · {count} order(s), last on {last} · \
             customer since {since} · {contacts}."
        )
    };
    if let Some(location) = &c.location_id {
        text.push_str(&locale.pick(
            format!(" Établissement d'origine : {location}."),
            format!(" Home location: {location}."),
        ));
    }
    if !recent_orders.is_empty() {
        text.push_str(locale.pick("\nCommandes récentes :", "\nRecent orders:"));
    }
    for order in recent_orders {
        text.push('\n');
        text.push_str(&orders_list::summary_line(order));
    }
    text
}
