//! `chataigne_conversations_list` ↔ `Conversations/ListConversations`: a
//! location's conversations, most or least recently active first, optionally
//! those whose transcript contains a text (case and accents ignored). The transcript query is matched by the
//! database as a bound parameter and appears in no log, span or error.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::{Summary, paged_input};
use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{
    ConversationChannel, ConversationFilter, ConversationStatus, DomainError, ListedConversation,
    Locale, LocationSettings, PageAfter, SettingsSection, SortOrder, contains_pattern, fold,
};
use crate::present::{self, listed_conversation};
use crate::store::Store;

/// Length of a transcript query, in characters.
pub const QUERY_CHARS: std::ops::RangeInclusive<usize> = 2..=200;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_conversations_list",
    title: "List conversations",
    description: "Lists the conversations between one location and its customers, most \
recently active first (or least, with `sort: oldest_first`), with customer, channel, status, \
message count and a preview of the newest message (120 characters at most) and, with `query`, \
of the newest match. Suited to reviewing open conversations or finding one that mentions a \
topic; transcripts come from \
chataigne_conversation_get. Returns 20 by default, 50 at most, with \
`meta.next_cursor` when more exist.",
    scope: "conversations.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Conversations/ListConversations",
    facts: ToolFacts {
        lists_ids: &["conversation_id"],
        ..ToolFacts::NONE
    },
};

paged_input! {
    #[derive(Clone, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ConversationsListInput {
        /// From chataigne_locations_list, e.g. "loc_01paris11".
        #[schemars(length(min = 1, max = 64))]
        pub location_id: String,
        /// Only this status: open (awaiting the restaurant), waiting (awaiting the customer) or closed; omitted: any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub status: Option<ConversationStatus>,
        /// Only this channel; omitted: any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub channel: Option<ConversationChannel>,
        /// Text that a message of the transcript contains, case and accents ignored, e.g. "allergie".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(length(min = 2, max = 200))]
        pub query: Option<String>,
        /// By time of the newest message: newest_first when omitted, or oldest_first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub sort: Option<SortOrder>,
    }
    cursor: "`meta.next_cursor` of the previous page, with the same filters."
}

impl std::fmt::Debug for ConversationsListInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationsListInput")
            .field("location_id", &self.location_id)
            .field("status", &self.status)
            .field("channel", &self.channel)
            .field("query", &self.query.as_ref().map(|_| ".."))
            .field("sort", &self.sort)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConversationsListOutput {
    /// Conversations in the requested order.
    pub conversations: Vec<ListedConversation>,
}

/// `chataigne_conversations_list`, declared by [`SPEC`].
pub struct ConversationsList;

impl Tool for ConversationsList {
    type Input = ConversationsListInput;
    type Output = ConversationsListOutput;
    type Reply = ToolOutput<ConversationsListOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: ConversationsListInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<ConversationsListOutput>, DomainError> {
        let (_, principal) = tools
            .authorize_location(&input.location_id, SPEC.scope, ctx)
            .await?;
        if let Some(query) = &input.query
            && !QUERY_CHARS.contains(&query.chars().count())
        {
            // The query itself is not echoed.
            return Err(DomainError::invalid(
                "query",
                format!(
                    "must be {} to {} characters",
                    QUERY_CHARS.start(),
                    QUERY_CHARS.end()
                ),
            ));
        }
        let sort = input.sort.unwrap_or_default();
        let filter = ConversationFilter {
            location_id: input.location_id.clone(),
            status: input.status,
            channel: input.channel,
            body_pattern: input.query.as_deref().map(contains_pattern),
            sort,
        };
        // The cursor is bound to the folded query and to the order it was
        // issued for, explicit or not.
        let bound_input = ConversationsListInput {
            query: input.query.as_deref().map(fold),
            sort: Some(sort),
            ..input.clone()
        };
        let (pager, page) = tools.page(SPEC.name, &bound_input, &principal, ctx)?;
        let records = tools.store.list_conversations(&filter, &page).await?;
        let (records, next_cursor) = pager.paginate(records, &page, |r| PageAfter {
            key: r.last_message_at_ms.to_string(),
            id: r.id.clone(),
        });
        let conversations = records
            .into_iter()
            .map(|r| listed_conversation(r, ctx.locale))
            .collect::<Result<Vec<_>, _>>()?;
        let searched = match (&input.query, conversations.is_empty()) {
            (Some(query), true) => {
                let location = tools.location(&input.location_id).await?;
                let languages = tools
                    .store
                    .location_settings(&input.location_id, &[SettingsSection::Store])
                    .await?;
                let settings = present::settings(location, &languages, ctx.locale)?;
                Some(no_match_text(query, &input, &settings, ctx.locale))
            }
            _ => None,
        };
        let containing = input
            .query
            .as_deref()
            .map(|q| {
                ctx.locale.pick(
                    format!(" avec un message contenant « {q} »"),
                    format!(" with a message containing \"{q}\""),
                )
            })
            .unwrap_or_default();
        let at = conversations
            .first()
            .map(|c| {
                let c = &c.conversation;
                format!(" · {} ({})", c.location_name, c.location_id)
            })
            .unwrap_or_default();
        let head = match (ctx.locale, conversations.len(), sort.oldest_first()) {
            (_, 0, _) if searched.is_some() => searched.clone().unwrap_or_default(),
            (Locale::Fr, 0, _) => "Aucune conversation ne correspond.".to_owned(),
            (Locale::Fr, n, false) => format!(
                "{n} conversation(s){containing}, de la plus récente à la plus ancienne{at}."
            ),
            (Locale::Fr, n, true) => format!(
                "{n} conversation(s){containing}, de la plus ancienne à la plus récente{at}."
            ),
            (_, 0, _) => "No conversations match.".to_owned(),
            (_, n, false) => {
                format!("{n} conversation(s){containing}, most recently active first{at}.")
            }
            (_, n, true) => {
                format!("{n} conversation(s){containing}, least recently active first{at}.")
            }
        };
        let mut summary = Summary::new(ctx.locale, head);
        for c in &conversations {
            summary.line(conversation_line(c, ctx.locale));
        }
        summary.narrow(
            "un filtre status, channel ou query",
            "a status, channel or query filter",
        );
        Ok(pager.output(
            ConversationsListOutput { conversations },
            summary,
            next_cursor,
        ))
    }
}

