//! The rate limits of a call on the real Redis, seen from the wire: a relay
//! between the gateway and Redis reads every command the gateway sends, so
//! the tests count the round trips of a call (one for both limits), and
//! check each limit's refusal, the per-address refusal before any token
//! work, and fail-open when Redis is gone.

use crate::support;

use std::sync::{Arc, Mutex};

use secrecy::SecretString;
use serde_json::{Value, json};
use support::{Harness, TOKEN_ALL};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A relay to the test Redis recording the name of every command sent
/// through it.
struct CommandLog {
    url: String,
    commands: Arc<Mutex<Vec<String>>>,
}

impl CommandLog {
    async fn start() -> CommandLog {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("redis://{}", listener.local_addr().unwrap());
        let target = chataigne_common::testing::redis_url()
            .trim_start_matches("redis://")
            .trim_end_matches('/')
            .to_owned();
        let commands = Arc::new(Mutex::new(Vec::new()));
        let log = commands.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(&target)
                    .await
                    .expect("the test Redis is reachable");
                tokio::spawn(relay(client, server, log.clone()));
            }
        });
        CommandLog { url, commands }
    }

    /// The commands sent since the last call, without the breaker's `PING`
    /// probes.
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.commands.lock().unwrap())
            .into_iter()
            .filter(|command| command != "PING")
            .collect()
    }
}

async fn relay(client: TcpStream, server: TcpStream, log: Arc<Mutex<Vec<String>>>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = async move {
        let mut pending = Vec::new();
        let mut buffer = vec![0u8; 16 * 1024];
        while let Ok(read) = client_read.read(&mut buffer).await {
            if read == 0 || server_write.write_all(&buffer[..read]).await.is_err() {
                break;
            }
            pending.extend_from_slice(&buffer[..read]);
            while let Some((used, name)) = command(&pending) {
                log.lock().unwrap().push(name);
                pending.drain(..used);
            }
        }
    };
    let down = async move {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
    };
    tokio::join!(up, down);
}

/// The length and upper-cased name of the first complete RESP command of
/// `bytes` (an array of bulk strings), if there is one yet.
fn command(bytes: &[u8]) -> Option<(usize, String)> {
    fn line(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
        let end = at + bytes.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        let value = std::str::from_utf8(&bytes[at + 1..end])
            .ok()?
            .parse()
            .ok()?;
        Some((value, end + 2))
    }
    if bytes.is_empty() {
        return None;
    }
    assert_eq!(bytes[0], b'*', "RESP commands are arrays");
    let (count, mut at) = line(bytes, 0)?;
    let mut name = String::new();
    for i in 0..count {
        assert_eq!(bytes.get(at), Some(&b'$'), "of bulk strings");
        let (length, start) = line(bytes, at)?;
        let end = start + length;
        if bytes.len() < end + 2 {
            return None;
        }
        if i == 0 {
            name = String::from_utf8_lossy(&bytes[start..end]).to_uppercase();
        }
        at = end + 2;
    }
    Some((at, name))
}

/// A gateway on Redis `redis_url` under a key prefix of its own (returned).
async fn gateway_on(redis_url: &str, per_address: u32, per_tool: u32) -> (Harness, String) {
    let redis_url = redis_url.to_owned();
    let prefix = format!("t{}", uuid::Uuid::new_v4().simple());
    let key_prefix = prefix.clone();
    let harness = Harness::start_with(move |config| {
        config.redis.url = Some(SecretString::from(redis_url));
        config.redis.key_prefix = key_prefix;
        config.rate_limits.per_ip_per_minute = per_address;
        config.rate_limits.reads_per_minute = per_tool;
    })
    .await;
    (harness, prefix)
}

fn tool_call(name: &str) -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
           "params":{"name":name,"arguments":{}}})
}

