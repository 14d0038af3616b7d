//! A location's conversations with customers: about twenty threads of 3 to
//! 150 messages (the first always over 100, for paging through history).

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
        let end = spec.now_ms - rng.range(5, 30 * 24 * 60) * MINUTE_MS;
        let id = format!("conv_{}_{k:02}", tag(&location.id));
        let mut at = end - span;
        let created = at;
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
        } else if rng.percent(50) {
            "open"
        } else {
            "waiting"
        };
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
