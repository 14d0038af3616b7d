//! `smoke-test`: signs in through the real OAuth flow of a running
//! deployment and calls one tool. A user signs in with the authorization code
//! flow and PKCE, through the sign-in and consent pages over HTTP as a browser
//! would, then calls the tool on the MCP endpoint (`initialize`, then
//! `tools/call`); a service account gets a `client_credentials` token and calls
//! the tool through the tool-service's `ToolCatalog.CallTool`, the only place
//! its tokens are for.

use anyhow::{Context, bail};
use aws_lc_rs::digest::{SHA256, digest};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chataigne_proto::tools::v1::CallToolRequest;
use chataigne_proto::tools::v1::tool_catalog_client::ToolCatalogClient;
use clap::Args;
use serde_json::{Value, json};

use crate::admin_smoke_page::{Browser, continue_link, form_of};

/// MCP protocol version offered in `initialize`.
const PROTOCOL_VERSION: &str = "2025-11-25";

/// What `smoke-test` signs in as and calls.
#[derive(Debug, Args)]
pub struct SmokeTestArgs {
    /// The OAuth issuer (the auth-service's public HTTP URL).
    #[arg(long)]
    pub issuer: String,
    /// The client to sign in through: a registered client with `--redirect-uri`
    /// for a user, a service account for `client_credentials`.
    #[arg(long)]
    pub client_id: String,
    /// A user's e-mail address: signs the user in (authorization code + PKCE).
    /// Without it, the client signs in as a service account.
    #[arg(long)]
    pub email: Option<String>,
    /// A redirect URI registered for the client (users only; nothing needs to
    /// listen there: the code is read from the consent page's answer).
    #[arg(long)]
    pub redirect_uri: Option<String>,
    /// Read the user's password from the first line of stdin.
    #[arg(long)]
    pub password_stdin: bool,
    /// Read the client secret from the next line of stdin (service accounts,
    /// confidential clients).
    #[arg(long)]
    pub client_secret_stdin: bool,
    /// The MCP endpoint a user's tool call goes to.
    #[arg(long)]
    pub mcp_url: Option<String>,
    /// The tool-service's gRPC URL a service account's tool call goes to.
    #[arg(long)]
    pub tool_service_url: Option<String>,
    /// Scopes to request, space-separated (default: the tool's read scope
    /// for the default tool; the client's allowed scopes for a service account).
    #[arg(long)]
    pub scope: Option<String>,
    /// The tool to call.
    #[arg(long, default_value = "chataigne_organizations_list")]
    pub tool: String,
    /// The tool's arguments, a JSON object.
    #[arg(long, default_value = "{}")]
    pub arguments: String,
    /// Print only this JSON pointer of the result's envelope (e.g.
    /// `/data/organization/id`); strings are printed without quotes.
    #[arg(long)]
    pub print: Option<String>,
}

/// Runs the smoke test; the error says which step failed and why.
pub async fn smoke_test(args: SmokeTestArgs) -> anyhow::Result<()> {
    let arguments: Value =
        serde_json::from_str(&args.arguments).context("--arguments must be a JSON object")?;
    anyhow::ensure!(arguments.is_object(), "--arguments must be a JSON object");
    let password = if args.password_stdin {
        Some(crate::admin_cli::read_line_from_stdin().context("reading the password")?)
    } else {
        None
    };
    let secret = if args.client_secret_stdin {
        Some(crate::admin_cli::read_line_from_stdin().context("reading the client secret")?)
    } else {
        None
    };
    let metadata = metadata(&args.issuer).await?;
    let envelope = match &args.email {
        Some(email) => {
            let password = password.context("a user's password: pass --password-stdin")?;
            let mcp_url = args.mcp_url.as_deref().context("--mcp-url is required")?;
            let token = sign_in(
                &args,
                &metadata,
                email,
                &password,
                secret.as_deref(),
                mcp_url,
            )
            .await
            .context("signing the user in")?;
            call_mcp(mcp_url, &token, &args.tool, arguments)
                .await
                .with_context(|| format!("calling {} on {mcp_url}", args.tool))?
        }
        None => {
            let secret =
                secret.context("a service account's secret: pass --client-secret-stdin")?;
            let url = args
                .tool_service_url
                .as_deref()
                .context("--tool-service-url is required for a service account")?;
            let token = client_credentials(&args, &metadata, &secret)
                .await
                .context("getting a client_credentials token")?;
            call_grpc(url, &token, &args.tool, &arguments)
                .await
                .with_context(|| format!("calling {} on {url}", args.tool))?
        }
    };
    match &args.print {
        Some(pointer) => match envelope.pointer(pointer) {
            Some(Value::String(text)) => println!("{text}"),
            Some(value) => println!("{value}"),
            None => bail!("the result has nothing at {pointer}: {envelope}"),
        },
        None => println!("{}", serde_json::to_string_pretty(&envelope)?),
    }
    Ok(())
}

