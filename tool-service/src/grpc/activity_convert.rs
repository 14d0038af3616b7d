//! Conversions shared by the order-update, customer, conversation and
//! analytics adapters: orders and their statuses between the protobuf
//! messages and the tools' types (the basics every adapter uses are in
//! `convert.rs`).

use chataigne_proto::tools::v1 as pb;

use super::convert::money;
use crate::domain::{self, DomainError, OrderStatus};

pub(super) fn order_status_from_pb(field: &str, value: i32) -> Result<OrderStatus, DomainError> {
    use pb::OrderStatus as P;
    match P::try_from(value) {
        Ok(P::Received) => Ok(OrderStatus::Received),
        Ok(P::Accepted) => Ok(OrderStatus::Accepted),
        Ok(P::Preparing) => Ok(OrderStatus::Preparing),
        Ok(P::Ready) => Ok(OrderStatus::Ready),
        Ok(P::OutForDelivery) => Ok(OrderStatus::OutForDelivery),
        Ok(P::Completed) => Ok(OrderStatus::Completed),
        Ok(P::Cancelled) => Ok(OrderStatus::Cancelled),
        Ok(P::Unspecified) | Err(_) => Err(DomainError::invalid(field, "unknown status")),
    }
}

pub(super) fn order_status_to_pb(status: OrderStatus) -> pb::OrderStatus {
    use pb::OrderStatus as P;
    match status {
        OrderStatus::Received => P::Received,
        OrderStatus::Accepted => P::Accepted,
        OrderStatus::Preparing => P::Preparing,
        OrderStatus::Ready => P::Ready,
        OrderStatus::OutForDelivery => P::OutForDelivery,
        OrderStatus::Completed => P::Completed,
        OrderStatus::Cancelled => P::Cancelled,
    }
}

pub(super) fn order(order: domain::Order) -> pb::Order {
    pb::Order {
        id: order.id,
        number: order.number,
        location_id: order.location_id,
        location_name: order.location_name,
        customer_id: order.customer_id,
        customer_name: order.customer_name,
        status: order_status_to_pb(order.status) as i32,
        fulfillment: match order.fulfillment {
            domain::Fulfillment::Pickup => pb::FulfillmentType::Pickup,
            domain::Fulfillment::Delivery => pb::FulfillmentType::Delivery,
            domain::Fulfillment::DineIn => pb::FulfillmentType::DineIn,
        } as i32,
        total: Some(money(order.total)),
        lines: order
            .lines
            .into_iter()
            .map(|line| pb::OrderLine {
                item_id: line.item_id,
                item_name: line.item_name,
                quantity: line.quantity,
                unit_price: Some(money(line.unit_price)),
                line_total: Some(money(line.line_total)),
            })
            .collect(),
        created_at: order.created_at,
        updated_at: order.updated_at,
    }
}
