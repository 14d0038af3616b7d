//! Conversions every typed adapter shares: the call context from the
//! request's metadata, optional and required strings, paging and money
//! between the protobuf messages and the tools' types.

use chataigne_proto::tools::v1 as pb;
use tonic::{Request, Status};

use super::credential::credential;
use crate::domain::{self, DomainError};
use crate::present::normalize_locale;
use crate::tools::CallContext;

pub(super) fn context<T>(request: &Request<T>, locale: &str) -> Result<CallContext, Status> {
    Ok(CallContext {
        credential: credential(request)?,
        locale: normalize_locale(locale),
        now_ms: chrono::Utc::now().timestamp_millis(),
    })
}

pub(super) fn non_empty(value: String) -> Option<String> {
    (!value.is_empty()).then_some(value)
}

/// An empty required identifier is a validation error naming the field, like
/// in the MCP schema.
pub(super) fn required(field: &str, value: String) -> Result<String, DomainError> {
    if value.is_empty() {
        Err(DomainError::invalid(field, "is required"))
    } else {
        Ok(value)
    }
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
