//! Conversions every typed adapter shares: optional strings, paging and
//! money between the protobuf messages and the tools' types.

use chataigne_proto::tools::v1 as pb;

use crate::domain;

pub(super) fn non_empty(value: String) -> Option<String> {
    (!value.is_empty()).then_some(value)
}

pub(super) fn page(page: Option<pb::Page>) -> (Option<u32>, Option<String>) {
    let page = page.unwrap_or_default();
    (
        (page.limit != 0).then_some(page.limit),
        non_empty(page.cursor),
    )
}

pub(super) fn money(money: domain::Money) -> pb::Money {
    pb::Money {
        amount_minor: money.amount_minor,
        currency: money.currency,
        display: money.display,
    }
}
