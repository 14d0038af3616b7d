//! `chataigne_conversations_list` and `chataigne_conversation_get`: message
//! paging through a long thread, cursors bound to the conversation and the
//! caller, transcript search, and location staff kept to their location.

use super::*;

async fn conversations_page_messages_search_transcripts_and_stay_within_the_location(
    scene: &Scene,
) {
    let c = &scene.client().await;
    let (manager, staff) = (&*scene.manager, &*scene.staff);
    let listed = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 5}),
        )
        .await;
    let list = data(&listed)["conversations"].as_array().unwrap().clone();
    assert_eq!(list.len(), 5);
    for conversation in &list {
        assert!(
            conversation["last_message_preview"]
                .as_str()
                .unwrap()
                .chars()
                .count()
                <= 120
        );
        assert_eq!(conversation["location_id"], demo::LOC_PARIS);
    }
    assert!(next_cursor(&listed).is_some());

    // The long thread: 100 messages, then the older ones through the cursor.
    let thread = "conv_01paris11_01";
    let newest = c
        .call(
            manager,
            "chataigne_conversation_get",
            json!({"conversation_id": thread, "limit": 100}),
        )
        .await;
    let total = data(&newest)["conversation"]["message_count"]
        .as_u64()
        .unwrap() as usize;
    assert!(total > 100);
    let mut ids: Vec<String> = data(&newest)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 100);
    let cursor = next_cursor(&newest).expect("older messages");
    let older = c
        .call(
            manager,
            "chataigne_conversation_get",
            json!({"conversation_id": thread, "limit": 100, "cursor": cursor}),
        )
        .await;
    assert!(next_cursor(&older).is_none());
    ids.extend(
        data(&older)["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned()),
    );
    assert_eq!(ids.len(), total);
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(ids, sorted, "newest first (ids are numbered in time order)");
    for message in data(&newest)["messages"].as_array().unwrap() {
        let at = message["created_at"].as_str().unwrap();
        assert!(
            at.ends_with("+01:00") || at.ends_with("+02:00"),
            "Paris time: {at}"
        );
    }
    // The cursor is bound to the conversation and to the caller.
    let stolen = c
        .call(
            staff,
            "chataigne_conversation_get",
            json!({"conversation_id": thread, "limit": 100, "cursor": cursor}),
        )
        .await;
    assert_eq!(error_code(&stolen), "MCP_CURSOR_INVALID");
    let other = c
        .call(
            manager,
            "chataigne_conversation_get",
            json!({"conversation_id": "conv_01paris11_02", "cursor": cursor, "limit": 100}),
        )
        .await;
    assert_eq!(error_code(&other), "MCP_CURSOR_INVALID");
    let default = c
        .call(
            manager,
            "chataigne_conversation_get",
            json!({"conversation_id": thread}),
        )
        .await;
    assert_eq!(data(&default)["messages"].as_array().unwrap().len(), 50);
    let too_many = c
        .call(
            manager,
            "chataigne_conversation_get",
            json!({"conversation_id": thread, "limit": 101}),
        )
        .await;
    assert_eq!(error_code(&too_many), "MCP_INVALID_ARGUMENTS");

    // Transcript search finds the conversation a message belongs to.
    let body = data(&newest)["messages"][0]["body"].as_str().unwrap();
    let chars: Vec<char> = body.chars().collect();
    let word: String = chars
        .windows(6)
        .find(|w| w.iter().all(|c| c.is_ascii_alphanumeric() || *c == ' '))
        .expect("six plain characters in a row")
        .iter()
        .collect();
    let found = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": word.to_uppercase(), "limit": 50}),
        )
        .await;
    assert!(
        data(&found)["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == thread),
        "searching {word:?}"
    );
    let nothing = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": "zqxjw-no-such-text"}),
        )
        .await;
    assert!(
        data(&nothing)["conversations"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let short = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": "a"}),
        )
        .await;
    assert_eq!(error_code(&short), "MCP_INVALID_ARGUMENTS");
    let closed = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "status": "closed", "limit": 50}),
        )
        .await;
    for conversation in data(&closed)["conversations"].as_array().unwrap() {
        assert_eq!(conversation["status"], "closed");
    }

    // Location staff read their location, not a sibling's.
    let own = c
        .call(
            staff,
            "chataigne_conversation_get",
            json!({"conversation_id": thread, "limit": 1}),
        )
        .await;
    assert_eq!(data(&own)["messages"].as_array().unwrap().len(), 1);
    let sibling = c
        .call(
            staff,
            "chataigne_conversation_get",
            json!({"conversation_id": "conv_01lyoncroixrousse_01"}),
        )
        .await;
    let unknown = c
        .call(
            staff,
            "chataigne_conversation_get",
            json!({"conversation_id": "conv_nope"}),
        )
        .await;
    assert_eq!(error_code(&sibling), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(error_message(&sibling), error_message(&unknown));
    let sibling_list = c
        .call(
            staff,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_LYON}),
        )
        .await;
    assert_eq!(error_code(&sibling_list), "MCP_RESOURCE_FORBIDDEN");
}

