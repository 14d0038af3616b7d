//! Rate limits on the real Redis: exact across two gateway replicas sharing
//! it (a rolling 60-second window), with a retry hint telling when the next
//! call passes, and the pre-authentication per-address limit — on a
//! standalone server and on a Redis Cluster of three masters alike.

use chataigne_common::testing::RedisCluster;
use chataigne_tests::demo::USER_MANAGER;
use chataigne_tests::envelope;
use chataigne_tests::stores::{
    call_at, error_code, extra_gateway, prefix, redis_url, sandbox_on_redis,
};
use secrecy::SecretString;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_exact_across_two_gateways_sharing_redis() {
    tool_limits_across_two_gateways(&redis_url(), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_exact_across_two_gateways_sharing_a_redis_cluster() {
    let Some(cluster) = RedisCluster::start().await else {
        return;
    };
    tool_limits_across_two_gateways(&cluster.url(), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_address_limit_is_exact_across_two_gateways_sharing_a_redis_cluster() {
    let Some(cluster) = RedisCluster::start().await else {
        return;
    };
    let prefix = prefix();
    let url = cluster.url();
    let Some((sandbox, _db)) = sandbox_on_redis(&prefix, |config| {
        config.gateway.redis.url = Some(SecretString::from(url.clone()));
        config.gateway.redis.cluster = true;
        config.gateway.rate_limits.per_ip_per_minute = 6;
    })
    .await
    else {
        return;
    };
    let (second, stop) = extra_gateway(&sandbox.stack, |config| {
        config.redis.url = Some(SecretString::from(url.clone()));
        config.redis.cluster = true;
        config.redis.key_prefix = prefix.clone();
        config.rate_limits.per_ip_per_minute = 6;
    })
    .await;
    let mut statuses = Vec::new();
    for i in 0..10 {
        let url = if i % 2 == 0 {
            sandbox.mcp_url.as_str()
        } else {
            second.as_str()
        };
        let (status, body) = call_at(url, "", "chataigne_organizations_list", json!({})).await;
        if status == 200 {
            assert_eq!(body["error"]["data"]["code"], "MCP_RATE_LIMITED", "{body}");
        }
        statuses.push(status);
    }
    assert_eq!(statuses, [401, 401, 401, 401, 401, 401, 200, 200, 200, 200]);
    stop.cancel();
    sandbox.shutdown().await;
}

/// Two gateways on the Redis at `url`: 20 reads of one tool, alternating,
/// pass exactly the quota of 10.
async fn tool_limits_across_two_gateways(url: &str, cluster: bool) {
    let prefix = prefix();
    let Some((sandbox, _db)) = sandbox_on_redis(&prefix, |config| {
        config.gateway.redis.url = Some(SecretString::from(url.to_owned()));
        config.gateway.redis.cluster = cluster;
        config.gateway.rate_limits.reads_per_minute = 10;
    })
    .await
    else {
        return;
    };
    let gateway_config = |config: &mut chataigne_gateway::Config| {
        config.redis.url = Some(SecretString::from(url.to_owned()));
        config.redis.cluster = cluster;
        config.redis.key_prefix = prefix.clone();
        config.rate_limits.reads_per_minute = 10;
    };
    let (second, stop) = extra_gateway(&sandbox.stack, gateway_config).await;
    let token = sandbox.token(USER_MANAGER).await;
    let mut passed = 0;
    let mut limited = 0;
    for i in 0..20 {
        let url = if i % 2 == 0 {
            sandbox.mcp_url.as_str()
        } else {
            second.as_str()
        };
        let (status, body) = call_at(url, &token, "chataigne_organizations_list", json!({})).await;
        assert_eq!(status, 200, "{body}");
        match error_code(&body["result"]).as_deref() {
            None => passed += 1,
            Some("MCP_RATE_LIMITED") => {
                let error = &envelope(&body["result"])["data"]["error"];
                assert_eq!(error["category"], "rate_limit");
                // The next call passes when the first counted call leaves
                // the rolling minute, not one emission interval later.
                assert!(
                    error["retry_after_ms"]
                        .as_u64()
                        .is_some_and(|ms| ms > 30_000 && ms <= 60_000),
                    "{error}"
                );
                limited += 1;
            }
            Some(other) => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!((passed, limited), (10, 10));
    // Another tool has its own budget.
    let (_, body) = call_at(
        &second,
        &token,
        "chataigne_locations_list",
        json!({"organization_id": chataigne_tests::demo::ORG_BISTRO}),
    )
    .await;
    assert_eq!(error_code(&body["result"]), None, "{body}");
    stop.cancel();
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_address_limit_refuses_before_authentication_answering_the_request_id() {
    let prefix = prefix();
    let Some((sandbox, _db)) = sandbox_on_redis(&prefix, |config| {
        config.gateway.rate_limits.per_ip_per_minute = 5;
    })
    .await
    else {
        return;
    };
    let mut statuses = Vec::new();
    for _ in 0..8 {
        // No token at all: refused for the address before the token is read.
        let (status, body) = call_at(
            &sandbox.mcp_url,
            "",
            "chataigne_organizations_list",
            json!({}),
        )
        .await;
        if status == 200 {
            // A JSON-RPC error to the call's own id, not a bare HTTP 429:
            // the client reads it as the call's answer.
            assert_eq!(body["id"], 1, "{body}");
            assert_eq!(body["error"]["data"]["code"], "MCP_RATE_LIMITED", "{body}");
            assert!(body["error"]["data"]["retry_after_ms"].as_u64().unwrap() > 0);
            assert!(
                body["error"]["data"]["request_id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("req_"))
            );
        }
        statuses.push(status);
    }
    assert_eq!(statuses, [401, 401, 401, 401, 401, 200, 200, 200]);
    sandbox.shutdown().await;
}
