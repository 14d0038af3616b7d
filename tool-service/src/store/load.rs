//! Bulk loading of a generated data set: which table and columns each row type
//! fills, and multi-row `INSERT … ON CONFLICT DO NOTHING` statements sized to
//! the backend's bound-parameter limit.

use sqlx::QueryBuilder;

use super::backend::{Backend, Dialect};
use super::seed::{
    CategoryRow, ConversationRow, CustomerRow, ItemRow, LocationRow, MessageRow, OrderLineRow,
    OrderRow, OrganizationRow,
};
use crate::domain::{OrderNumberQuery, fold};

/// Rows per statement never exceed this, whatever the parameter bound allows.
const MAX_ROWS_PER_STATEMENT: usize = 5_000;

/// A row type that `load` writes to one table.
pub(crate) trait Row {
    const TABLE: &'static str;
    const COLUMNS: &'static [&'static str];
    /// Binds this row's values, in `COLUMNS` order.
    fn bind<DB: Dialect>(&self, out: &mut Values<'_, DB>);
}

/// Writes one parenthesized row of bound values.
pub(crate) struct Values<'a, DB: Dialect> {
    qb: &'a mut QueryBuilder<DB>,
    first: bool,
}

impl<DB: Dialect> Values<'_, DB> {
    fn separate(&mut self) {
        if !self.first {
            self.qb.push(", ");
        }
        self.first = false;
    }

    fn text(&mut self, value: &str) -> &mut Self {
        self.separate();
        DB::bind_text(self.qb, value);
        self
    }

    fn int(&mut self, value: i64) -> &mut Self {
        self.separate();
        DB::bind_int(self.qb, value);
        self
    }

    fn opt_text(&mut self, value: Option<&str>) -> &mut Self {
        self.separate();
        DB::bind_opt_text(self.qb, value);
        self
    }

    fn opt_int(&mut self, value: Option<i64>) -> &mut Self {
        self.separate();
        DB::bind_opt_int(self.qb, value);
        self
    }
}

/// How many rows of `R` one statement carries on backend `DB`.
pub(crate) fn rows_per_statement<DB: Backend, R: Row>() -> usize {
    (DB::MAX_PARAMS / R::COLUMNS.len().max(1)).clamp(1, MAX_ROWS_PER_STATEMENT)
}

/// One `INSERT` of every row of `rows`, skipping rows whose key exists.
pub(crate) fn insert_statement<DB: Dialect, R: Row>(rows: &[R]) -> QueryBuilder<DB> {
    let mut qb = QueryBuilder::new(format!(
        "INSERT INTO {} ({}) VALUES ",
        R::TABLE,
        R::COLUMNS.join(", ")
    ));
    for (i, row) in rows.iter().enumerate() {
        qb.push(if i == 0 { "(" } else { ", (" });
        row.bind(&mut Values {
            qb: &mut qb,
            first: true,
        });
        qb.push(")");
    }
    qb.push(" ON CONFLICT DO NOTHING");
    qb
}

impl Row for OrganizationRow {
    const TABLE: &'static str = "organizations";
    const COLUMNS: &'static [&'static str] = &["id", "name", "created_at_ms", "updated_at_ms"];
    fn bind<DB: Dialect>(&self, out: &mut Values<'_, DB>) {
        out.text(&self.id)
            .text(&self.name)
            .int(self.created_at_ms)
            .int(self.created_at_ms);
    }
}

impl Row for LocationRow {
    const TABLE: &'static str = "locations";
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "organization_id",
        "name",
        "line1",
        "city",
        "postal_code",
        "country",
        "phone",
        "timezone",
        "currency",
        "status",
        "paused_until_ms",
        "pause_reason",
        "created_at_ms",
        "updated_at_ms",
    ];
    fn bind<DB: Dialect>(&self, out: &mut Values<'_, DB>) {
        out.text(&self.id)
            .text(&self.organization_id)
            .text(&self.name)
            .text(&self.line1)
            .text(&self.city)
            .text(&self.postal_code)
            .text(&self.country)
            .opt_text(self.phone.as_deref())
            .text(&self.timezone)
            .text(&self.currency)
            .text(&self.status)
            .opt_int(self.paused_until_ms)
            .opt_text(self.pause_reason.as_deref())
            .int(self.created_at_ms)
            .int(self.created_at_ms);
    }
}