/// The first text block: what a model reads.
fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A transcript search shows, for each conversation found, the newest
/// message that matched (not the newest message), in the data and quoted in
/// the text; a conversation whose newest message does not match shows it
/// all the same.
async fn a_search_hit_shows_the_message_that_matched(scene: &Scene) {
    let c = &scene.client().await;
    let manager = &*scene.manager;
    let found = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": "ALLERGIQUE", "limit": 8}),
        )
        .await;
    let said = text(&found);
    assert!(
        said.starts_with("8 conversation(s) with a message containing \"ALLERGIQUE\""),
        "{said}"
    );
    let hits = data(&found)["conversations"].as_array().unwrap().clone();
    assert!(
        !hits.is_empty(),
        "the demo's customers ask about allergies: {said}"
    );
    let mut newest_elsewhere = 0;
    for hit in &hits {
        let matched = &hit["matched_message"];
        let preview = matched["preview"]
            .as_str()
            .unwrap_or_else(|| panic!("{hit}"));
        assert!(preview.to_lowercase().contains("allergique"), "{hit}");
        assert!(matched["id"].as_str().unwrap().starts_with("msg_"), "{hit}");
        // The message is the conversation's own, with that text.
        let thread = c
            .call(
                manager,
                "chataigne_conversation_get",
                json!({"conversation_id": hit["id"], "limit": 100}),
            )
            .await;
        let messages = data(&thread)["messages"].as_array().unwrap().clone();
        let own = messages
            .iter()
            .find(|m| m["id"] == matched["id"])
            .unwrap_or_else(|| panic!("{} among the newest 100 of {}", matched["id"], hit["id"]));
        assert!(
            own["body"]
                .as_str()
                .unwrap()
                .starts_with(preview.trim_end_matches('…'))
        );
        assert_eq!(own["sender"], matched["sender"]);
        // It is the newest message that matches.
        let newer_match = messages
            .iter()
            .take_while(|m| m["id"] != matched["id"])
            .any(|m| {
                m["body"]
                    .as_str()
                    .unwrap()
                    .to_lowercase()
                    .contains("allergique")
            });
        assert!(!newer_match, "the newest match of {}", hit["id"]);
        if !hit["last_message_preview"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("allergique")
        {
            newest_elsewhere += 1;
        }
        // The text quotes the matching message on the conversation's line.
        let line = said
            .lines()
            .find(|l| l.starts_with(&format!("- {}", hit["id"].as_str().unwrap())))
            .unwrap_or_else(|| panic!("a line for {}: {said}", hit["id"]));
        assert!(
            line.contains(&format!(
                "matching message {}",
                matched["id"].as_str().unwrap()
            )),
            "{line}"
        );
        assert!(line.contains(preview), "{line}");
    }
    assert!(
        newest_elsewhere > 0,
        "some conversations moved on after the matching message: {said}"
    );

    // Without a query, no conversation carries a matched message.
    let plain = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 50}),
        )
        .await;
    for conversation in data(&plain)["conversations"].as_array().unwrap() {
        assert!(
            conversation.get("matched_message").is_none(),
            "{conversation}"
        );
    }
}

/// An empty transcript search is not a dead end: its text says what was
/// searched, where and with which filters, in which language the location's
/// customers write, and what to try next, in the caller's language.
async fn an_empty_search_says_what_was_searched_the_transcripts_language_and_the_next_step(
    scene: &Scene,
) {
    let c = &scene.client().await;
    let manager = &*scene.manager;
    let english = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": "allergens"}),
        )
        .await;
    assert!(
        data(&english)["conversations"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let said = text(&english);
    for needle in [
        "No message in the conversations of Châtaigne Paris 11e contains \"allergens\"",
        "This location's customers write mostly in French (fr).",
        "search for the word in that language, for another term or a shorter stem",
        "or call again without query to list the conversations.",
    ] {
        assert!(said.contains(needle), "{needle:?} in {said}");
    }
    // The next step it suggests finds them.
    let stem = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": "allerg"}),
        )
        .await;
    assert!(
        !data(&stem)["conversations"].as_array().unwrap().is_empty(),
        "{stem}"
    );

    // With filters, the text names them and suggests dropping them.
    let filtered = c
        .call_in(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_BORDEAUX,
                   "query": "zqxjw", "status": "closed", "channel": "sms"}),
            Some("fr-FR"),
        )
        .await;
    let said = text(&filtered);
    for needle in [
        "Aucun message des conversations de Châtaigne Bordeaux Chartrons (filtres : status \
         closed, channel sms) ne contient « zqxjw »",
        "Les clients de cet établissement écrivent surtout en français (fr).",
        "ou rappeler sans les filtres status/channel.",
    ] {
        assert!(said.contains(needle), "{needle:?} in {said}");
    }
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Scene::start(Backend::Sqlite).await.expect("SQLite sandbox"),
    postgres: Scene::start(Backend::Postgres).await,
    run: |scene| (&scene),
    finish: scene.shutdown().await,
    tests: [
        conversations_page_messages_search_transcripts_and_stay_within_the_location,
        a_search_hit_shows_the_message_that_matched,
        an_empty_search_says_what_was_searched_the_transcripts_language_and_the_next_step,
    ],
}
