//! The demo tenant set tells one consistent story: every conversation's
//! status agrees with its transcript (open: the customer spoke last and the
//! restaurant has to answer; waiting: the restaurant spoke last; closed:
//! quiet for over a day), every location has open and waiting
//! conversations, orders belong to their location's organization and
//! currency with statuses that fit their age and fulfillment, and sold-out
//! items and paused locations carry coherent times.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, HashSet};

use chataigne_common::demo;
use chataigne_tools::store::seed::{DAY_MS, DataSet, MessageRow, SeedSpec};

/// Tuesday 10 March 2026, 11:00 UTC: lunch is about to start in Paris.
const NOW_MS: i64 = 1_773_140_400_000;

fn demo_data() -> DataSet {
    DataSet::generate(&SeedSpec::demo(NOW_MS))
}

fn transcripts(data: &DataSet) -> HashMap<&str, Vec<&MessageRow>> {
    let mut by_conversation: HashMap<&str, Vec<&MessageRow>> = HashMap::new();
    for message in &data.messages {
        by_conversation
            .entry(message.conversation_id.as_str())
            .or_default()
            .push(message);
    }
    for messages in by_conversation.values_mut() {
        messages.sort_by_key(|m| (m.created_at_ms, m.id.clone()));
    }
    by_conversation
}

#[test]
fn each_conversation_status_agrees_with_who_spoke_last_and_when() {
    let data = demo_data();
    let transcripts = transcripts(&data);
    let mut contradictions = Vec::new();
    for conversation in &data.conversations {
        let messages = &transcripts[conversation.id.as_str()];
        let (first, last) = (messages[0], messages[messages.len() - 1]);
        assert!(
            conversation.created_at_ms <= first.created_at_ms,
            "{}",
            conversation.id
        );
        assert_eq!(
            conversation.last_message_at_ms, last.created_at_ms,
            "{}",
            conversation.id
        );
        let quiet = NOW_MS - last.created_at_ms > DAY_MS;
        let agrees = match conversation.status.as_str() {
            "open" => last.sender == "customer" && !quiet,
            "waiting" => matches!(last.sender.as_str(), "staff" | "assistant") && !quiet,
            "closed" => quiet,
            other => panic!("unknown status {other}"),
        };
        if !agrees {
            contradictions.push(format!(
                "{} is {} but its last message is from {} at {}",
                conversation.id, conversation.status, last.sender, last.created_at_ms
            ));
        }
    }
    assert!(contradictions.is_empty(), "{contradictions:#?}");
}

#[test]
fn every_location_has_open_and_waiting_conversations() {
    let data = demo_data();
    for location in demo::LOCATIONS {
        let statuses: HashSet<&str> = data
            .conversations
            .iter()
            .filter(|c| c.location_id == location.id)
            .map(|c| c.status.as_str())
            .collect();
        for status in ["open", "waiting", "closed"] {
            assert!(
                statuses.contains(status),
                "{} has no {status} conversation: {statuses:?}",
                location.name
            );
        }
    }
}

#[test]
fn orders_and_conversations_stay_within_their_tenant() {
    let data = demo_data();
    let locations: HashMap<&str, _> = data.locations.iter().map(|l| (l.id.as_str(), l)).collect();
    let customers: HashMap<&str, _> = data.customers.iter().map(|c| (c.id.as_str(), c)).collect();
    for order in &data.orders {
        let location = locations[order.location_id.as_str()];
        assert_eq!(
            order.organization_id, location.organization_id,
            "{}",
            order.id
        );
        assert_eq!(order.currency, location.currency, "{}", order.id);
        assert_eq!(
            customers[order.customer_id.as_str()].organization_id,
            order.organization_id,
            "{}",
            order.id
        );
    }
    for conversation in &data.conversations {
        let location = locations[conversation.location_id.as_str()];
        assert_eq!(conversation.organization_id, location.organization_id);
        assert_eq!(
            customers[conversation.customer_id.as_str()].organization_id,
            conversation.organization_id,
            "{}",
            conversation.id
        );
    }
}

#[test]
fn order_statuses_fit_their_age_and_fulfillment() {
    let data = demo_data();
    let in_progress = [
        "received",
        "accepted",
        "preparing",
        "ready",
        "out_for_delivery",
    ];
    let mut newest_done: HashMap<&str, i64> = HashMap::new();
    for order in &data.orders {
        assert!(order.updated_at_ms >= order.created_at_ms, "{}", order.id);
        assert!(order.updated_at_ms <= NOW_MS, "{}", order.id);
        assert!(order.created_at_ms <= NOW_MS, "{}", order.id);
        if order.status == "out_for_delivery" {
            assert_eq!(order.fulfillment, "delivery", "{}", order.id);
        }
        if !in_progress.contains(&order.status.as_str()) {
            let newest = newest_done.entry(order.location_id.as_str()).or_default();
            *newest = (*newest).max(order.created_at_ms);
        }
    }
    // Orders in progress are the newest of their location: no finished
    // order was placed after one still waiting or being prepared.
    for order in data
        .orders
        .iter()
        .filter(|o| in_progress.contains(&o.status.as_str()))
    {
        assert!(
            order.created_at_ms >= newest_done[order.location_id.as_str()],
            "{} is {} but an order placed later is finished",
            order.id,
            order.status
        );
    }
    for location in demo::LOCATIONS {
        let waiting = data
            .orders
            .iter()
            .filter(|o| o.location_id == location.id && o.status == "received")
            .count();
        assert!(waiting > 0, "{} has orders waiting", location.name);
    }
}

#[test]
fn sold_out_items_and_paused_locations_carry_coherent_times() {
    let data = demo_data();
    for item in &data.items {
        match item.availability.as_str() {
            "available" => assert!(item.available_again_at_ms.is_none(), "{}", item.id),
            "sold_out" => assert!(
                item.available_again_at_ms.is_none_or(|at| at > NOW_MS),
                "{}",
                item.id
            ),
            other => panic!("unknown availability {other}"),
        }
    }
    for location in &data.locations {
        if location.status == "accepting" {
            assert!(location.paused_until_ms.is_none(), "{}", location.id);
            assert!(location.pause_reason.is_none(), "{}", location.id);
        }
    }
}
