//! Presentation of stored customers and conversations: contact details
//! masked, times with the relevant location's UTC offset, statuses parsed.

use super::timestamp;
use crate::domain::{
    ConversationChannel, ConversationStatus, ConversationSummary, Customer, DomainError,
    ListedConversation, Locale, MatchedMessage, SenderKind, TranscriptMessage, mask_email,
    mask_phone,
};
use crate::store::{ConversationRecord, CustomerRecord, MessageRecord};

pub fn customer(record: CustomerRecord) -> Customer {
    Customer {
        email_masked: record.email.as_deref().map(mask_email),
        phone_masked: record.phone.as_deref().map(mask_phone),
        order_count: u32::try_from(record.order_count).unwrap_or(u32::MAX),
        last_order_at: record
            .last_order_at_ms
            .map(|ms| timestamp(ms, record.last_order_timezone.as_deref().unwrap_or("UTC"))),
        created_at: timestamp(record.created_at_ms, "UTC"),
        id: record.id,
        name: record.display_name,
        organization_id: record.organization_id,
        organization_name: record.organization_name,
        location_id: record.location_id,
    }
}

pub fn conversation(
    record: ConversationRecord,
    locale: Locale,
) -> Result<ConversationSummary, DomainError> {
    let channel = ConversationChannel::parse(&record.channel)
        .ok_or_else(|| DomainError::Internal(format!("unknown channel {}", record.channel)))?;
    let status = ConversationStatus::parse(&record.status).ok_or_else(|| {
        DomainError::Internal(format!("unknown conversation status {}", record.status))
    })?;
    let sender = record
        .last_message_sender
        .as_deref()
        .and_then(SenderKind::parse);
    Ok(ConversationSummary {
        channel_label: channel.label(locale).to_owned(),
        status_label: status.label(locale).to_owned(),
        message_count: u32::try_from(record.message_count).unwrap_or(u32::MAX),
        last_message_preview: record
            .last_message_body
            .as_deref()
            .map(crate::domain::conversation_preview)
            .unwrap_or_default(),
        last_message_sender: sender,
        last_message_sender_label: sender.map(|s| s.label(locale).to_owned()),
        created_at: timestamp(record.created_at_ms, &record.timezone),
        last_message_at: timestamp(record.last_message_at_ms, &record.timezone),
        channel,
        status,
        id: record.id,
        location_id: record.location_id,
        location_name: record.location_name,
        customer_id: record.customer_id,
        customer_name: record.customer_name,
    })
}

/// A conversation of a list, with the message a transcript search matched.
pub fn listed_conversation(
    mut record: ConversationRecord,
    locale: Locale,
) -> Result<ListedConversation, DomainError> {
    let matched_message = match (
        record.matched_message_id.take(),
        record.matched_message_body.take(),
        record
            .matched_message_sender
            .take()
            .as_deref()
            .and_then(SenderKind::parse),
        record.matched_message_at_ms.take(),
    ) {
        (Some(id), Some(body), Some(sender), Some(at_ms)) => Some(MatchedMessage {
            id,
            sender,
            sender_label: sender.label(locale).to_owned(),
            preview: crate::domain::conversation_preview(&body),
            created_at: timestamp(at_ms, &record.timezone),
        }),
        _ => None,
    };
    Ok(ListedConversation {
        conversation: conversation(record, locale)?,
        matched_message,
    })
}

pub fn message(
    record: MessageRecord,
    timezone: &str,
    locale: Locale,
) -> Result<TranscriptMessage, DomainError> {
    let sender = SenderKind::parse(&record.sender)
        .ok_or_else(|| DomainError::Internal(format!("unknown sender {}", record.sender)))?;
    Ok(TranscriptMessage {
        sender_label: sender.label(locale).to_owned(),
        created_at: timestamp(record.created_at_ms, timezone),
        sender,
        id: record.id,
        body: record.body,
    })
}
