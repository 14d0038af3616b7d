//! A location's conversations with customers: about twenty threads of 3 to
//! 150 messages (the first always over 100, for paging through history).
//! A status always agrees with the thread: `open` (awaiting the restaurant)
//! ends with the customer's message, `waiting` (awaiting the customer) with
//! the restaurant's (staff or assistant), both within the last day; older
//! threads are `closed`. Every location has at least one of each.

use super::people::{
    AMERICAN_ASSISTANT, AMERICAN_CUSTOMER, AMERICAN_INSTRUCTION, AMERICAN_STAFF, FRENCH_ASSISTANT,
    FRENCH_CUSTOMER, FRENCH_INSTRUCTION, FRENCH_STAFF,
};
use super::rng::Rng;
use super::rows::{ConversationRow, CustomerRow, LocationRow, MessageRow};
use super::{DAY_MS, SeedSpec, Style, tag};

const MINUTE_MS: i64 = 60_000;

/// Conversations per location.
pub(super) const PER_LOCATION: usize = 20;

/// Messages of the first conversation of each location.
const LONG_THREAD: usize = 120;

/// The conversations of each location that are always recent, one `open`
/// and one `waiting`.
const RECENT_OPEN: usize = 2;
const RECENT_WAITING: usize = 3;

const CHANNELS: [&str; 4] = ["sms", "whatsapp", "web_chat", "email"];

pub(super) fn for_location(
    spec: &SeedSpec,
    location: &LocationRow,
    customers: &[CustomerRow],
    style: Style,
    conversations: &mut Vec<ConversationRow>,
    messages: &mut Vec<MessageRow>,
) {
    if customers.is_empty() {
        return;
    }
    let mut rng = Rng::derive(spec.seed, &["conversations", &location.id]);
    let (customer_lines, staff, assistant, instruction) = match style {
        Style::French => (
            FRENCH_CUSTOMER,
            FRENCH_STAFF,
            FRENCH_ASSISTANT,
            FRENCH_INSTRUCTION,
        ),
        Style::American => (
            AMERICAN_CUSTOMER,
            AMERICAN_STAFF,
            AMERICAN_ASSISTANT,
            AMERICAN_INSTRUCTION,
        ),
    };
    for k in 1..=PER_LOCATION {
        let count = if k == 1 {
            LONG_THREAD
        } else if rng.percent(10) {
            rng.range(60, 151) as usize
        } else {
            rng.range(3, 41) as usize
        };
        let gaps: Vec<i64> = (0..count).map(|_| rng.range(1, 25) * MINUTE_MS).collect();
        let span: i64 = gaps.iter().sum();
        let mut end = spec.now_ms - rng.range(5, 30 * 24 * 60) * MINUTE_MS;
        if k == RECENT_OPEN || k == RECENT_WAITING {
            end = spec.now_ms - rng.range(5, 6 * 60) * MINUTE_MS;
        }
        let id = format!("conv_{}_{k:02}", tag(&location.id));
        let mut at = end - span;
        let created = at;
        let first = messages.len();
        for (m, gap) in gaps.iter().enumerate() {
            at += gap;
            let (sender, body) = match (m % 4, rng.percent(5)) {
                (_, true) if m > 0 => ("instruction", *rng.pick(instruction)),
                (0 | 2, _) => ("customer", *rng.pick(customer_lines)),
                (1, _) => ("assistant", *rng.pick(assistant)),
                _ => ("staff", *rng.pick(staff)),
            };
            messages.push(MessageRow {
                id: format!("msg_{}_{k:02}_{:03}", tag(&location.id), m + 1),
                conversation_id: id.clone(),
                sender: sender.to_owned(),
                body: body.to_owned(),
                created_at_ms: at,
            });
        }
        let status = if spec.now_ms - at > DAY_MS {
            "closed"
        } else if k == RECENT_OPEN {
            "open"
        } else if k == RECENT_WAITING || !rng.percent(50) {
            "waiting"
        } else {
            "open"
        };
        // The last word agrees with the status: the customer's while the
        // restaurant has to answer, the restaurant's while the customer has.
        if let Some(last) = messages[first..].last_mut() {
            match (status, last.sender.as_str()) {
                ("open", sender) if sender != "customer" => {
                    last.sender = "customer".to_owned();
                    last.body = (*rng.pick(customer_lines)).to_owned();
                }
                ("waiting", "customer" | "instruction") => {
                    let (sender, lines) = if rng.percent(50) {
                        ("assistant", assistant)
                    } else {
                        ("staff", staff)
                    };
                    last.sender = sender.to_owned();
                    last.body = (*rng.pick(lines)).to_owned();
                }
                _ => {}
            }
        }
        conversations.push(ConversationRow {
            id,
            organization_id: location.organization_id.clone(),
            location_id: location.id.clone(),
            customer_id: rng.pick(customers).id.clone(),
            channel: (*rng.pick(&CHANNELS)).to_owned(),
            status: status.to_owned(),
            created_at_ms: created,
            last_message_at_ms: at,
        });
    }
}
