//! The sign-in and consent page driven in headless Chromium over the Chrome
//! DevTools protocol: the browser opens the authorization URL, signs in with
//! the demo password, sees the requested scopes with their labels, approves,
//! and is handed back to the client's redirect URI with a code that the token
//! endpoint exchanges (PKCE verified). A second run, still signed in, denies.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aws_lc_rs::digest::{SHA256, digest};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chataigne_tests::{Backend, Sandbox, TempDir, demo, in_ci};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

/// Headless Chromium with a fresh profile, killed on drop.
struct Browser {
    child: Child,
    ws_url: String,
    _profile: TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn chromium_available() -> bool {
    Command::new("chromium")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Browser {
    fn launch() -> Browser {
        let profile = TempDir::new("chromium");
        let mut child = Command::new("chromium")
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1",
            ])
            .arg(format!("--user-data-dir={}", profile.0.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts");
        let stderr = child.stderr.take().expect("stderr");
        let mut ws_url = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                ws_url = url.trim().to_owned();
                break;
            }
        }
        assert!(
            ws_url.starts_with("ws://"),
            "no DevTools endpoint from chromium"
        );
        Browser {
            child,
            ws_url,
            _profile: profile,
        }
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A minimal DevTools client: commands on one page session, answers by id.
struct Cdp {
    socket: Socket,
    next_id: u64,
    session: Option<String>,
}

impl Cdp {
    async fn connect(ws_url: &str) -> Cdp {
        let (socket, _) = tokio_tungstenite::connect_async(ws_url)
            .await
            .expect("devtools");
        Cdp {
            socket,
            next_id: 0,
            session: None,
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = &self.session {
            message["sessionId"] = json!(session);
        }
        self.socket
            .send(Message::Text(message.to_string().into()))
            .await
            .expect("send");
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(20), self.socket.next())
                .await
                .expect("devtools answers")
                .expect("open")
                .expect("frame");
            let Message::Text(text) = frame else { continue };
            let value: Value = serde_json::from_str(&text).expect("json");
            if value["id"] == id {
                assert!(value.get("error").is_none(), "{method}: {value}");
                return value["result"].clone();
            }
        }
    }

    /// Opens a page at `url` and attaches to it.
    async fn open(&mut self, url: &str) {
        let target = self.call("Target.createTarget", json!({"url": url})).await;
        let attached = self
            .call(
                "Target.attachToTarget",
                json!({"targetId": target["targetId"], "flatten": true}),
            )
            .await;
        self.session = attached["sessionId"].as_str().map(str::to_owned);
    }

    async fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true}),
            )
            .await;
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is true in the page.
    async fn wait_for(&mut self, expression: &str) {
        let page = tokio::sync::Mutex::new(self);
        chataigne_common::testing::eventually(
            &format!("{expression} in the page"),
            Duration::from_secs(10),
            || async { page.lock().await.eval(expression).await == Value::Bool(true) },
        )
        .await;
    }
}

/// A redirect target answering "done" and reporting the first request line.
async fn callback_server() -> (u16, tokio::sync::oneshot::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut tx = Some(tx);
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buffer = vec![0u8; 8192];
            let n = stream.read(&mut buffer).await.unwrap_or(0);
            let request = String::from_utf8_lossy(&buffer[..n]).to_string();
            let line = request.lines().next().unwrap_or_default().to_owned();
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 4\r\nconnection: close\r\n\r\ndone")
                .await;
            if line.contains("/callback")
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(line);
            }
        }
    });
    (port, rx)
}

fn authorize_url(sandbox: &Sandbox, redirect: &str, challenge: &str) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("response_type", "code")
        .append_pair("client_id", demo::DEMO_CLIENT_ID)
        .append_pair("redirect_uri", redirect)
        .append_pair("scope", "orders.read location.read")
        .append_pair("state", "browser-state")
        .append_pair("code_challenge", challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("resource", &sandbox.mcp_url);
    format!("{}/authorize?{}", sandbox.auth_http_url, query.finish())
}

async fn drive(sandbox: &Sandbox, browser: &Browser, approve: bool) -> String {
    let (port, called_back) = callback_server().await;
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let verifier = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let challenge = URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.as_bytes()));
    let mut cdp = Cdp::connect(&browser.ws_url).await;
    cdp.open(&authorize_url(sandbox, &redirect, &challenge))
        .await;
    if !approve {
        // Still signed in from the first run (session cookie): consent directly.
        cdp.wait_for("!!document.getElementById('approve')").await;
    } else {
        cdp.wait_for("!!document.getElementById('sign-in')").await;
        assert_eq!(cdp.eval("document.scripts.length").await, json!(0));
        cdp.eval(&format!(
            "document.getElementById('email').value = 'camille.martin@bistro.example';\
         document.getElementById('password').value = '{}';\
         document.getElementById('sign-in-button').click(); true",
            demo::DEMO_PASSWORD
        ))
        .await;
    }
    cdp.wait_for("!!document.getElementById('approve')").await;
    let scopes = cdp
        .eval("document.getElementById('scopes-read').innerText")
        .await;
    let scopes = scopes.as_str().unwrap_or_default().to_owned();
    assert!(
        scopes.contains("See orders") && scopes.contains("See your locations"),
        "{scopes}"
    );
    let button = if approve { "approve" } else { "deny" };
    cdp.eval(&format!(
        "document.getElementById('{button}').click(); true"
    ))
    .await;
    let line = tokio::time::timeout(Duration::from_secs(20), called_back)
        .await
        .expect("the browser comes back to the client")
        .expect("callback line");
    let target = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let back = url::Url::parse(&format!("http://127.0.0.1{target}")).expect("url");
    let param = |name: &str| {
        back.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    assert_eq!(param("state").as_deref(), Some("browser-state"));
    if !approve {
        assert_eq!(param("error").as_deref(), Some("access_denied"));
        return String::new();
    }
    let code = param("code").expect("code");
    let response: Value = reqwest::Client::new()
        .post(format!("{}/token", sandbox.auth_http_url))
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", redirect.as_str()),
            ("code_verifier", verifier.as_str()),
            ("client_id", demo::DEMO_CLIENT_ID),
        ])
        .send()
        .await
        .expect("token endpoint")
        .json()
        .await
        .expect("json");
    response["access_token"]
        .as_str()
        .expect("access token")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consent_page_works_in_a_real_browser() {
    if !chromium_available() {
        assert!(
            !in_ci(),
            "chromium is required in CI (scripts/test.sh installs it)"
        );
        eprintln!("skipping: chromium is not installed");
        return;
    }
    let sandbox = Sandbox::start(Backend::Sqlite)
        .await
        .expect("sqlite sandbox");
    let browser = Browser::launch();
    let token = drive(&sandbox, &browser, true).await;
    let result = sandbox
        .call_tool(&token, "chataigne_orders_list", json!({"limit": 1}))
        .await;
    assert_ne!(result["isError"], true, "{result}");
    drive(&sandbox, &browser, false).await;
    drop(browser);
    sandbox.shutdown().await;
}