/// The endpoints of the authorization server's metadata (RFC 8414).
struct Metadata {
    authorization_endpoint: String,
    token_endpoint: String,
}

async fn metadata(issuer: &str) -> anyhow::Result<Metadata> {
    let url = format!(
        "{}{}",
        issuer.trim_end_matches('/'),
        crate::http::METADATA_PATH
    );
    let response = reqwest::get(&url)
        .await
        .with_context(|| format!("reading {url}"))?;
    anyhow::ensure!(
        response.status().is_success(),
        "{url} answered {}",
        response.status()
    );
    let document: Value = response.json().await.context("metadata is not JSON")?;
    let field = |name: &str| {
        document[name]
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("metadata at {url} has no {name}"))
    };
    Ok(Metadata {
        authorization_endpoint: field("authorization_endpoint")?,
        token_endpoint: field("token_endpoint")?,
    })
}

/// The default scope of a user's sign-in: the default tool's.
const DEFAULT_SCOPE: &str = "businessOrganization.read";

/// The authorization code flow with PKCE, as a browser and the client would
/// run it; returns the access token for `resource`.
async fn sign_in(
    args: &SmokeTestArgs,
    metadata: &Metadata,
    email: &str,
    password: &str,
    secret: Option<&str>,
    resource: &str,
) -> anyhow::Result<String> {
    let redirect_uri = args
        .redirect_uri
        .as_deref()
        .context("--redirect-uri is required to sign a user in")?;
    let verifier = crate::oauth::secrets::generate()?;
    let challenge = URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.as_bytes()));
    let state = crate::oauth::secrets::generate()?;
    let scope = args.scope.as_deref().unwrap_or(DEFAULT_SCOPE);
    let mut authorize = url::Url::parse(&metadata.authorization_endpoint)?;
    authorize
        .query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &args.client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("scope", scope)
        .append_pair("state", &state)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("resource", resource);

    let mut browser = Browser::new()?;
    let page = browser.get(authorize.clone()).await?;
    anyhow::ensure!(
        page.status == 200 && page.body.contains("id=\"sign-in\""),
        "the authorization endpoint did not show the sign-in page ({}): {}",
        page.status,
        page.summary()
    );
    let (action, mut form) = form_of(&page.body, &authorize, "sign-in")?;
    form.push(("email".to_owned(), email.to_owned()));
    form.push(("password".to_owned(), password.to_owned()));
    let signed_in = browser.post(action, &form).await?;
    let consent_url = match (signed_in.status, signed_in.location.as_deref()) {
        (303, Some(location)) => authorize.join(location)?,
        (429, _) => bail!("sign-in refused by a rate limit; retry later"),
        _ => bail!(
            "sign-in refused: wrong e-mail or password, or the user is not active ({})",
            signed_in.status
        ),
    };
    let consent = browser.get(consent_url.clone()).await?;
    anyhow::ensure!(
        consent.status == 200 && consent.body.contains("id=\"approve\""),
        "no consent page after signing in ({}): {}",
        consent.status,
        consent.summary()
    );
    let (action, mut form) = form_of(&consent.body, &consent_url, "consent")?;
    form.push(("decision".to_owned(), "approve".to_owned()));
    let handed_back = browser.post(action, &form).await?;
    anyhow::ensure!(
        handed_back.status == 200,
        "the consent was not accepted ({}): {}",
        handed_back.status,
        handed_back.summary()
    );
    let back = url::Url::parse(&continue_link(&handed_back.body)?)?;
    let param = |name: &str| {
        back.query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    };
    if let Some(error) = param("error") {
        bail!(
            "the authorization server answered {error}: {}",
            param("error_description").unwrap_or_default()
        );
    }
    anyhow::ensure!(
        param("state").as_deref() == Some(state.as_str()),
        "the state came back changed"
    );
    let code = param("code").context("no code in the redirect")?;
    let mut exchange = vec![
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", redirect_uri),
        ("code_verifier", verifier.as_str()),
        ("client_id", args.client_id.as_str()),
        ("resource", resource),
    ];
    if let Some(secret) = secret {
        exchange.push(("client_secret", secret));
    }
    token(&metadata.token_endpoint, &exchange).await
}

async fn client_credentials(
    args: &SmokeTestArgs,
    metadata: &Metadata,
    secret: &str,
) -> anyhow::Result<String> {
    let mut form = vec![
        ("grant_type", "client_credentials"),
        ("client_id", args.client_id.as_str()),
        ("client_secret", secret),
    ];
    if let Some(scope) = &args.scope {
        form.push(("scope", scope.as_str()));
    }
    token(&metadata.token_endpoint, &form).await
}