/// The `data.error` of an `isError` tool result.
fn tool_error(body: &Value) -> Value {
    chataigne_common::testing::envelope(&body["result"])["data"]["error"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_counts_both_limits_in_one_redis_round_trip() {
    let redis = CommandLog::start().await;
    let (harness, prefix) = gateway_on(&redis.url, 100, 100).await;
    // The first call may load the script (and set the connection up).
    let (status, body) = harness.rpc(TOKEN_ALL, tool_call("orders_list")).await;
    assert_eq!(
        (status, body["result"]["isError"].clone()),
        (200, json!(false))
    );
    redis.take();
    for _ in 0..3 {
        let (status, body) = harness.rpc(TOKEN_ALL, tool_call("orders_list")).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["isError"], false, "{body}");
        assert_eq!(
            redis.take(),
            ["EVALSHA"],
            "address and tool limits in one call"
        );
    }
    // Any other method counts its address alone, in one round trip too.
    let (status, _) = harness
        .rpc(
            TOKEN_ALL,
            json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(redis.take(), ["EVALSHA"]);
    // Both logs hold what they counted: the address 5 requests, the tool 4.
    let client = redis::Client::open(chataigne_common::testing::redis_url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    for (kind, logged) in [("address", 5), ("tool", 4)] {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{prefix}:rl:{kind}:*"))
            .query_async(&mut connection)
            .await
            .unwrap();
        assert_eq!(keys.len(), 1, "{kind}: {keys:?}");
        let count: i64 = redis::cmd("ZCARD")
            .arg(&keys[0])
            .query_async(&mut connection)
            .await
            .unwrap();
        assert_eq!(count, logged, "{kind}");
    }
    harness.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_limit_refuses_with_its_answer_and_hint_and_a_refused_address_costs_no_token_check() {
    let redis = CommandLog::start().await;
    let (harness, _) = gateway_on(&redis.url, 3, 2).await;
    for _ in 0..2 {
        let (_, body) = harness.rpc(TOKEN_ALL, tool_call("orders_list")).await;
        assert_eq!(body["result"]["isError"], false, "{body}");
    }
    // The tool's budget is spent: a tool result the model reads, with the
    // time until its first call leaves the rolling minute.
    let (status, body) = harness.rpc(TOKEN_ALL, tool_call("orders_list")).await;
    assert_eq!(status, 200);
    let error = tool_error(&body);
    assert_eq!(error["code"], "MCP_RATE_LIMITED", "{body}");
    assert!(
        error["retry_after_ms"]
            .as_u64()
            .is_some_and(|ms| ms > 50_000 && ms <= 60_000),
        "{error}"
    );
    // The text names the next call and the delay in words.
    let seconds = error["retry_after_ms"].as_u64().unwrap().div_ceil(1000);
    assert_eq!(
        error["message"],
        format!(
            "Too many calls of orders_list for this user. Call orders_list again in {seconds} \
             seconds, with the same arguments."
        ),
        "{error}"
    );
    // The address counted that call too (3 of 3): another tool is refused
    // for the address, as a JSON-RPC error to the call's id.
    let (status, body) = harness.rpc(TOKEN_ALL, tool_call("customers_list")).await;
    assert_eq!(status, 200);
    assert_eq!(body["id"], 1, "{body}");
    assert_eq!(body["error"]["data"]["code"], "MCP_RATE_LIMITED", "{body}");
    let hint = body["error"]["data"]["retry_after_ms"].as_u64().unwrap();
    assert!(hint > 50_000 && hint <= 60_000, "{body}");
    let said = body["error"]["message"].as_str().unwrap();
    assert!(
        said.ends_with(&format!("Retry in {} seconds.", hint.div_ceil(1000))),
        "{said}"
    );
    assert_eq!(
        harness.tool_calls().len(),
        2,
        "refused calls never reach the tool"
    );
    // Known refused: the next request of that address, whatever its token,
    // is refused before the token is checked and without asking Redis.
    redis.take();
    let token_checks = harness.auth_calls().len();
    for message in [
        tool_call("orders_list"),
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
    ] {
        let (status, body) = harness.rpc("tok-unknown-0000", message).await;
        assert_eq!(status, 200);
        assert_eq!(body["error"]["data"]["code"], "MCP_RATE_LIMITED", "{body}");
        let again = body["error"]["data"]["retry_after_ms"].as_u64().unwrap();
        assert!(again <= hint, "{again} after {hint}");
    }
    assert_eq!(harness.auth_calls().len(), token_checks, "no token work");
    assert_eq!(redis.take(), Vec::<String>::new(), "no round trip");
    harness.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_stops_before_its_tool_limit_still_counts_its_address() {
    let redis = CommandLog::start().await;
    let (harness, _) = gateway_on(&redis.url, 2, 100).await;
    // Refused tokens and unknown tools count against the address once each.
    let (status, _) = harness
        .rpc("tok-unknown-0000", tool_call("orders_list"))
        .await;
    assert_eq!(status, 401);
    let (status, body) = harness.rpc(TOKEN_ALL, tool_call("no_such_tool")).await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32602, "{body}");
    // The third request of the address is refused, whatever came first.
    let (status, body) = harness
        .rpc("tok-unknown-0000", tool_call("orders_list"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["error"]["data"]["code"], "MCP_RATE_LIMITED", "{body}");
    assert!(harness.tool_calls().is_empty());
    harness.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_redis_calls_are_served_and_counted_once_as_fail_open() {
    let closed = support::closed_port_url()
        .await
        .replace("http://", "redis://");
    let (harness, _) = gateway_on(&closed, 1, 1).await;
    for _ in 0..3 {
        let (status, body) = harness.rpc(TOKEN_ALL, tool_call("orders_list")).await;
        assert_eq!(status, 200);
        assert_eq!(body["result"]["isError"], false, "served: {body}");
    }
    let metrics = reqwest::get(format!("{}/metrics", harness.internal))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("chataigne_gateway_store_fail_open_total{store=\"rate_limit\"} 3"),
        "one fail-open per call, for both limits: {metrics}"
    );
    harness.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_redis_limits_failing_closed_refuse_calls_with_the_dependency_error() {
    let closed = support::closed_port_url()
        .await
        .replace("http://", "redis://");
    let harness = Harness::start_with(move |config| {
        config.redis.url = Some(SecretString::from(closed));
        config.rate_limits.on_store_failure = chataigne_gateway::config::OnStoreFailure::FailClosed;
    })
    .await;
    for _ in 0..2 {
        let (status, body) = harness.rpc(TOKEN_ALL, tool_call("orders_list")).await;
        assert_eq!(status, 200, "answered to the call's id: {body}");
        let error = &body["error"]["data"];
        assert_eq!(error["code"], "MCP_DEPENDENCY_UNAVAILABLE", "{body}");
        assert_eq!(error["retryable"], true, "{body}");
        assert!(
            error["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0),
            "{body}"
        );
    }
    assert!(
        harness.tool_calls().is_empty(),
        "nothing reached the tool-service"
    );
    let metrics = reqwest::get(format!("{}/metrics", harness.internal))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("chataigne_gateway_store_fail_open_total{store=\"rate_limit\"} 0")
            || !metrics.contains("chataigne_gateway_store_fail_open_total{store=\"rate_limit\"}"),
        "nothing served without its limits: {metrics}"
    );
    harness.shutdown().await;
}
