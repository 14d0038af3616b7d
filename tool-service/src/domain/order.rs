//! Orders: statuses and their forward-only lifecycle, lines, and list filters.

use serde::{Deserialize, Serialize};

use super::Money;

/// Order lifecycle. Steps only move forward:
/// received → accepted → preparing → ready → out_for_delivery | completed,
/// and out_for_delivery → completed. A change may take several steps at once
/// (received → ready); each step is recorded in the order's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    Received,
    Accepted,
    Preparing,
    Ready,
    OutForDelivery,
    Completed,
    Cancelled,
}

impl OrderStatus {
    pub const ALL: [OrderStatus; 7] = [
        OrderStatus::Received,
        OrderStatus::Accepted,
        OrderStatus::Preparing,
        OrderStatus::Ready,
        OrderStatus::OutForDelivery,
        OrderStatus::Completed,
        OrderStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::Received => "received",
            OrderStatus::Accepted => "accepted",
            OrderStatus::Preparing => "preparing",
            OrderStatus::Ready => "ready",
            OrderStatus::OutForDelivery => "out_for_delivery",
            OrderStatus::Completed => "completed",
            OrderStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(value: &str) -> Option<OrderStatus> {
        OrderStatus::ALL.into_iter().find(|s| s.as_str() == value)
    }

    /// The statuses an order in this status can move to, in one or several
    /// steps, in lifecycle order.
    pub fn next_statuses(self) -> Vec<OrderStatus> {
        OrderStatus::ALL
            .into_iter()
            .filter(|next| self.can_move_to(*next))
            .collect()
    }

    /// Statuses some order can move to: the targets of a status change.
    pub fn targets() -> Vec<OrderStatus> {
        OrderStatus::ALL
            .into_iter()
            .filter(|to| OrderStatus::ALL.iter().any(|from| from.can_move_to(*to)))
            .collect()
    }

    /// Statuses an order can still move from.
    pub fn movable() -> Vec<OrderStatus> {
        OrderStatus::ALL
            .into_iter()
            .filter(|from| !from.next_statuses().is_empty())
            .collect()
    }

    /// Whether `next` follows `self` directly: one forward step.
    pub fn can_step_to(self, next: OrderStatus) -> bool {
        use OrderStatus::*;
        matches!(
            (self, next),
            (Received, Accepted)
                | (Accepted, Preparing)
                | (Preparing, Ready)
                | (Ready, OutForDelivery)
                | (Ready, Completed)
                | (OutForDelivery, Completed)
        )
    }

    /// Whether moving from `self` to `next` is legal: forward, in one or
    /// several steps.
    pub fn can_move_to(self, next: OrderStatus) -> bool {
        self.steps_to(next).is_some()
    }

    /// The shortest forward walk from `self` to `target`: each status
    /// passed through, `target` last (received → ready: accepted, preparing,
    /// ready; ready → completed skips out_for_delivery); `None` when
    /// `target` is not ahead of `self`.
    pub fn steps_to(self, target: OrderStatus) -> Option<Vec<OrderStatus>> {
        // Breadth first over at most seven statuses: each reached once, from
        // the status that reached it first.
        let mut reached_from: Vec<(OrderStatus, OrderStatus)> = Vec::new();
        let mut frontier = vec![self];
        while !frontier.is_empty() {
            let mut next_frontier = Vec::new();
            for from in frontier {
                for to in OrderStatus::ALL {
                    if from.can_step_to(to)
                        && to != self
                        && !reached_from.iter().any(|(seen, _)| *seen == to)
                    {
                        reached_from.push((to, from));
                        next_frontier.push(to);
                    }
                }
            }
            frontier = next_frontier;
        }
        let mut steps = vec![target];
        let mut at = target;
        loop {
            let (_, from) = reached_from.iter().find(|(to, _)| *to == at)?;
            if *from == self {
                steps.reverse();
                return Some(steps);
            }
            steps.push(*from);
            at = *from;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Fulfillment {
    Pickup,
    Delivery,
    DineIn,
}

impl Fulfillment {
    pub fn as_str(self) -> &'static str {
        match self {
            Fulfillment::Pickup => "pickup",
            Fulfillment::Delivery => "delivery",
            Fulfillment::DineIn => "dine_in",
        }
    }

    pub fn parse(value: &str) -> Option<Fulfillment> {
        [
            Fulfillment::Pickup,
            Fulfillment::Delivery,
            Fulfillment::DineIn,
        ]
        .into_iter()
        .find(|f| f.as_str() == value)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct OrderLine {
    pub item_id: String,
    pub item_name: String,
    pub quantity: u32,
    pub unit_price: Money,
    pub line_total: Money,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Order {
    /// Order ID, e.g. "ord_01j…".
    pub id: String,
    /// Short number shown to staff and customers, e.g. "P11-004217".
    pub number: String,
    pub location_id: String,
    pub location_name: String,
    pub customer_id: String,
    pub customer_name: String,
    pub status: OrderStatus,
    pub status_label: String,
    pub fulfillment: Fulfillment,
    pub fulfillment_label: String,
    pub total: Money,
    /// Order lines; present in the detail call only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<OrderLine>,
    /// ISO 8601 with the location's UTC offset.
    pub created_at: String,
    /// ISO 8601 with the location's UTC offset.
    pub updated_at: String,
}

/// The order of a time-ordered list: newest first (the default) or oldest
/// first.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SortOrder {
    #[default]
    NewestFirst,
    OldestFirst,
}

impl SortOrder {
    pub fn oldest_first(self) -> bool {
        self == SortOrder::OldestFirst
    }
}

/// Filters of an order listing, already validated and resolved to tenants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrderFilter {
    /// Restrict to these locations (already authorized).
    pub location_ids: Option<Vec<String>>,
    /// Restrict to locations of these organizations (already authorized).
    pub organization_ids: Option<Vec<String>>,
    pub statuses: Vec<OrderStatus>,
    /// Inclusive lower bound, Unix milliseconds.
    pub created_from_ms: Option<i64>,
    /// Exclusive upper bound, Unix milliseconds.
    pub created_to_ms: Option<i64>,
    /// By creation time, newest or oldest first.
    pub sort: SortOrder,
    /// Only the orders of this number.
    pub number: Option<OrderNumberQuery>,
}

/// An order number as staff say it, "PAR-261130-010" or, without the
/// location's prefix, "261130-010": the prefix (letters), the day (YYMMDD)
/// and the day's sequence, case-insensitive.
///
/// Numbers are stored with their lookup key, [`OrderNumberQuery::key_of`]
/// (the number without its prefix), which the listing matches by index; the
/// prefix, when given, is then compared on the full number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderNumberQuery {
    /// The prefix in upper case, when given.
    prefix: Option<String>,
    /// The number without its prefix, "261130-010".
    key: String,
}

impl OrderNumberQuery {
    /// Longest prefix accepted.
    pub const MAX_PREFIX: usize = 8;
    /// The accepted form, as a JSON Schema pattern.
    pub const PATTERN: &'static str = r"^([A-Za-z]{1,8}-)?[0-9]{6}-[0-9]{3,6}$";

    /// Parses `value`; refuses anything but `[PREFIX-]YYMMDD-NNN` (3 to 6
    /// sequence digits), naming `field`.
    pub fn parse(field: &str, value: &str) -> Result<OrderNumberQuery, super::DomainError> {
        let refuse = || {
            super::DomainError::invalid(
                field,
                "must be an order number such as \"PAR-261130-010\" or, without the location \
                 prefix, \"261130-010\"",
            )
        };
        let parts: Vec<&str> = value.split('-').collect();
        let (prefix, day, seq) = match parts.as_slice() {
            [prefix, day, seq] => (Some(*prefix), *day, *seq),
            [day, seq] => (None, *day, *seq),
            _ => return Err(refuse()),
        };
        let digits = |s: &str, min: usize, max: usize| {
            (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
        };
        let prefix_ok = prefix.is_none_or(|p| {
            (1..=Self::MAX_PREFIX).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphabetic())
        });
        if !prefix_ok || !digits(day, 6, 6) || !digits(seq, 3, 6) {
            return Err(refuse());
        }
        Ok(OrderNumberQuery {
            prefix: prefix.map(str::to_ascii_uppercase),
            key: format!("{day}-{seq}"),
        })
    }

    /// The lookup key stored with `number`: the number without its prefix
    /// (everything after the first "-"), in upper case.
    pub fn key_of(number: &str) -> String {
        number
            .split_once('-')
            .map_or(number, |(_, rest)| rest)
            .to_uppercase()
    }

    /// The key the listing matches by index.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The full number in upper case, when the prefix was given.
    pub fn full(&self) -> Option<String> {
        self.prefix
            .as_ref()
            .map(|prefix| format!("{prefix}-{}", self.key))
    }
}

#[cfg(test)]
mod tests {
    use super::OrderStatus::*;

    #[test]
    fn an_order_number_is_found_with_or_without_its_prefix_in_any_case() {
        let full = super::OrderNumberQuery::parse("number", "par-261130-010").unwrap();
        assert_eq!(full.key(), "261130-010");
        assert_eq!(full.full().as_deref(), Some("PAR-261130-010"));
        let bare = super::OrderNumberQuery::parse("number", "261130-010").unwrap();
        assert_eq!(bare.key(), "261130-010");
        assert_eq!(bare.full(), None);
        assert_eq!(
            super::OrderNumberQuery::key_of("PAR-261130-010"),
            bare.key()
        );
    }

    #[test]
    fn a_malformed_order_number_is_refused() {
        for bad in [
            "",
            "PAR",
            "PAR-261130",
            "PAR-26113-010",
            "PAR-261130-01",
            "PAR-261130-0100000",
            "P4R-261130-010",
            "TOOLONGPRE-261130-010",
            "PAR-261130-010-1",
            " PAR-261130-010",
            "ord_par_20261130_010",
        ] {
            assert!(
                super::OrderNumberQuery::parse("number", bad).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn only_forward_transitions_are_legal() {
        assert!(Received.can_move_to(Accepted));
        assert!(Ready.can_move_to(Completed));
        assert!(OutForDelivery.can_move_to(Completed));
        assert!(Received.can_move_to(Ready));
        assert!(Received.can_move_to(Completed));
        assert!(!Accepted.can_move_to(Received));
        assert!(!Ready.can_move_to(Preparing));
        assert!(!Completed.can_move_to(Completed));
        assert!(!Received.can_move_to(Received));
        assert!(!Received.can_move_to(Cancelled));
        assert!(!OutForDelivery.can_move_to(Ready));
        assert!(!Received.can_step_to(Ready));
    }

    #[test]
    fn a_move_passes_through_every_status_between_by_the_shortest_way() {
        assert_eq!(Received.steps_to(Accepted), Some(vec![Accepted]));
        assert_eq!(
            Received.steps_to(Ready),
            Some(vec![Accepted, Preparing, Ready])
        );
        assert_eq!(
            Received.steps_to(Completed),
            Some(vec![Accepted, Preparing, Ready, Completed])
        );
        assert_eq!(
            Accepted.steps_to(OutForDelivery),
            Some(vec![Preparing, Ready, OutForDelivery])
        );
        assert_eq!(OutForDelivery.steps_to(Completed), Some(vec![Completed]));
        assert_eq!(Ready.steps_to(Received), None);
        assert_eq!(Ready.steps_to(Ready), None);
        assert_eq!(Completed.steps_to(Completed), None);
        assert_eq!(Received.steps_to(Cancelled), None);
    }

    #[test]
    fn targets_are_the_forward_lifecycle_without_received_or_cancelled() {
        assert_eq!(
            super::OrderStatus::targets(),
            vec![Accepted, Preparing, Ready, OutForDelivery, Completed]
        );
        assert_eq!(
            super::OrderStatus::movable(),
            vec![Received, Accepted, Preparing, Ready, OutForDelivery]
        );
        assert_eq!(Ready.next_statuses(), vec![OutForDelivery, Completed]);
        assert_eq!(
            Received.next_statuses(),
            vec![Accepted, Preparing, Ready, OutForDelivery, Completed]
        );
        assert!(Completed.next_statuses().is_empty());
    }
}
