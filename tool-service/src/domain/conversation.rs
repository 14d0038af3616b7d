//! Conversations between a location and its customers: statuses, channels,
//! sender kinds, the shapes tools return and the listing filters.

use serde::{Deserialize, Serialize};

/// Longest preview of the newest message, in characters.
pub const PREVIEW_CHARS: usize = 120;

/// Where a conversation stands: open (awaiting the restaurant or its
/// assistant), waiting (awaiting the customer) or closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConversationStatus {
    Open,
    Waiting,
    Closed,
}

/// The channel a conversation runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConversationChannel {
    Sms,
    Whatsapp,
    WebChat,
    Email,
}

/// Who wrote a message: the customer, staff, the assistant answering on the
/// restaurant's behalf, or an internal instruction to that assistant (not
/// shown to the customer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SenderKind {
    Customer,
    Staff,
    Assistant,
    Instruction,
}

macro_rules! text_enum {
    ($ty:ty { $($variant:ident => $text:literal),* $(,)? }) => {
        impl $ty {
            pub fn as_str(self) -> &'static str {
                match self { $(<$ty>::$variant => $text,)* }
            }

            pub fn parse(value: &str) -> Option<$ty> {
                match value { $($text => Some(<$ty>::$variant),)* _ => None }
            }
        }
    };
}

text_enum!(ConversationStatus { Open => "open", Waiting => "waiting", Closed => "closed" });
text_enum!(ConversationChannel {
    Sms => "sms",
    Whatsapp => "whatsapp",
    WebChat => "web_chat",
    Email => "email",
});
text_enum!(SenderKind {
    Customer => "customer",
    Staff => "staff",
    Assistant => "assistant",
    Instruction => "instruction",
});

/// One conversation with its newest message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ConversationSummary {
    /// Conversation ID, e.g. "conv_01paris11_07".
    pub id: String,
    pub location_id: String,
    pub location_name: String,
    pub customer_id: String,
    pub customer_name: String,
    pub channel: ConversationChannel,
    pub channel_label: String,
    pub status: ConversationStatus,
    pub status_label: String,
    /// Messages in the conversation.
    pub message_count: u32,
    /// The newest message, cut to 120 characters (an ellipsis marks the cut).
    pub last_message_preview: String,
    /// Who wrote the newest message.
    pub last_message_sender: Option<SenderKind>,
    pub last_message_sender_label: Option<String>,
    /// ISO 8601 with the location's UTC offset.
    pub created_at: String,
    /// ISO 8601 with the location's UTC offset.
    pub last_message_at: String,
}

/// A conversation of a list and, in a transcript search, the newest of its
/// messages that matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ListedConversation {
    #[serde(flatten)]
    pub conversation: ConversationSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_message: Option<MatchedMessage>,
}

/// The message of a conversation that a transcript search matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MatchedMessage {
    /// Message ID, e.g. "msg_01paris11_07_012".
    pub id: String,
    pub sender: SenderKind,
    pub sender_label: String,
    /// The message, cut to 120 characters (an ellipsis marks the cut).
    pub preview: String,
    /// ISO 8601 with the location's UTC offset.
    pub created_at: String,
}

/// One message of a transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TranscriptMessage {
    /// Message ID, e.g. "msg_01paris11_07_012".
    pub id: String,
    pub sender: SenderKind,
    pub sender_label: String,
    /// The message text as written.
    pub body: String,
    /// ISO 8601 with the location's UTC offset.
    pub created_at: String,
}

/// Filters of a conversation listing, already authorized. Never logged: the
/// pattern comes from a transcript query.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ConversationFilter {
    pub location_id: String,
    pub status: Option<ConversationStatus>,
    pub channel: Option<ConversationChannel>,
    /// Folded substring pattern of any message body (`search::contains_pattern`).
    pub body_pattern: Option<String>,
    /// By time of the newest message, newest or oldest first.
    pub sort: super::SortOrder,
}

impl std::fmt::Debug for ConversationFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationFilter")
            .field("location_id", &self.location_id)
            .field("status", &self.status)
            .field("channel", &self.channel)
            .field("body_pattern", &self.body_pattern.as_ref().map(|_| ".."))
            .field("sort", &self.sort)
            .finish()
    }
}

/// `body` cut to [`PREVIEW_CHARS`] characters, whitespace collapsed.
pub fn preview(body: &str) -> String {
    let collapsed = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= PREVIEW_CHARS {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(PREVIEW_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_bounded() {
        assert_eq!(preview("  Bonjour\n  à tous "), "Bonjour à tous");
        let long = "é".repeat(500);
        let cut = preview(&long);
        assert_eq!(cut.chars().count(), PREVIEW_CHARS);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn filters_do_not_print_the_query() {
        let filter = ConversationFilter {
            body_pattern: Some("%secret%".into()),
            ..ConversationFilter::default()
        };
        assert!(!format!("{filter:?}").contains("secret"));
    }

    #[test]
    fn texts_round_trip() {
        for kind in [SenderKind::Customer, SenderKind::Instruction] {
            assert_eq!(SenderKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(
            ConversationChannel::parse("web_chat"),
            Some(ConversationChannel::WebChat)
        );
        assert_eq!(ConversationStatus::parse("nope"), None);
    }
}
