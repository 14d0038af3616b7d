//! The brute-force limits of the authorization server: failed sign-ins per
//! account and sign-in posts per client address (the form again, with 429 and
//! `Retry-After`), the client address behind a trusted proxy, and `/token`,
//! `/revoke` and `/register` per client address and refused token requests
//! per client address × `client_id` (429, `Retry-After`, an OAuth JSON
//! error); an anonymous flood against a public client spends only its own
//! budget, and with Redis the budgets are one for every replica.

use chataigne_auth::{Config, Limit};
use chataigne_common::demo::{DEMO_CLIENT_ID, DEMO_PASSWORD};
use reqwest::header::HeaderMap;

use crate::oauth_support::*;
use crate::support::{Backend, Harness};

const MANAGER_EMAIL: &str = "camille.martin@bistro.example";
const STAFF_EMAIL: &str = "louis.bernard@bistro.example";

/// A harness on SQLite (the limits are in memory) with `adjust` applied.
async fn harness(adjust: impl FnOnce(&mut Config)) -> Harness {
    Harness::start_with(Backend::Sqlite, adjust)
        .await
        .expect("SQLite is always available")
}

/// The sign-in page of a fresh authorization request.
async fn sign_in_page(b: &mut Browser) -> String {
    let (_, challenge) = pkce();
    let (status, _, html) = b
        .get(&authorize_query(&challenge, "orders.read", "s"))
        .await;
    assert_eq!(status, 200, "{html}");
    html
}

