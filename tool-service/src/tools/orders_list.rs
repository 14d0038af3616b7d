//! `chataigne_orders_list` ↔ `Restaurant/ListOrders`: a page of orders, newest
//! or oldest first, across the locations the user may read or in one location.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::{Summary, paged_input};
use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{
    DomainError, Locale, Order, OrderFilter, OrderNumberQuery, OrderStatus, PageAfter, SortOrder,
};

use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_orders_list",
    title: "List orders",
    description: "Lists the orders the signed-in user can read, newest first or, with \
`sort: oldest_first`, oldest first (e.g. the longest-waiting), with number, \
status, fulfillment, customer, total and creation time. Suited to recent or current \
orders, orders in a given status or period, or one order by its `number`; lines come from \
chataigne_order_get. Returns 20 by default, 50 at most, with `meta.next_cursor` when more \
exist.",
    scope: "orders.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Restaurant/ListOrders",
    facts: ToolFacts {
        lists_ids: &["order_id"],
        view: Some(&super::views::ORDER_BOARD),
        ..ToolFacts::NONE
    },
};

paged_input! {
    #[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct OrdersListInput {
        /// From chataigne_locations_list, e.g. "loc_01paris11"; omitted: every location the user can read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(length(min = 1, max = 64))]
        pub location_id: Option<String>,
        /// Only orders currently in one of these statuses; omitted or empty: any.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[schemars(length(max = 7))]
        pub statuses: Vec<OrderStatus>,
        /// Inclusive lower bound on creation time, ISO 8601 date-time with offset, e.g. "2026-03-01T00:00:00+01:00".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(extend("format" = "date-time"))]
        pub created_from: Option<String>,
        /// Exclusive upper bound on creation time, ISO 8601 date-time with offset, later than created_from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(extend("format" = "date-time"))]
        pub created_to: Option<String>,
        /// By creation time: newest_first when omitted, or oldest_first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub sort: Option<SortOrder>,
        /// Order number, e.g. "PAR-261130-010" or "261130-010".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(regex(pattern = OrderNumberQuery::PATTERN))]
        pub number: Option<String>,
    }
    cursor: "`meta.next_cursor` of the previous page, with the same filters."
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OrdersListOutput {
    /// Orders in the requested order (without lines).
    pub orders: Vec<Order>,
}

/// `chataigne_orders_list`, declared by [`SPEC`].
pub struct OrdersList;

impl Tool for OrdersList {
    type Input = OrdersListInput;
    type Output = OrdersListOutput;
    type Reply = ToolOutput<OrdersListOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: OrdersListInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<OrdersListOutput>, DomainError> {
        let sort = input.sort.unwrap_or_default();
        let mut filter = OrderFilter {
            sort,
            statuses: input.statuses.clone(),
            created_from_ms: input
                .created_from
                .as_deref()
                .map(|v| present::parse_timestamp("created_from", v))
                .transpose()?,
            created_to_ms: input
                .created_to
                .as_deref()
                .map(|v| present::parse_timestamp("created_to", v))
                .transpose()?,
            number: input
                .number
                .as_deref()
                .map(|v| OrderNumberQuery::parse("number", v))
                .transpose()?,
            ..OrderFilter::default()
        };
        if let (Some(from), Some(to)) = (filter.created_from_ms, filter.created_to_ms)
            && from >= to
        {
            return Err(DomainError::invalid(
                "created_to",
                "must be later than created_from",
            ));
        }
        let principal = match &input.location_id {
            Some(location_id) => {
                let (_, principal) = tools
                    .authorize_location(location_id, SPEC.scope, ctx)
                    .await?;
                filter.location_ids = Some(vec![location_id.clone()]);
                principal
            }
            None => {
                let (principal, scope) = tools.access.resolve(&ctx.credential, SPEC.scope).await?;
                if scope.is_empty() {
                    let summary = summarize(&[], sort, ctx);
                    return Ok(ToolOutput {
                        text: summary.render(None),
                        data: OrdersListOutput { orders: Vec::new() },
                        next_cursor: None,
                    });
                }
                if !scope.all_tenants {
                    filter.location_ids = Some(scope.location_ids);
                    filter.organization_ids = Some(scope.organization_ids);
                }
                principal
            }
        };
        // The cursor is bound to the order it was issued for, explicit or not.
        let bound_input = OrdersListInput {
            sort: Some(sort),
            ..input.clone()
        };
        let (pager, page) = tools.page(SPEC.name, &bound_input, &principal, ctx)?;
        let records = tools.store.list_orders(&filter, &page).await?;
        let (records, next_cursor) = pager.paginate(records, &page, |r| PageAfter {
            key: r.created_at_ms.to_string(),
            id: r.id.clone(),
        });
        let orders = records
            .into_iter()
            .map(|r| present::order(r, Vec::new(), ctx.locale))
            .collect::<Result<Vec<_>, _>>()?;
        let summary = summarize(&orders, sort, ctx);
        Ok(pager.output(OrdersListOutput { orders }, summary, next_cursor))
    }
}

/// An order on a line of a summary: number, id, location, customer,
/// status, fulfillment, total and creation time.
pub(super) fn summary_line(order: &Order) -> String {
    format!(
        "- {} ({}) · {} ({}) · {} ({}) · {} · {} · {} · {}",
        order.number,
        order.id,
        order.location_name,
        order.location_id,
        order.customer_name,
        order.customer_id,
        order.status_label,
        order.fulfillment_label,
        order.total.display,
        order.created_at
    )
}

/// An order on a line of a list whose head names its locations: the
/// location by name only when there are several, not at all when one.
fn line_in_list(order: &Order, location: bool) -> String {
    let at = if location {
        format!(" · {}", order.location_name)
    } else {
        String::new()
    };
    format!(
        "- {} ({}){at} · {} ({}) · {} · {} · {} · {}",
        order.number,
        order.id,
        order.customer_name,
        order.customer_id,
        order.status_label,
        order.fulfillment_label,
        order.total.display,
        order.created_at
    )
}

/// The summary of a page of orders, one line per order.
fn summarize(orders: &[Order], sort: SortOrder, ctx: &CallContext) -> Summary {
    let oldest = sort.oldest_first();
    // The locations named once in the head, with their ids.
    let mut locations: Vec<(&str, &str)> = Vec::new();
    for order in orders {
        let location = (order.location_name.as_str(), order.location_id.as_str());
        if !locations.contains(&location) {
            locations.push(location);
        }
    }
    let at = match locations.as_slice() {
        [] => String::new(),
        [(name, id)] => format!(" · {name} ({id})"),
        several => format!(
            " · {} {}",
            ctx.locale.pick("établissements", "locations"),
            several
                .iter()
                .map(|(name, id)| format!("{name} ({id})"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let head = match (ctx.locale, orders.len(), oldest) {
        (Locale::Fr, 0, _) => "Aucune commande ne correspond.".to_owned(),
        (Locale::Fr, n, false) => {
            format!("{n} commande(s), de la plus récente à la plus ancienne{at}.")
        }
        (Locale::Fr, n, true) => {
            format!("{n} commande(s), de la plus ancienne à la plus récente{at}.")
        }
        (_, 0, _) => "No orders match.".to_owned(),
        (_, n, false) => format!("{n} order(s), newest first{at}."),
        (_, n, true) => format!("{n} order(s), oldest first{at}."),
    };
    let mut summary = Summary::new(ctx.locale, head);
    for order in orders {
        summary.line(line_in_list(order, locations.len() > 1));
    }
    summary.narrow(
        "un filtre location_id, statuses ou created_from/created_to",
        "a location_id, statuses or created_from/created_to filter",
    );
    summary
}
