// Signs in to Chataigne with the official TypeScript SDK's OAuth client
// provider (OAuthClientProvider over StreamableHTTPClientTransport), without
// a pre-registered client, and calls one tool:
//
//   node ts_oauth_session.mjs [--clients DIR] MCP_URL EMAIL PASSWORD TOOL ARGS_JSON > report.json
//
// The SDK does the discovery (401, protected-resource metadata,
// authorization-server metadata), the dynamic client registration, PKCE and
// the token exchange. The person's part — the sign-in and consent pages — is
// played here with fetch, as a browser would: GET the authorization URL the
// SDK hands to redirectToAuthorization, post the sign-in form, post "Allow"
// on the consent page, and read the code from the page that returns to the
// client's redirect URI (never listened on: the code is handed to
// transport.finishAuth).
//
// Report: {"client_id", "scope", "redirect_uri", "consent": {"account", "lang"},
// "call": <tools/call result>}. Exit code 0 when the call returned, 1 otherwise.

import { createRequire } from 'node:module';
import { join } from 'node:path';

function clientsDir() {
  const flag = process.argv.indexOf('--clients');
  const dir = flag >= 0 ? process.argv[flag + 1] : process.env.CHATAIGNE_TEST_MCP_CLIENTS;
  if (!dir) throw new Error('where the clients are installed: --clients DIR or CHATAIGNE_TEST_MCP_CLIENTS');
  return dir;
}

function positional() {
  const out = [];
  for (let i = 2; i < process.argv.length; i += 1) {
    if (process.argv[i] === '--clients') { i += 1; continue; }
    out.push(process.argv[i]);
  }
  return out;
}

const unescape = (text) => text
  .replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<')
  .replaceAll('&gt;', '>').replaceAll('&amp;', '&');

// The hidden fields of the form `id` in `html`.
function formFields(html, id) {
  const start = html.indexOf(`id="${id}"`);
  if (start < 0) throw new Error(`no form ${id} in the page: ${html.slice(0, 2000)}`);
  const end = html.indexOf('</form>', start);
  const fields = new URLSearchParams();
  for (const match of html.slice(start, end).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields.set(match[1], unescape(match[2]));
  }
  return fields;
}

// A browser without redirects that keeps its cookies.
class Browser {
  constructor() { this.cookies = new Map(); }
  async request(url, init = {}) {
    const headers = { ...(init.headers ?? {}), cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      this.cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return { status: response.status, location: response.headers.get('location'), html: await response.text() };
  }
  post(url, fields) {
    return this.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: fields.toString(),
    });
  }
}

// The person's part: sign in and allow; returns the code and what the consent page showed.
async function signInAndAllow(authorizationUrl, email, password) {
  const browser = new Browser();
  const origin = authorizationUrl.origin;
  const signIn = await browser.request(authorizationUrl.href);
  if (signIn.status !== 200) throw new Error(`sign-in page: ${signIn.status} ${signIn.html}`);
  const login = formFields(signIn.html, 'sign-in');
  login.set('email', email);
  login.set('password', password);
  const signedIn = await browser.post(`${origin}/authorize/login`, login);
  if (signedIn.status !== 303) throw new Error(`sign-in: ${signedIn.status} ${signedIn.html}`);
  const consent = await browser.request(new URL(signedIn.location, origin).href);
  if (consent.status !== 200 || !consent.html.includes('id="approve"')) {
    throw new Error(`consent page: ${consent.status} ${consent.html}`);
  }
  const allow = formFields(consent.html, 'consent');
  allow.set('decision', 'approve');
  const back = await browser.post(`${origin}/authorize/consent`, allow);
  const href = /id="continue"[^>]* href="([^"]+)"/.exec(back.html);
  if (back.status !== 200 || !href) throw new Error(`consent: ${back.status} ${back.html}`);
  const redirect = new URL(unescape(href[1]));
  const error = redirect.searchParams.get('error');
  if (error) throw new Error(`refused: ${error} ${redirect.searchParams.get('error_description')}`);
  const account = /id="account-email">([^<]*)</.exec(consent.html)?.[1];
  const lang = /<html lang="([^"]+)"/.exec(consent.html)?.[1];
  return { code: redirect.searchParams.get('code'), consent: { account, lang } };
}

async function main() {
  const [mcpUrl, email, password, tool, argsJson] = positional();
  const require = createRequire(join(clientsDir(), 'ts-sdk', 'package.json'));
  const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const { UnauthorizedError } = require('@modelcontextprotocol/sdk/client/auth.js');

  const redirectUrl = 'http://127.0.0.1:7/callback';
  const state = {};
  const provider = {
    get redirectUrl() { return redirectUrl; },
    get clientMetadata() {
      return {
        client_name: 'TypeScript SDK sign-in test',
        redirect_uris: [redirectUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      };
    },
    clientInformation() { return state.client; },
    saveClientInformation(client) { state.client = client; },
    tokens() { return state.tokens; },
    saveTokens(tokens) { state.tokens = tokens; },
    redirectToAuthorization(url) { state.authorizationUrl = url; },
    saveCodeVerifier(verifier) { state.verifier = verifier; },
    codeVerifier() { return state.verifier; },
  };

  const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  try {
    await new Client({ name: 'chataigne-ts-oauth', version: '1.0.0' }).connect(first);
    throw new Error('connected without signing in');
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  if (!state.authorizationUrl) throw new Error('the SDK did not ask for authorization');
  const { code, consent } = await signInAndAllow(state.authorizationUrl, email, password);
  await first.finishAuth(code);

  const client = new Client({ name: 'chataigne-ts-oauth', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
  const call = await client.callTool({ name: tool, arguments: JSON.parse(argsJson) });
  await client.close();
  process.stdout.write(JSON.stringify({
    client_id: state.client?.client_id,
    scope: state.tokens?.scope,
    redirect_uri: state.authorizationUrl.searchParams.get('redirect_uri'),
    consent,
    call,
  }));
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
