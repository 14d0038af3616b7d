//! `chataigne_orders_list` ↔ `Restaurant/ListOrders`: a page of orders, newest
//! first, across the locations the user may read or in one location.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::Pager;
use super::{CallContext, DeadlineClass, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{DomainError, Order, OrderFilter, OrderStatus, PageAfter};
use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_orders_list",
    title: "List orders",
    description: "Lists the orders the signed-in user can read, newest first, with number, \
status, fulfillment type, customer, total and creation time. Suited to recent or current \
orders, orders in a given status or placed during a period; lines come from \
chataigne_order_get. Returns 20 by default, 50 at most, with `meta.next_cursor` when more \
exist.",
    scope: "orders.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Restaurant/ListOrders",
};

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
    /// Page size; 20 when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
    /// `meta.next_cursor` of the previous page, with the same filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OrdersListOutput {
    /// Orders, newest first (without lines).
    pub orders: Vec<Order>,
}

impl<S: Store, A: Access> Tools<S, A> {
    pub async fn orders_list(
        &self,
        input: OrdersListInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<OrdersListOutput>, DomainError> {
        let mut filter = OrderFilter {
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
                let owner = self
                    .store
                    .location_owner(location_id)
                    .await?
                    .ok_or(DomainError::Forbidden)?;
                let principal = self
                    .access
                    .authorize(&ctx.credential, SPEC.scope, &owner)
                    .await?;
                filter.location_ids = Some(vec![location_id.clone()]);
                principal
            }
            None => {
                let (principal, scope) = self.access.resolve(&ctx.credential, SPEC.scope).await?;
                if scope.is_empty() {
                    return Ok(summarize(Vec::new(), None, ctx));
                }
                if !scope.all_tenants {
                    filter.location_ids = Some(scope.location_ids);
                    filter.organization_ids = Some(scope.organization_ids);
                }
                principal
            }
        };
        let pager = Pager::new(SPEC.name, &input, &principal, &self.cursors, ctx);
        let page = pager.request(input.limit, input.cursor.as_deref())?;
        let records = self.store.list_orders(&filter, &page).await?;
        let (records, next_cursor) = pager.paginate(records, &page, |r| PageAfter {
            key: r.created_at_ms.to_string(),
            id: r.id.clone(),
        });
        let orders = records
            .into_iter()
            .map(|r| present::order(r, Vec::new(), ctx.locale))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(summarize(orders, next_cursor, ctx))
    }
}

fn summarize(
    orders: Vec<Order>,
    next_cursor: Option<String>,
    ctx: &CallContext,
) -> ToolOutput<OrdersListOutput> {
    let more = next_cursor.is_some();
    let mut text = match (ctx.locale, orders.len()) {
        ("fr", 0) => "Aucune commande ne correspond.".to_owned(),
        ("fr", n) => format!("{n} commande(s), de la plus récente à la plus ancienne."),
        (_, 0) => "No orders match.".to_owned(),
        (_, n) => format!("{n} order(s), newest first."),
    };
    for order in orders.iter().take(5) {
        text.push_str(&format!(
            "\n- {} ({}) · {} · {} · {} · {}",
            order.number,
            order.id,
            order.location_name,
            order.status.as_str(),
            order.total.display,
            order.created_at
        ));
    }
    if more {
        text.push_str(if ctx.locale == "fr" {
            "\nD'autres commandes suivent (meta.next_cursor)."
        } else {
            "\nMore orders follow (meta.next_cursor)."
        });
    }
    ToolOutput {
        data: OrdersListOutput { orders },
        text,
        next_cursor,
    }
}