/// POSTs a token request; returns the access token or the server's error.
async fn token(endpoint: &str, form: &[(&str, &str)]) -> anyhow::Result<String> {
    let response = reqwest::Client::new()
        .post(endpoint)
        .form(form)
        .send()
        .await
        .with_context(|| format!("reaching {endpoint}"))?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    match body["access_token"].as_str() {
        Some(token) if status.is_success() => Ok(token.to_owned()),
        _ => bail!(
            "the token endpoint answered {status}: {} {}",
            body["error"].as_str().unwrap_or("(no error code)"),
            body["error_description"].as_str().unwrap_or("")
        ),
    }
}

/// `initialize`, `notifications/initialized`, then `tools/call`; returns the
/// result's envelope `{data, meta}`.
async fn call_mcp(
    mcp_url: &str,
    token: &str,
    tool: &str,
    arguments: Value,
) -> anyhow::Result<Value> {
    let mut mcp = Mcp {
        http: reqwest::Client::new(),
        url: mcp_url,
        token,
        session: None,
    };
    let initialized = mcp
        .post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                       "clientInfo": {"name": "chataigne-smoke-test",
                                      "version": env!("CARGO_PKG_VERSION")}}}))
        .await?;
    mcp.session = initialized
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let answer = rpc_answer(initialized, "initialize").await?;
    anyhow::ensure!(
        answer.get("result").is_some(),
        "initialize failed: {answer}"
    );
    let notified = mcp
        .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await?;
    anyhow::ensure!(
        notified.status().is_success(),
        "notifications/initialized answered {}",
        notified.status()
    );
    let called = mcp
        .post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}))
        .await?;
    let answer = rpc_answer(called, "tools/call").await?;
    let result = match (answer.get("result"), answer.get("error")) {
        (Some(result), _) => result,
        (None, Some(error)) => bail!("tools/call answered a JSON-RPC error: {error}"),
        (None, None) => bail!("tools/call answered neither a result nor an error: {answer}"),
    };
    let texts: Vec<&str> = result["content"]
        .as_array()
        .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect())
        .unwrap_or_default();
    if result["isError"].as_bool() == Some(true) {
        bail!("the tool failed: {}", texts.join(" "));
    }
    if let Some(envelope) = result.get("structuredContent") {
        return Ok(envelope.clone());
    }
    // The Connected Apps profile sends the envelope as the only text block.
    texts
        .first()
        .and_then(|text| serde_json::from_str(text).ok())
        .context("the result carries no envelope")
}

/// One MCP session over Streamable HTTP.
struct Mcp<'a> {
    http: reqwest::Client,
    url: &'a str,
    token: &'a str,
    session: Option<String>,
}

impl Mcp<'_> {
    async fn post(&self, message: Value) -> anyhow::Result<reqwest::Response> {
        let mut request = self
            .http
            .post(self.url)
            .bearer_auth(self.token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .json(&message);
        if let Some(id) = &self.session {
            request = request.header("mcp-session-id", id);
        }
        request.send().await.context("reaching the MCP endpoint")
    }
}

/// The JSON-RPC message of an MCP answer (plain JSON or one SSE event).
async fn rpc_answer(response: reqwest::Response, what: &str) -> anyhow::Result<Value> {
    let status = response.status();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let event_stream = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    let body = response.text().await?;
    if !status.is_success() {
        bail!(
            "{what} answered HTTP {status}{}",
            challenge
                .map(|c| format!(" ({c})"))
                .unwrap_or_else(|| format!(": {}", body.chars().take(300).collect::<String>()))
        );
    }
    let json = if event_stream {
        body.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .find(|data| data.starts_with('{'))
            .unwrap_or_default()
            .to_owned()
    } else {
        body
    };
    serde_json::from_str(&json).with_context(|| format!("{what} answered no JSON-RPC message"))
}

/// `ToolCatalog.CallTool` with the service account's token; returns the
/// envelope `{data, meta}` the gateway would have built.
async fn call_grpc(url: &str, token: &str, tool: &str, arguments: &Value) -> anyhow::Result<Value> {
    let mut client = ToolCatalogClient::connect(url.to_owned())
        .await
        .context("connecting")?;
    let mut request = tonic::Request::new(CallToolRequest {
        name: tool.to_owned(),
        arguments_json: arguments.to_string(),
        request_id: format!("smoke-{}", uuid::Uuid::new_v4().simple()),
        locale: String::new(),
    });
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}")
            .parse()
            .context("the token is not ASCII")?,
    );
    let answer = client
        .call_tool(request)
        .await
        .map_err(|status| {
            anyhow::anyhow!("the tool failed: {:?} {}", status.code(), status.message())
        })?
        .into_inner();
    let data: Value = serde_json::from_str(&answer.data_json).context("data is not JSON")?;
    Ok(json!({"data": data, "meta": {
        "next_cursor": (!answer.next_cursor.is_empty()).then_some(answer.next_cursor),
        "truncated": answer.truncated,
        "replayed": answer.replayed,
    }}))
}