/// Posts the sign-in form of `page` with `email` and `password`, adding
/// `extra` headers.
async fn sign_in(
    b: &mut Browser,
    page: &str,
    email: &str,
    password: &str,
    forwarded_for: Option<&str>,
) -> (u16, HeaderMap, String) {
    let form = form_of(page, &[("email", email), ("password", password)]);
    let mut request = b
        .http
        .post(format!("{}/authorize/login", b.base))
        .header(
            "cookie",
            b.cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; "),
        )
        .form(&form);
    if let Some(forwarded_for) = forwarded_for {
        request = request.header("x-forwarded-for", forwarded_for);
    }
    let response = request.send().await.unwrap();
    b.keep(&response);
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

fn retry_after(headers: &HeaderMap) -> u64 {
    headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .expect("Retry-After in seconds")
}

/// A refused sign-in: 429, `Retry-After` within `max_secs`, the form again
/// with the message.
fn assert_sign_in_limited(response: &(u16, HeaderMap, String), max_secs: u64) {
    let (status, headers, html) = response;
    assert_eq!(*status, 429, "{html}");
    let secs = retry_after(headers);
    assert!((1..=max_secs).contains(&secs), "Retry-After {secs}");
    assert!(html.contains("Too many sign-in attempts"), "{html}");
    assert!(html.contains("id=\"sign-in\""), "the form is shown again");
    assert!(
        !html.contains("not correct"),
        "a refused attempt says nothing about the password"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_new_to_an_account_waits_once_its_budget_is_spent_and_others_do_not() {
    let h =
        harness(|c| c.oauth.rate_limits.sign_in_attempts_per_account = Limit::new(3, 900)).await;
    let mut b = Browser::new(&h);
    let page = sign_in_page(&mut b).await;
    // Three failures, the email written three ways (one account).
    for email in [
        MANAGER_EMAIL,
        "Camille.Martin@Bistro.example",
        " camille.martin@bistro.example ",
    ] {
        let (status, _, html) = sign_in(&mut b, &page, email, "wrong password", None).await;
        assert_eq!(status, 401, "{html}");
        assert!(html.contains("not correct"));
    }
    // From a browser that has never signed in to it, the right password
    // now waits, and the page says how long.
    let refused = sign_in(&mut b, &page, MANAGER_EMAIL, DEMO_PASSWORD, None).await;
    assert_sign_in_limited(&refused, 300);
    assert!(refused.2.contains("Wait 5 minutes"), "{}", refused.2);
    assert!(
        refused.1.get("set-cookie").is_none(),
        "no session for a refused attempt"
    );
    // Another account from the same browser still signs in.
    let (status, _, html) = sign_in(&mut b, &page, STAFF_EMAIL, DEMO_PASSWORD, None).await;
    assert_eq!(status, 303, "{html}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_posts_are_limited_per_client_address() {
    let h = harness(|c| c.oauth.rate_limits.sign_in_per_address = Limit::new(2, 600)).await;
    let mut b = Browser::new(&h);
    let page = sign_in_page(&mut b).await;
    for email in [MANAGER_EMAIL, STAFF_EMAIL] {
        let (status, _, _) = sign_in(&mut b, &page, email, "wrong password", None).await;
        assert_eq!(status, 401);
    }
    let refused = sign_in(&mut b, &page, "someone@else.example", DEMO_PASSWORD, None).await;
    assert_sign_in_limited(&refused, 300);
    // Forwarding headers from an untrusted peer are ignored.
    let spoofed = sign_in(
        &mut b,
        &page,
        STAFF_EMAIL,
        DEMO_PASSWORD,
        Some("198.51.100.1"),
    )
    .await;
    assert_eq!(spoofed.0, 429);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_the_forwarded_client_is_the_key() {
    let h = harness(|c| {
        c.oauth.rate_limits.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
        c.oauth.rate_limits.sign_in_per_address = Limit::new(1, 600);
    })
    .await;
    let mut b = Browser::new(&h);
    let page = sign_in_page(&mut b).await;
    let first = sign_in(&mut b, &page, MANAGER_EMAIL, "wrong", Some("198.51.100.1")).await;
    assert_eq!(first.0, 401);
    // Another client behind the same proxy (the right-most untrusted hop).
    let other = sign_in(
        &mut b,
        &page,
        MANAGER_EMAIL,
        "wrong",
        Some("198.51.100.1, 198.51.100.2, 127.0.0.5"),
    )
    .await;
    assert_eq!(other.0, 401);
    let again = sign_in(
        &mut b,
        &page,
        MANAGER_EMAIL,
        DEMO_PASSWORD,
        Some("198.51.100.1"),
    )
    .await;
    assert_sign_in_limited(&again, 600);
}

/// A harness behind a trusted proxy (loopback), so that each request may
/// name its client address in `X-Forwarded-For`, with default limits.
async fn behind_proxy() -> Harness {
    harness(|c| c.oauth.rate_limits.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()]).await
}

/// The victim's own browser: signed in once (from its home address) and so
/// holding the account's device cookie.
async fn victims_browser(h: &Harness) -> (Browser, String) {
    let mut victim = Browser::new(h);
    let page = sign_in_page(&mut victim).await;
    let first = sign_in(&mut victim, &page, MANAGER_EMAIL, DEMO_PASSWORD, Some(HOME)).await;
    assert_eq!(first.0, 303, "{}", first.2);
    let device = first
        .1
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|v| v.starts_with(&format!("{DEVICE_COOKIE}=")))
        .expect("a device cookie");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Secure"] {
        assert!(device.contains(attribute), "{device}");
    }
    assert!(
        !device.contains("camille"),
        "the account is not named: {device}"
    );
    (victim, page)
}

const HOME: &str = "192.0.2.10";

/// The device cookie's name on the harness's https issuer.
const DEVICE_COOKIE: &str = "__Host-chataigne_as_device";

async fn victim_signs_in(victim: &mut Browser, page: &str, when: &str) {
    let (status, _, html) = sign_in(victim, page, MANAGER_EMAIL, DEMO_PASSWORD, Some(HOME)).await;
    assert_eq!(status, 303, "the victim is kept out {when}: {html}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_wrong_passwords_from_ten_addresses_do_not_keep_the_victim_out() {
    let h = behind_proxy().await;
    let (mut victim, victim_page) = victims_browser(&h).await;
    // The burst: ten wrong passwords from ten addresses at once.
    let mut attacker = Browser::new(&h);
    let attack_page = sign_in_page(&mut attacker).await;
    let burst = (1..=10).map(|n| {
        let mut browser = Browser {
            http: attacker.http.clone(),
            base: attacker.base.clone(),
            cookies: attacker.cookies.clone(),
        };
        let page = attack_page.clone();
        async move {
            let address = format!("198.51.100.{n}");
            sign_in(&mut browser, &page, MANAGER_EMAIL, "guess", Some(&address)).await
        }
    });
    let answers = futures::future::join_all(burst).await;
    for (status, _, html) in &answers {
        assert!([401, 429].contains(status), "{status}: {html}");
    }
    victim_signs_in(&mut victim, &victim_page, "after the burst").await;
    // The account's budget is spent (the victim's first sign-in and the
    // burst): a browser that never signed in to it waits, told how long,
    // while the victim's keeps signing in, every time.
    let mut stranger = Browser::new(&h);
    let stranger_page = sign_in_page(&mut stranger).await;
    for n in 11..=15 {
        let address = format!("198.51.100.{n}");
        let refused = sign_in(
            &mut attacker,
            &attack_page,
            MANAGER_EMAIL,
            "guess",
            Some(&address),
        )
        .await;
        assert_sign_in_limited(&refused, 3600);
        victim_signs_in(&mut victim, &victim_page, &format!("after guess {n}")).await;
    }
    let waiting = sign_in(
        &mut stranger,
        &stranger_page,
        MANAGER_EMAIL,
        DEMO_PASSWORD,
        Some("203.0.113.5"),
    )
    .await;
    assert_sign_in_limited(&waiting, 3600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_cookie_is_for_its_account_and_a_forged_one_is_not_recognised() {
    let h =
        harness(|c| c.oauth.rate_limits.sign_in_attempts_per_account = Limit::new(1, 900)).await;
    let mut victim = Browser::new(&h);
    let page = sign_in_page(&mut victim).await;
    let (status, _, _) = sign_in(&mut victim, &page, MANAGER_EMAIL, DEMO_PASSWORD, None).await;
    assert_eq!(status, 303);
    // Both accounts' budgets spent by browsers without a device cookie.
    for email in [MANAGER_EMAIL, STAFF_EMAIL, STAFF_EMAIL] {
        let mut other = Browser::new(&h);
        let other_page = sign_in_page(&mut other).await;
        sign_in(&mut other, &other_page, email, "guess", None).await;
    }
    // The victim's browser signs in to its account, not to another one.
    let (status, _, _) = sign_in(&mut victim, &page, MANAGER_EMAIL, DEMO_PASSWORD, None).await;
    assert_eq!(status, 303);
    let other = sign_in(&mut victim, &page, STAFF_EMAIL, DEMO_PASSWORD, None).await;
    assert_sign_in_limited(&other, 900);
    // A forged or altered device cookie counts as none.
    let mut forger = Browser::new(&h);
    let forger_page = sign_in_page(&mut forger).await;
    let genuine = victim
        .cookies
        .iter()
        .find(|(k, _)| k == DEVICE_COOKIE)
        .map(|(_, v)| v.clone())
        .expect("the victim's device cookie");
    let altered = format!("{}A", genuine);
    for value in [altered.as_str(), "v1.AAAA.AAAA.9999999999.AAAA"] {
        forger.cookies.retain(|(k, _)| k != DEVICE_COOKIE);
        forger
            .cookies
            .push((DEVICE_COOKIE.to_owned(), value.to_owned()));
        let refused = sign_in(
            &mut forger,
            &forger_page,
            MANAGER_EMAIL,
            DEMO_PASSWORD,
            None,
        )
        .await;
        assert_sign_in_limited(&refused, 900);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_and_unknown_emails_get_the_same_answers_and_timing() {
    let h =
        harness(|c| c.oauth.rate_limits.sign_in_attempts_per_account = Limit::new(3, 900)).await;
    let mut b = Browser::new(&h);
    let page = sign_in_page(&mut b).await;
    let mut timings = Vec::new();
    let mut answers = Vec::new();
    for email in [MANAGER_EMAIL, "nobody.here@bistro.example"] {
        let mut took = Vec::new();
        let mut seen = Vec::new();
        for _ in 0..4 {
            let started = std::time::Instant::now();
            let (status, _, html) = sign_in(&mut b, &page, email, "wrong password", None).await;
            took.push(started.elapsed());
            seen.push((
                status,
                html.contains("not correct"),
                html.contains("Too many"),
            ));
        }
        took.sort();
        timings.push(took[1]);
        answers.push(seen);
    }
    assert_eq!(
        answers[0], answers[1],
        "the same answers, refusals included"
    );
    assert_eq!(answers[0][0], (401, true, false));
    assert_eq!(answers[0][3].0, 429);
    let (known, unknown) = (timings[0].as_secs_f64(), timings[1].as_secs_f64());
    assert!(
        unknown > known / 3.0 && unknown < known * 3.0,
        "a password is checked either way: {known} s vs {unknown} s"
    );
}

/// POSTs `form` to `path`; returns status, headers and JSON body.
async fn post(
    h: &Harness,
    path: &str,
    form: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> (u16, HeaderMap, serde_json::Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{}{path}", h.http_url))
        .form(form);
    if let Some((id, secret)) = basic {
        request = request.basic_auth(id, Some(secret));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.json().await.unwrap_or_default())
}

/// A refusal of the machine endpoints: 429, `Retry-After`, OAuth JSON, no-store.
fn assert_endpoint_limited(response: &(u16, HeaderMap, serde_json::Value), max_secs: u64) {
    let (status, headers, body) = response;
    assert_eq!(*status, 429, "{body}");
    let secs = retry_after(headers);
    assert!((1..=max_secs).contains(&secs), "Retry-After {secs}");
    assert_eq!(body["error"], "temporarily_unavailable", "{body}");
    assert!(body["error_description"].as_str().is_some());
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["cache-control"], "no-store");
}

const BAD_CODE: &[(&str, &str)] = &[
    ("grant_type", "authorization_code"),
    ("code", "not-a-code"),
    ("redirect_uri", REDIRECT),
    (
        "code_verifier",
        "0123456789012345678901234567890123456789abc",
    ),
    ("client_id", DEMO_CLIENT_ID),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_and_revocation_requests_are_limited_per_client_address() {
    let h = harness(|c| c.oauth.rate_limits.token_per_address = Limit::new(3, 60)).await;
    let (status, _, _) = post(&h, "/token", &[("grant_type", "nonsense")], None).await;
    assert_eq!(status, 400);
    let (status, _, _) = post(
        &h,
        "/revoke",
        &[("token", "x"), ("client_id", DEMO_CLIENT_ID)],
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _, _) = post(&h, "/token", &[("grant_type", "nonsense")], None).await;
    assert_eq!(status, 400);
    // The fourth request of the minute, whatever the endpoint or client.
    let refused = post(
        &h,
        "/token",
        &[("grant_type", "client_credentials")],
        Some(("other", "s")),
    )
    .await;
    assert_endpoint_limited(&refused, 20);
    let refused = post(
        &h,
        "/revoke",
        &[("token", "x"), ("client_id", DEMO_CLIENT_ID)],
        None,
    )
    .await;
    assert_endpoint_limited(&refused, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_token_requests_are_limited_per_address_and_client_id() {
    let h =
        harness(|c| c.oauth.rate_limits.token_failures_per_address_and_client = Limit::new(2, 300))
            .await;
    let registered = h
        .app
        .add_client(chataigne_auth::NewClientRequest {
            client_id: "reporting".into(),
            name: "Reporting".into(),
            kind: chataigne_auth::ClientKind::Service,
            redirect_uris: Vec::new(),
            allowed_scopes: vec!["orders.read".into()],
        })
        .await
        .unwrap();
    let secret = registered.secret.unwrap();
    let grant = [("grant_type", "client_credentials")];
    // Two wrong secrets spend the client's quota…
    for _ in 0..2 {
        let (status, _, body) = post(&h, "/token", &grant, Some(("reporting", "guess"))).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (401, Some("invalid_client"))
        );
    }
    // …so even the right secret is refused for now, through Basic or the form.
    let refused = post(&h, "/token", &grant, Some(("reporting", &secret))).await;
    assert_endpoint_limited(&refused, 300);
    let form = [
        ("grant_type", "client_credentials"),
        ("client_id", "reporting"),
        ("client_secret", secret.as_str()),
    ];
    assert_endpoint_limited(&post(&h, "/token", &form, None).await, 300);
    let revoke = [("token", "x")];
    assert_endpoint_limited(
        &post(&h, "/revoke", &revoke, Some(("reporting", &secret))).await,
        300,
    );
    // Other clients are not affected; refused grants count for them too.
    for _ in 0..2 {
        let (status, _, body) = post(&h, "/token", BAD_CODE, None).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some("invalid_grant"))
        );
    }
    assert_endpoint_limited(&post(&h, "/token", BAD_CODE, None).await, 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn successful_token_requests_do_not_count_against_the_client() {
    let h =
        harness(|c| c.oauth.rate_limits.token_failures_per_address_and_client = Limit::new(2, 300))
            .await;
    for _ in 0..4 {
        let body = full_flow(&h, "orders.read").await;
        assert!(body["access_token"].is_string());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_are_limited_per_client_address() {
    let h = harness(|c| {
        c.oauth.dynamic_registration = true;
        c.oauth.rate_limits.register_per_address = Limit::new(1, 3600);
    })
    .await;
    let register = || async {
        let response = reqwest::Client::new()
            .post(format!("{}/register", h.http_url))
            .json(&serde_json::json!({"redirect_uris": ["https://app.example/cb"]}))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        (status, headers, body)
    };
    let first = register().await;
    assert_eq!(first.0, 201, "{}", first.2);
    assert_endpoint_limited(&register().await, 3600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_limits_never_refuse() {
    let h = harness(|c| {
        c.oauth.rate_limits.enabled = false;
        c.oauth.rate_limits.token_per_address = Limit::new(1, 3600);
    })
    .await;
    for _ in 0..3 {
        let (status, _, _) = post(&h, "/token", &[("grant_type", "nonsense")], None).await;
        assert_eq!(status, 400);
    }
}

/// POSTs `form` to `path` as a client at `forwarded_for` (the harness trusts
/// loopback proxies); returns the status and JSON body.
async fn post_from(
    h: &Harness,
    path: &str,
    form: &[(&str, &str)],
    forwarded_for: &str,
) -> (u16, HeaderMap, serde_json::Value) {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", h.http_url))
        .header("x-forwarded-for", forwarded_for)
        .form(form)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.json().await.unwrap_or_default())
}

const ATTACKER: &str = "198.51.100.66";

/// The anonymous flood of the report: credential-less refresh requests
/// naming the public demo client.
const FLOOD: &[(&str, &str)] = &[
    ("grant_type", "refresh_token"),
    ("client_id", DEMO_CLIENT_ID),
    ("refresh_token", "junk"),
];

/// Floods from [`ATTACKER`] until refused; returns how many were answered.
async fn flood(h: &Harness, max: usize) -> usize {
    for sent in 0..max {
        let response = post_from(h, "/token", FLOOD, ATTACKER).await;
        if response.0 == 429 {
            assert_endpoint_limited(&response, 300);
            return sent;
        }
        assert_eq!(response.0, 400, "{}", response.2);
    }
    panic!("the flood was never refused");
}

/// Another user's code exchange and refresh through the flooded public client.
async fn another_user_is_served(h: &Harness) {
    let body = full_flow(h, "orders.read").await;
    let refresh = body["refresh_token"].as_str().unwrap();
    let (status, refreshed) = token(
        h,
        &[
            ("grant_type", "refresh_token"),
            ("client_id", DEMO_CLIENT_ID),
            ("refresh_token", refresh),
        ],
    )
    .await;
    assert_eq!(status, 200, "{refreshed}");
    let (status, _, body) = post_from(h, "/token", FLOOD, "192.0.2.7").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "another address naming the same client is not limited"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anonymous_flood_against_a_public_client_leaves_other_users_alone() {
    let h = harness(|c| c.oauth.rate_limits.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()])
        .await;
    // The default budget: 30 refusals per 5 minutes, then refused.
    assert_eq!(flood(&h, 40).await, 30);
    another_user_is_served(&h).await;
    // The flooding address stays refused, whatever it presents.
    let refused = post_from(&h, "/token", FLOOD, ATTACKER).await;
    assert_endpoint_limited(&refused, 300);
}

/// A configuration sharing the limit counters in the test Redis under `prefix`.
fn on_redis(config: &mut Config, prefix: &str) {
    let limits = &mut config.oauth.rate_limits;
    limits.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
    limits.redis.url = Some(secrecy::SecretString::from(
        chataigne_common::testing::redis_url(),
    ));
    limits.redis.key_prefix = prefix.to_owned();
    limits.redis.key_secret = Some(secrecy::SecretString::from(format!(
        "{prefix}-limits-key-secret-0123456789"
    )));
}

/// Fails (never skips) when the test Redis is unreachable.
async fn require_redis() {
    let client = redis::Client::open(chataigne_common::testing::redis_url()).unwrap();
    let connected = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        client.get_multiplexed_async_connection(),
    )
    .await;
    assert!(
        matches!(connected, Ok(Ok(_))),
        "Redis at {} is required by the shared-limit tests",
        chataigne_common::testing::redis_url()
    );
}

/// Two replicas on `url`: the 31st refused token request is refused on
/// either, whichever served the first 30.
async fn one_budget_for_two_replicas(url: &str, cluster: bool, prefix: &str) {
    let on = |c: &mut Config| {
        on_redis(c, prefix);
        c.oauth.rate_limits.redis.url = Some(secrecy::SecretString::from(url.to_owned()));
        c.oauth.rate_limits.redis.cluster = cluster;
    };
    let a = harness(on).await;
    let b = harness(on).await;
    for h in [&a, &b, &a] {
        for _ in 0..10 {
            let (status, _, body) = post_from(h, "/token", FLOOD, ATTACKER).await;
            assert_eq!(status, 400, "{body}");
        }
    }
    for h in [&b, &a] {
        assert_endpoint_limited(&post_from(h, "/token", FLOOD, ATTACKER).await, 300);
    }
    another_user_is_served(&a).await;
    another_user_is_served(&b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_redis_cluster_one_budget_holds_for_every_replica() {
    let Some(cluster) = chataigne_common::testing::RedisCluster::start().await else {
        return;
    };
    let prefix = format!("t{}", uuid::Uuid::new_v4().simple());
    one_budget_for_two_replicas(&cluster.url(), true, &prefix).await;
    // The counters spread over the masters' slots, by their own keys.
    let mut keys = 0;
    for port in cluster.ports() {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        let found: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{prefix}:as:*"))
            .query_async(&mut connection)
            .await
            .unwrap();
        keys += found.len();
    }
    assert!(keys > 0, "the counters live in the cluster");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_redis_of_the_other_mode_refuses_to_start_naming_the_setting() {
    require_redis().await;
    let on = |url: String, cluster: bool| {
        move |c: &mut Config| {
            on_redis(c, "mode");
            c.oauth.rate_limits.redis.url = Some(secrecy::SecretString::from(url));
            c.oauth.rate_limits.redis.cluster = cluster;
        }
    };
    let error = Harness::refusal(on(chataigne_common::testing::redis_url(), true)).await;
    assert!(
        error.contains("set oauth.rate_limits.redis.cluster = false"),
        "{error}"
    );
    let Some(cluster) = chataigne_common::testing::RedisCluster::start().await else {
        return;
    };
    let error = Harness::refusal(on(cluster.url(), false)).await;
    assert!(
        error.contains("set oauth.rate_limits.redis.cluster = true"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_one_budget_holds_for_every_replica() {
    require_redis().await;
    let prefix = format!("t{}", uuid::Uuid::new_v4().simple());
    one_budget_for_two_replicas(&chataigne_common::testing::redis_url(), false, &prefix).await;
    let mut keys: Vec<String> = {
        let client = redis::Client::open(chataigne_common::testing::redis_url()).unwrap();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        redis::cmd("KEYS")
            .arg(format!("{prefix}:as:*"))
            .query_async(&mut connection)
            .await
            .unwrap()
    };
    keys.sort();
    assert!(!keys.is_empty());
    for key in &keys {
        assert!(
            !key.contains(ATTACKER) && !key.contains(DEMO_CLIENT_ID),
            "hashed key names: {key}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_redis_falls_back_to_counting_in_process() {
    let h = harness(|c| {
        on_redis(c, "unreachable");
        c.oauth.rate_limits.redis.url = Some(secrecy::SecretString::from(
            "redis://127.0.0.1:1".to_owned(),
        ));
        c.oauth.rate_limits.token_failures_per_address_and_client = Limit::new(3, 300);
    })
    .await;
    let started = std::time::Instant::now();
    assert_eq!(flood(&h, 10).await, 3);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    another_user_is_served(&h).await;
}