impl Row for CustomerRow {
    const TABLE: &'static str = "customers";
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "organization_id",
        "location_id",
        "display_name",
        "name_folded",
        "email",
        "phone",
        "created_at_ms",
        "updated_at_ms",
    ];
    fn bind<DB: Dialect>(&self, out: &mut Values<'_, DB>) {
        out.text(&self.id)
            .text(&self.organization_id)
            .opt_text(self.location_id.as_deref())
            .text(&self.display_name)
            .text(&fold(&self.display_name))
            .opt_text(self.email.as_deref())
            .opt_text(self.phone.as_deref())
            .int(self.created_at_ms)
            .int(self.created_at_ms);
    }
}

impl Row for CategoryRow {
    const TABLE: &'static str = "catalog_categories";
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "organization_id",
        "location_id",
        "name",
        "position",
        "created_at_ms",
    ];
    fn bind<DB: Dialect>(&self, out: &mut Values<'_, DB>) {
        out.text(&self.id)
            .text(&self.organization_id)
            .text(&self.location_id)
            .text(&self.name)
            .int(self.position)
            .int(self.created_at_ms);
    }
}

impl Row for ItemRow {
    const TABLE: &'static str = "catalog_items";
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "organization_id",
        "location_id",
        "category_id",
        "name",
        "name_folded",
        "description",
        "price_minor",
        "currency",
        "availability",
        "available_again_at_ms",
        "created_at_ms",
        "updated_at_ms",
    ];
    fn bind<DB: Dialect>(&self, out: &mut Values<'_, DB>) {
        out.text(&self.id)
            .text(&self.organization_id)
            .text(&self.location_id)
            .text(&self.category_id)
            .text(&self.name)
            .text(&fold(&self.name))
            .text(&self.description)
            .int(self.price_minor)
            .text(&self.currency)
            .text(&self.availability)
            .opt_int(self.available_again_at_ms)
            .int(self.created_at_ms)
            .int(self.updated_at_ms);
    }
}

impl Row for OrderRow {
    const TABLE: &'static str = "orders";
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "number",
        "number_key",
        "organization_id",
        "location_id",
        "customer_id",
        "status",
        "fulfillment",
        "currency",
        "total_minor",
        "created_at_ms",
        "updated_at_ms",
    ];
    fn bind<DB: Dialect>(&self, out: &mut Values<'_, DB>) {
        out.text(&self.id)
            .text(&self.number)
            .text(&OrderNumberQuery::key_of(&self.number))
            .text(&self.organization_id)
            .text(&self.location_id)
            .text(&self.customer_id)
            .text(&self.status)
            .text(&self.fulfillment)
            .text(&self.currency)
            .int(self.total_minor)
            .int(self.created_at_ms)
            .int(self.updated_at_ms);
    }
}

impl Row for OrderLineRow {
    const TABLE: &'static str = "order_lines";
    const COLUMNS: &'static [&'static str] = &[
        "order_id",
        "line_no",
        "item_id",
        "item_name",
        "quantity",
        "unit_price_minor",
    ];
    fn bind<DB: Dialect>(&self, out: &mut Values<'_, DB>) {
        out.text(&self.order_id)
            .int(self.line_no)
            .text(&self.item_id)
            .text(&self.item_name)
            .int(self.quantity)
            .int(self.unit_price_minor);
    }
}

impl Row for ConversationRow {
    const TABLE: &'static str = "conversations";
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "organization_id",
        "location_id",
        "customer_id",
        "channel",
        "status",
        "created_at_ms",
        "last_message_at_ms",
    ];
    fn bind<DB: Dialect>(&self, out: &mut Values<'_, DB>) {
        out.text(&self.id)
            .text(&self.organization_id)
            .text(&self.location_id)
            .text(&self.customer_id)
            .text(&self.channel)
            .text(&self.status)
            .int(self.created_at_ms)
            .int(self.last_message_at_ms);
    }
}

impl Row for MessageRow {
    const TABLE: &'static str = "conversation_messages";
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "conversation_id",
        "sender",
        "body",
        "body_folded",
        "created_at_ms",
    ];
    fn bind<DB: Dialect>(&self, out: &mut Values<'_, DB>) {
        out.text(&self.id)
            .text(&self.conversation_id)
            .text(&self.sender)
            .text(&self.body)
            .text(&fold(&self.body))
            .int(self.created_at_ms);
    }
}