/// A conversation on its line: id, customer, channel, status, message
/// count and the newest message or, in a search, the message that matched
/// (the newest message's time and sender then, its text in the data).
fn conversation_line(listed: &ListedConversation, locale: Locale) -> String {
    let c = &listed.conversation;
    let mut line = format!(
        "- {} · {} ({}) · {} · {} · {} message(s) · {} {}",
        c.id,
        c.customer_name,
        c.customer_id,
        c.channel_label,
        c.status_label,
        c.message_count,
        locale.pick("ouverte le", "opened"),
        c.created_at,
    );
    let quote = |text: &str| locale.pick(format!(" : « {text} »"), format!(": \"{text}\""));
    let sender = c
        .last_message_sender_label
        .as_deref()
        .map(|s| format!(", {s}"))
        .unwrap_or_default();
    let newest = format!(
        " · {} ({}{sender})",
        locale.pick("dernier message", "last message"),
        c.last_message_at
    );
    line.push_str(&newest);
    match &listed.matched_message {
        Some(m) => line.push_str(&format!(
            " · {} {} ({}, {}){}",
            locale.pick("message trouvé", "matching message"),
            m.id,
            m.sender_label,
            m.created_at,
            quote(&m.preview)
        )),
        None => line.push_str(&quote(&c.last_message_preview)),
    }
    line
}

/// The language a location's customers write in, named in `locale`.
fn language_name(code: &str, locale: Locale) -> String {
    let name = match code {
        "fr" => locale.pick("français", "French"),
        "en" => locale.pick("anglais", "English"),
        "es" => locale.pick("espagnol", "Spanish"),
        "de" => locale.pick("allemand", "German"),
        "it" => locale.pick("italien", "Italian"),
        _ => return code.to_owned(),
    };
    format!("{name} ({code})")
}

/// An empty transcript search: what was searched, where and with which
/// filters, the language of the location's transcripts, and the next step.
/// The query goes back to the caller only (never to a log).
fn no_match_text(
    query: &str,
    input: &ConversationsListInput,
    settings: &LocationSettings,
    locale: Locale,
) -> String {
    let mut filters = Vec::new();
    if let Some(status) = input.status {
        filters.push(format!("status {}", status.as_str()));
    }
    if let Some(channel) = input.channel {
        filters.push(format!("channel {}", channel.as_str()));
    }
    let filters = if filters.is_empty() {
        String::new()
    } else {
        locale.pick(
            format!(" (filtres : {})", filters.join(", ")),
            format!(" (filters: {})", filters.join(", ")),
        )
    };
    let language = settings
        .store
        .as_ref()
        .and_then(|store| store.languages.first())
        .map(|code| language_name(code, locale));
    let name = &settings.location_name;
    let mut text = locale.pick(
        format!(
            "Aucun message des conversations de {name}{filters} ne contient « {query} » \
             (casse et accents ignorés)."
        ),
        format!(
            "No message in the conversations of {name}{filters} contains \"{query}\" \
             (case and accents ignored)."
        ),
    );
    if let Some(language) = language {
        text.push_str(&locale.pick(
            format!(" Les clients de cet établissement écrivent surtout en {language}."),
            format!(" This location's customers write mostly in {language}."),
        ));
    }
    text.push_str(locale.pick(
        " Étapes suivantes : chercher le mot dans cette langue, un autre terme ou une \
         racine plus courte (ex. « allerg »)",
        " Next: search for the word in that language, for another term or a shorter stem \
         (e.g. \"allerg\")",
    ));
    text.push_str(&if filters.is_empty() {
        locale.pick(
            ", ou rappeler sans query pour lister les conversations.".to_owned(),
            ", or call again without query to list the conversations.".to_owned(),
        )
    } else {
        locale.pick(
            ", ou rappeler sans les filtres status/channel.".to_owned(),
            ", or call again without the status/channel filters.".to_owned(),
        )
    });
    text
}
