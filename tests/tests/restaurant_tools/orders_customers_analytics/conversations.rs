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

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Scene::start(Backend::Sqlite).await.expect("SQLite sandbox"),
    postgres: Scene::start(Backend::Postgres).await,
    run: |scene| (&scene),
    finish: scene.shutdown().await,
    tests: [
        conversations_page_messages_search_transcripts_and_stay_within_the_location,
    ],
}
